/* Finding a function's .cold part without symbols (python-stacks/check/eval_cold.c),
 * checked against the truth where the truth is known: the symbol table of the
 * binary's debug file (Debian's python3 with python3.11-dbg: ~3,000 functions
 * with a .cold part, the eval loop among them).
 *
 * usage: test_python_cold BINARY
 * The scan reads only the stripped binary's bytes and .eh_frame; libdwfl
 * (which finds the debug file by build-id or .gnu_debuglink) supplies the
 * symbols it is compared with.  Exit 77 when there are no .cold symbols. */
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "elf_view.h"
#include "py_check.h"

struct sym {
	const char *name;
	uint64_t lo, hi;
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct sym *)a)->name, ((const struct sym *)b)->name);
}

static const struct sym *find(const struct sym *v, size_t n, const char *name)
{
	struct sym key = { .name = name };
	return bsearch(&key, v, n, sizeof *v, cmp_name);
}

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: %s BINARY [ROOT]\n", argv[0]);
		return 2;
	}
	char path[PATH_MAX];
	if (!realpath(argv[1], path)) {
		printf("SKIP: %s not installed\n", argv[1]);
		return 77;
	}
	/* ROOT: the root file system the binary belongs to, whose usr/lib/debug
	 * holds its debug file (Debian sid's 3.14 and 3.15). */
	const char *root = argc > 2 ? argv[2] : NULL;
	struct py_dwfl d;
	py_dwfl_open(&d, path, root);
	Dwfl_Module *mod = d.mod;
	CHECK(mod != NULL);
	struct ember_elf elf;
	CHECK(ember_elf_open(&elf, path) == 0);
	Dwarf_Addr bias;
	dwfl_module_getdwarf(mod, &bias);   /* loads the debug file and its symbol table */
	int nsyms = mod ? dwfl_module_getsymtab(mod) : 0;
	struct sym *v = calloc(nsyms > 0 ? (size_t)nsyms : 1, sizeof *v);
	size_t n = 0, ncold = 0;
	for (int i = 0; i < nsyms; i++) {
		GElf_Sym s;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(mod, i, &s, &addr, NULL, NULL, NULL);
		if (!name || GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_size)
			continue;
		v[n++] = (struct sym){ .name = name, .lo = addr, .hi = addr + s.st_size };
		size_t len = strlen(name);
		ncold += len > 5 && strcmp(name + len - 5, ".cold") == 0;
	}
	if (!ncold) {
		printf("SKIP: %s: no .cold symbols (no debug file with a symbol table?)\n", path);
		py_dwfl_close(&d);
		free(v);
		return 77;
	}
	qsort(v, n, sizeof *v, cmp_name);

	/* Every function with a .cold part: a range found must start exactly at
	 * it and never run past it (a last block after the last jump target may
	 * be missed: the rows after it are not known to belong to it). */
	size_t pairs = 0, found = 0, exact = 0, overshoot = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(v[i].name);
		if (len <= 5 || strcmp(v[i].name + len - 5, ".cold") != 0)
			continue;
		char hot[512];
		snprintf(hot, sizeof hot, "%.*s", (int)(len - 5), v[i].name);
		const struct sym *h = find(v, n, hot);
		if (!h)
			continue;
		pairs++;
		uint64_t lo, hi;
		if (!py_find_cold_part(mod, &elf, h->lo, h->hi, &lo, &hi))
			continue;
		found++;
		exact += lo == v[i].lo && hi == v[i].hi;
		if (lo != v[i].lo || hi > v[i].hi || hi <= lo) {
			overshoot++;
			printf("wrong: %s [%#lx, %#lx) found as [%#lx, %#lx)\n", v[i].name, (unsigned long)v[i].lo,
			       (unsigned long)v[i].hi, (unsigned long)lo, (unsigned long)hi);
		}
	}
	printf("%s: %zu functions with a .cold part; found %zu, exact %zu, wrong %zu\n", path, pairs, found, exact,
	       overshoot);
	CHECK(overshoot == 0);
	CHECK(pairs < 100 || exact * 10 >= pairs);   /* most small ones get too few jumps to tell */

	/* The eval loop's, exactly: a sample there is a Python activation. */
	const char *evals[] = { "_PyEval_EvalFrameDefault", "PyEval_EvalFrameEx" };
	for (size_t k = 0; k < 2; k++) {
		char cold[64];
		snprintf(cold, sizeof cold, "%s.cold", evals[k]);
		const struct sym *h = find(v, n, evals[k]), *c = find(v, n, cold);
		if (!h || !c || c->hi - c->lo < 64)
			continue;
		uint64_t lo = 0, hi = 0;
		bool ok = py_cold_part_of(path, root, h->lo, h->hi, &lo, &hi);
		printf("%s: [%#lx, %#lx), found %d [%#lx, %#lx)\n", cold, (unsigned long)c->lo, (unsigned long)c->hi, ok,
		       (unsigned long)lo, (unsigned long)hi);
		CHECK(ok && lo == c->lo && hi == c->hi);
	}
	py_dwfl_close(&d);
	ember_elf_close(&elf);
	free(v);
	return check_report();
}
