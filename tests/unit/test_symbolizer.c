/* Unit tests for symbolizer/: names, inline chains (plain, C++, GCC LTO),
 * lines, demangling, .dynsym / .gnu_debuglink / build-id / container-root
 * debug info, fallback frames, kallsyms, truncated and corrupted files, and
 * a micro-benchmark (printed, not asserted).
 *
 * usage: test_symbolizer FIXTURE_BUILD_DIR FIXTURE_SOURCE_DIR */
#define _GNU_SOURCE
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "demangle.h"
#include "symbolizer.h"
#include "symbolizer_internal.h"

#define MAXF 64

static const char *fixdir, *srcdir;

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *p;
	va_start(ap, f);
	if (vasprintf(&p, f, ap) < 0)
		abort();
	va_end(ap);
	return p;
}

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Call fn for each defined function symbol of `file` (its .symtab, or its
 * .dynsym when stripped), read with libelf independently of the code under
 * test; stops when fn returns true.  The build-id goes to bid if non-NULL. */
typedef bool (*sym_fn)(void *ctx, const char *name, const GElf_Sym *s);
static void elf_syms(const char *file, sym_fn fn, void *ctx, char *bid)
{
	int fd = open(file, O_RDONLY);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	const void *bits;
	ssize_t blen = e && bid ? dwelf_elf_gnu_build_id(e, &bits) : 0;
	for (ssize_t i = 0; bid && i < blen; i++)
		sprintf(bid + 2 * i, "%02x", ((const unsigned char *)bits)[i]);
	for (int pass = 0; pass < 2 && e && fn; pass++) {
		Elf_Scn *scn = NULL;
		bool seen = false;
		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB))
				continue;
			seen = true;
			Elf_Data *d = elf_getdata(scn, NULL);
			for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym s;
				const char *n = gelf_getsym(d, (int)i, &s) ? elf_strptr(e, sh.sh_link, s.st_name) : NULL;
				if (n && s.st_shndx != SHN_UNDEF && fn(ctx, n, &s))
					goto out;
			}
		}
		if (seen)
			break;
	}
out:
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
}

struct find { const char *name; uint64_t addr, size; bool found; };

static bool find_cb(void *ctx, const char *name, const GElf_Sym *s)
{
	struct find *f = ctx;
	if (strcmp(name, f->name) != 0)
		return false;
	*f = (struct find){ f->name, s->st_value, s->st_size, true };
	return true;
}

/* Address and size of symbol `name` in fixture `file` (a path in fixdir). */
static bool fixsym(const char *file, const char *name, uint64_t *addr, uint64_t *size)
{
	char *p = fmt("%s/%s", fixdir, file);
	struct find f = { .name = name };
	elf_syms(p, find_cb, &f, NULL);
	free(p);
	*addr = f.addr;
	*size = f.size;
	return f.found;
}

/* Source line number holding marker "LINE:<tag>" in fixture source `file`. */
static uint32_t marker_line(const char *file, const char *tag)
{
	char *p = fmt("%s/%s", srcdir, file), *want = fmt("LINE:%s ", tag), buf[512];
	FILE *f = fopen(p, "r");
	uint32_t ln = 0, found = 0;
	while (f && !found && fgets(buf, sizeof(buf), f)) {
		ln++;
		buf[strcspn(buf, "\n")] = ' ';
		if (strstr(buf, want))
			found = ln;
	}
	if (f)
		fclose(f);
	if (!found)
		fprintf(stderr, "marker %s not found in %s\n", want, p);
	free(p);
	free(want);
	return found;
}

static void sh(const char *cmd)
{
	if (system(cmd) != 0)
		fprintf(stderr, "command failed: %s\n", cmd);
}

static void test_demangle(void)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "_ZN2ns6Kernel3runEi", "ns::Kernel::run(int)" },
		{ "_ZN2ns6Kernel3runEi.cold", "ns::Kernel::run(int) [clone .cold]" },
		{ "_ZN2ns6Kernel3runEi.isra.0", "ns::Kernel::run(int) [clone .isra.0]" },
		{ "_ZN2ns6Kernel3runEi.constprop.0.cold",
		  "ns::Kernel::run(int) [clone .constprop.0] [clone .cold]" },
		{ "_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = ember_demangle(cases[i].in);
		CHECK_STR(d, cases[i].out);
		free(d);
	}
	CHECK(ember_demangle("hot.cold") == NULL); /* C names are already readable */
	CHECK(ember_demangle("main") == NULL);
	CHECK(ember_demangle("_Znotvalid!!") == NULL);

	struct sym_names in;
	CHECK(sym_names_init(&in) == 0);
	const char *r1 = ember_readable_name(&in, "_ZN2ns6Kernel3runEi");
	CHECK_STR(r1, "ns::Kernel::run(int)");
	CHECK(ember_readable_name(&in, "_ZN2ns6Kernel3runEi") == r1);
	CHECK_STR(ember_readable_name(&in, "hot.cold"), "hot.cold");
	CHECK_STR(ember_readable_name(&in, "__libc_start_main@@GLIBC_2.34"), "__libc_start_main");
	char buf[64]; /* enough names to grow the readable table and its index */
	for (int i = 0; i < 20000; i++) {
		snprintf(buf, sizeof(buf), "sym_%d", i);
		ember_readable_name(&in, buf);
	}
	CHECK(ember_readable_name(&in, "sym_123") == ember_readable_name(&in, "sym_123"));
	CHECK(ember_readable_name(&in, "sym_123") == ember_strtab_cstr(in.strs, "sym_123"));
	CHECK(ember_readable_name(&in, "_ZN2ns6Kernel3runEi") == r1);
	sym_names_free(&in);
}

/* Every address of function `sym_name` (in fixture `truth`) resolves through
 * module `id` to `outer` last; the addresses inside the inlined instance give
 * exactly [inner (inlined, line between the inner_lo/inner_hi markers of
 * inner_src), outer (line = the callsite marker of src)]. */
struct inline_case {
	const char *truth, *sym_name, *outer, *inner;
	const char *src, *inner_src; /* caller's and inlined function's sources */
	const char *inner_lo, *inner_hi, *callsite, *label;
};

static void check_inline(struct ember_symbolizer *sym, uint32_t id, const struct inline_case *c)
{
	uint64_t fn, fn_sz;
	CHECK(fixsym(c->truth, c->sym_name, &fn, &fn_sz));
	const char *isrc = c->inner_src ? c->inner_src : c->src;
	uint32_t lo = marker_line(isrc, c->inner_lo), hi = marker_line(isrc, c->inner_hi);
	uint32_t callsite = marker_line(c->src, c->callsite);
	size_t inl_seen = 0, bad_outer = 0, bad_inl = 0;
	for (uint64_t pc = fn; pc < fn + fn_sz; pc++) {
		struct ember_sym_frame fr[MAXF];
		size_t n = ember_symbolize(sym, id, pc, fr, MAXF);
		if (n == 0 || strcmp(fr[n - 1].function, c->outer) != 0 || fr[n - 1].inlined ||
		    !fr[n - 1].has_symbol)
			bad_outer++;
		if (n < 2)
			continue;
		inl_seen++;
		if (n != 2 || strcmp(fr[0].function, c->inner) != 0 || !fr[0].inlined ||
		    fr[0].line < lo || fr[0].line > hi || fr[1].line != callsite ||
		    strcmp(base(fr[0].file), isrc) != 0 || strcmp(base(fr[1].file), c->src) != 0) {
			bad_inl++;
			fprintf(stderr, "%s: 0x%" PRIx64 ": %s %s:%u <- %s %s:%u\n", c->label, pc,
				fr[0].function, fr[0].file, fr[0].line, fr[1].function, fr[1].file, fr[1].line);
		}
	}
	printf("%s: %s %" PRIu64 " bytes, %zu inside inlined %s\n", c->label, c->outer, fn_sz,
	       inl_seen, c->inner);
	CHECK(inl_seen > 0); /* the fixture really has an inlined instance */
	CHECK(bad_outer == 0);
	CHECK(bad_inl == 0);
}

/* The C fixture (or a stripped copy of it) as module `id`: names, inline
 * chain, lines, cache, truncation to max, fallback for data. */
static void test_c_fixture(struct ember_symbolizer *sym, uint32_t id, const char *file,
			   const char *display, const char *label)
{
	uint64_t hot, hot_sz, fa, fa_sz, fb, fb_sz, data, data_sz;
	CHECK(fixsym("symb_fixture", "hot", &hot, &hot_sz));
	CHECK(fixsym("symb_fixture", "a", &fa, &fa_sz));
	CHECK(fixsym("symb_fixture", "b", &fb, &fb_sz));
	CHECK(fixsym("symb_fixture", "fixture_data", &data, &data_sz));
	CHECK(ember_symbolizer_add_module(sym, id, file, display, NULL, 0) == 0);
	const char *modname = base(display);

	struct ember_sym_frame fr[MAXF];
	size_t n = ember_symbolize(sym, id, hot, fr, MAXF);
	CHECK(n >= 1);
	CHECK_STR(fr[n - 1].function, "hot");
	CHECK(fr[n - 1].has_symbol && !fr[n - 1].inlined);
	CHECK_STR(fr[n - 1].module, modname);
	CHECK_STR(base(fr[n - 1].file), "symb_fixture.c");
	CHECK(fr[n - 1].line >= marker_line("symb_fixture.c", "hot_begin") &&
	      fr[n - 1].line <= marker_line("symb_fixture.c", "hot_end"));
	n = ember_symbolize(sym, id, fa + fa_sz - 1, fr, MAXF);
	CHECK(n >= 1 && strcmp(fr[n - 1].function, "a") == 0);
	CHECK(fr[n - 1].line >= marker_line("symb_fixture.c", "a_begin") &&
	      fr[n - 1].line <= marker_line("symb_fixture.c", "a_end"));
	n = ember_symbolize(sym, id, fb, fr, MAXF);
	CHECK(n >= 1 && strcmp(fr[n - 1].function, "b") == 0);

	struct inline_case ic = {
		.truth = "symb_fixture", .sym_name = "hot", .outer = "hot", .inner = "mix_inline",
		.src = "symb_fixture.c", .inner_lo = "mix_begin", .inner_hi = "mix_end",
		.callsite = "callsite", .label = label,
	};
	check_inline(sym, id, &ic);

	/* Cached results are the same strings; max 1 keeps the function. */
	for (uint64_t pc = hot; pc < hot + hot_sz; pc++) {
		n = ember_symbolize(sym, id, pc, fr, MAXF);
		if (n < 2)
			continue;
		struct ember_sym_frame again[MAXF], one;
		CHECK(ember_symbolize(sym, id, pc, again, MAXF) == n);
		CHECK(again[0].function == fr[0].function && again[0].file == fr[0].file);
		CHECK(ember_symbolize(sym, id, pc, &one, 1) == 1);
		CHECK_STR(one.function, "hot");
		CHECK(ember_symbolize(sym, id, pc, &one, 0) == 0);
		break;
	}

	/* A data object is in no function. */
	char *want = fmt("[%s+0x%" PRIx64 "]", modname, data);
	CHECK(ember_symbolize(sym, id, data, fr, MAXF) == 1);
	CHECK_STR(fr[0].function, want);
	CHECK(!fr[0].has_symbol);
	CHECK_STR(fr[0].module, modname);
	CHECK_STR(fr[0].file, "");
	free(want);
}

/* binutils addr2line -i agrees with us on names and lines for every byte of
 * function `fn` of fixture `file` (module `id`). */
static void test_against_addr2line(struct ember_symbolizer *sym, uint32_t id, const char *file,
				   const char *fn)
{
	uint64_t lo, size;
	if (!fixsym(file, fn, &lo, &size) || access("/usr/bin/addr2line", X_OK) != 0) {
		printf("addr2line comparison skipped\n");
		return;
	}
	size_t cap = 64 + size * 20, len;
	char *cmd = malloc(cap);
	len = (size_t)snprintf(cmd, cap, "/usr/bin/addr2line -a -f -i -e '%s/%s'", fixdir, file);
	for (uint64_t pc = lo; pc < lo + size; pc++)
		len += (size_t)snprintf(cmd + len, cap - len, " 0x%" PRIx64, pc);
	FILE *p = popen(cmd, "r");
	free(cmd);
	/* Output: "0x<addr>", then "function" and "file:line" per frame. */
	char line[1024], fnname[256] = "";
	struct ember_sym_frame fr[MAXF];
	size_t n = 0, at = 0, compared = 0, differ = 0;
	bool ok = true, fn_next = false;
	while (p && fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "0x", 2) == 0) {
			if (compared++)
				differ += !ok || at != n;
			n = ember_symbolize(sym, id, strtoull(line, NULL, 16), fr, MAXF);
			at = 0;
			ok = true;
			fn_next = true;
		} else if (fn_next) {
			snprintf(fnname, sizeof(fnname), "%.255s", line);
			fn_next = false;
		} else {
			const char *c = strrchr(line, ':');
			ok = ok && at < n && strcmp(fr[at].function, fnname) == 0 && c &&
			     fr[at].line == strtoul(c + 1, NULL, 10);
			at++;
			fn_next = true;
		}
	}
	if (compared)
		differ += !ok || at != n;
	if (p)
		pclose(p);
	printf("addr2line comparison %s: %zu addresses, %zu differ\n", file, compared, differ);
	CHECK(compared == size);
	CHECK(differ == 0);
}

static void test_cxx_and_lto(struct ember_symbolizer *sym, uint32_t id)
{
	char *cxx = fmt("%s/symb_fixture_cxx", fixdir), *lto = fmt("%s/symb_lto", fixdir);
	CHECK(ember_symbolizer_add_module(sym, id, cxx, cxx, NULL, 0) == 0);
	struct inline_case c = {
		.truth = "symb_fixture_cxx", .sym_name = "_ZN2ns6Kernel3runEi",
		.outer = "ns::Kernel::run(int)", .inner = "ns::Kernel::step(int)",
		.src = "symb_fixture_cxx.cc", .inner_lo = "step_begin", .inner_hi = "step_end",
		.callsite = "cxx_callsite", .label = "c++",
	};
	check_inline(sym, id, &c);
	/* GCC LTO: the inlined function's abstract origin is in another CU. */
	CHECK(ember_symbolizer_add_module(sym, id + 1, lto, lto, NULL, 0) == 0);
	struct inline_case l = {
		.truth = "symb_lto", .sym_name = "lto_hot", .outer = "lto_hot", .inner = "lto_helper",
		.src = "symb_lto_main.c", .inner_src = "symb_lto_helper.c",
		.inner_lo = "lto_helper_begin", .inner_hi = "lto_helper_end",
		.callsite = "lto_callsite", .label = "lto",
	};
	check_inline(sym, id + 1, &l);
	test_against_addr2line(sym, id + 1, "symb_lto", "lto_hot");
	free(cxx);
	free(lto);
}

/* Only .dynsym left: the exported function resolves, the local one falls back. */
static void test_stripped_lib(struct ember_symbolizer *sym, uint32_t id)
{
	uint64_t exp, exp_sz, loc, loc_sz, x, xs;
	CHECK(fixsym("libsymbfix.so", "symbfix_exported", &exp, &exp_sz));
	CHECK(fixsym("libsymbfix.so", "symbfix_local", &loc, &loc_sz));
	CHECK(!fixsym("libsymbfix_stripped.so", "symbfix_local", &x, &xs)); /* really stripped */
	char *stripped = fmt("%s/libsymbfix_stripped.so", fixdir);
	CHECK(ember_symbolizer_add_module(sym, id, stripped, "/opt/lib/libsymbfix.so", NULL, 0) == 0);
	struct ember_sym_frame fr[MAXF];
	CHECK(ember_symbolize(sym, id, exp + exp_sz / 2, fr, MAXF) == 1);
	CHECK_STR(fr[0].function, "symbfix_exported");
	CHECK(fr[0].has_symbol);
	CHECK_STR(fr[0].module, "libsymbfix.so"); /* from display_path */
	CHECK_STR(fr[0].file, "");
	CHECK(fr[0].line == 0);
	char *want = fmt("[libsymbfix.so+0x%" PRIx64 "]", loc + 1);
	CHECK(ember_symbolize(sym, id, loc + 1, fr, MAXF) == 1);
	CHECK_STR(fr[0].function, want);
	CHECK(!fr[0].has_symbol);
	free(want);
	free(stripped);
}

/* Separate debug info: next to the file by .gnu_debuglink; and for a target
 * in another mount namespace (open_path "<root><display_path>") inside
 * <root>/usr/lib/debug, by build-id and by debuglink name. */
static void test_debug_files(struct ember_symbolizer *sym, uint32_t id)
{
	uint64_t x, xs;
	CHECK(fixsym("symb_fixture_dl", "hot", &x, &xs));      /* strip -g keeps .symtab */
	CHECK(!fixsym("symb_fixture_dl_all", "hot", &x, &xs)); /* only .dynsym */
	char *dl = fmt("%s/symb_fixture_dl", fixdir), *dl_all = fmt("%s/symb_fixture_dl_all", fixdir);
	test_c_fixture(sym, id, dl, dl, "debuglink");
	test_c_fixture(sym, id + 1, dl_all, dl_all, "debuglink-strip-all");
	free(dl);
	free(dl_all);

	char bid[130] = "";
	char *dbg = fmt("%s/symb_fixture.debug", fixdir);
	elf_syms(dbg, NULL, NULL, bid);
	CHECK(strlen(bid) > 2);
	char *r1 = fmt("%s/root-build-id", fixdir), *r2 = fmt("%s/root-debuglink", fixdir);
	char *cmd = fmt("rm -rf '%s' '%s' && mkdir -p '%s/opt' '%s/usr/lib/debug/.build-id/%.2s' "
			"'%s/opt' '%s/usr/lib/debug/opt' && cp '%s/symb_fixture_nodl' '%s/opt/' && "
			"cp '%s' '%s/usr/lib/debug/.build-id/%.2s/%s.debug' && "
			"cp '%s/symb_fixture_dl_all' '%s/opt/' && cp '%s' '%s/usr/lib/debug/opt/'",
			r1, r2, r1, r1, bid, r2, r2, fixdir, r1, dbg, r1, bid, bid + 2, fixdir, r2, dbg, r2);
	sh(cmd);
	char *o1 = fmt("%s/opt/symb_fixture_nodl", r1), *o2 = fmt("%s/opt/symb_fixture_dl_all", r2);
	test_c_fixture(sym, id + 2, o1, "/opt/symb_fixture_nodl", "root-build-id");
	test_c_fixture(sym, id + 3, o2, "/opt/symb_fixture_dl_all", "root-debuglink");
	free(cmd);
	free(o1);
	free(o2);
	free(r1);
	free(r2);
	free(dbg);
}

static void test_fallbacks(struct ember_symbolizer *sym, uint32_t id)
{
	struct ember_sym_frame fr[4];
	CHECK(ember_symbolize(sym, 4000, 0x1234, fr, 4) == 1);
	CHECK_STR(fr[0].function, "[unknown+0x1234]");
	CHECK(!fr[0].has_symbol);
	CHECK(ember_symbolizer_add_module(sym, id, "/nonexistent/libgone.so.1", "/usr/lib/libgone.so.1", NULL, 0) == 0);
	CHECK(ember_symbolize(sym, id, 0xabc, fr, 4) == 1);
	CHECK_STR(fr[0].function, "[libgone.so.1+0xabc]");
	CHECK_STR(fr[0].module, "libgone.so.1");
	CHECK(ember_symbolizer_add_module(sym, id + 1, "/nonexistent/vdso.so", "[vdso]", NULL, 0) == 0);
	CHECK(ember_symbolize(sym, id + 1, 0x10, fr, 4) == 1);
	CHECK_STR(fr[0].function, "[vdso+0x10]");
	CHECK_STR(fr[0].module, "[vdso]");
	CHECK(ember_symbolizer_add_module(sym, 1u << 30, "/x", "/x", NULL, 0) == -1);

	/* Build-id mismatch: a file replaced on disk must not lend its names;
	 * re-declaring the id without a build-id drops the cached fallback. */
	char *fix = fmt("%s/symb_fixture", fixdir);
	uint64_t hot, hot_sz;
	CHECK(fixsym("symb_fixture", "hot", &hot, &hot_sz));
	uint8_t wrong[20] = { 1, 2, 3 };
	CHECK(ember_symbolizer_add_module(sym, id + 2, fix, fix, wrong, sizeof(wrong)) == 0);
	CHECK(ember_symbolize(sym, id + 2, hot, fr, 4) == 1 && !fr[0].has_symbol);
	CHECK(ember_symbolizer_add_module(sym, id + 2, fix, fix, NULL, 0) == 0);
	size_t n = ember_symbolize(sym, id + 2, hot, fr, 4);
	CHECK(n >= 1 && fr[n - 1].has_symbol);
	CHECK_STR(fr[n - 1].function, "hot");
	free(fix);
}

/* Our own vdso, dumped to a file as the sampler would do. */
static void test_vdso(struct ember_symbolizer *sym, uint32_t id)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo = 0, hi = 0;
	while (maps && !lo && fgets(line, sizeof(line), maps))
		if (!strstr(line, "[vdso]") || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			lo = 0;
	if (maps)
		fclose(maps);
	char *out = fmt("%s/vdso.dump", fixdir);
	FILE *f = lo ? fopen(out, "w") : NULL;
	CHECK(!lo || (f && fwrite((void *)lo, 1, hi - lo, f) == hi - lo));
	if (f)
		fclose(f);
	uint64_t addr, size;
	if (!lo || !fixsym("vdso.dump", "__vdso_clock_gettime", &addr, &size)) {
		printf("vdso test skipped\n");
		free(out);
		return;
	}
	CHECK(ember_symbolizer_add_module(sym, id, out, "[vdso]", NULL, 0) == 0);
	struct ember_sym_frame fr[MAXF];
	size_t n = ember_symbolize(sym, id, addr + 2, fr, MAXF);
	CHECK(n >= 1 && strstr(fr[n - 1].function, "clock_gettime") != NULL);
	CHECK_STR(fr[n - 1].module, "[vdso]");
	free(out);
}

static void kernel_case(const char *table, uint64_t addr, const char *want)
{
	struct ember_symbolizer *s = ember_symbolizer_new();
	struct ember_sym_frame fr;
	CHECK(ember_symbolizer_set_kallsyms_path(s, table) == 0);
	CHECK(ember_symbolize_kernel(s, addr, &fr, 1) == 1);
	CHECK_STR(fr.function, want);
	CHECK(fr.has_symbol == (want[0] != '['));
	CHECK_STR(fr.module, "[kernel.kallsyms]");
	ember_symbolizer_free(s);
}

static void test_kallsyms(struct ember_symbolizer *sym)
{
	/* The real table: some answer, no crash. */
	struct ember_sym_frame fr;
	CHECK(ember_symbolize_kernel(sym, 0xffffffff81000010ull, &fr, 1) == 1);
	CHECK(fr.function && fr.function[0]);
	CHECK_STR(fr.module, "[kernel.kallsyms]");
	printf("kernel 0xffffffff81000010 -> %s\n", fr.function);

	char *hidden = fmt("%s/kallsyms.hidden", fixdir), *fake = fmt("%s/kallsyms.fake", fixdir);
	FILE *f = fopen(hidden, "w");
	fputs("0000000000000000 T _stext\n0000000000000000 t foo\t[mod]\n", f);
	fclose(f);
	f = fopen(fake, "w");
	fputs("ffffffff81000000 T __alias\nffffffff81000000 T _stext\n"
	      "ffffffff81000100 D some_data\nffffffff81000200 t local_fn\t[mymod]\n"
	      "ffffffff81000300 W weak_fn\nbogus line\n\nffffffff81000400 T last_fn\n", f);
	fclose(f);
	kernel_case(hidden, 0xffffffff81000010ull, "[kernel+0xffffffff81000010]");
	kernel_case("/nonexistent/kallsyms", 0xffffffff81000000ull, "[kernel+0xffffffff81000000]");
	kernel_case(fake, 0xffffffff81000000ull, "_stext"); /* fewer underscores wins */
	kernel_case(fake, 0xffffffff81000150ull, "_stext"); /* data symbols skipped */
	kernel_case(fake, 0xffffffff81000201ull, "local_fn");
	kernel_case(fake, 0xffffffff81000300ull, "weak_fn");
	kernel_case(fake, 0xffffffff81000410ull, "last_fn");
	kernel_case(fake, 0xffffffff80000000ull, "[kernel+0xffffffff80000000]");
	kernel_case(fake, 0xffffffff91000000ull, "[kernel+0xffffffff91000000]"); /* too far */
	unlink(hidden);
	unlink(fake);
	free(hidden);
	free(fake);
}

/* Truncated and corrupted copies of the C fixture: never crash or hang, and
 * always answer with at least one frame. */
static void test_corrupt(void)
{
	uint64_t hot, hot_sz;
	CHECK(fixsym("symb_fixture", "hot", &hot, &hot_sz));
	char *fix = fmt("%s/symb_fixture", fixdir);
	FILE *f = fopen(fix, "rb");
	free(fix);
	CHECK(f != NULL);
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	rewind(f);
	unsigned char *img = malloc((size_t)size), *copy = malloc((size_t)size);
	CHECK(fread(img, 1, (size_t)size, f) == (size_t)size);
	fclose(f);
	struct ember_symbolizer *sym = ember_symbolizer_new();
	size_t answered = 0, tried = 0;
	for (uint32_t v = 0; v < 48; v++) {
		static const long fixed[] = { 0, 1, 16, 63, 64, 100, 1000, 4096 };
		long len = v < 8 ? fixed[v] : v < 24 ? size * (v - 7) / 17 : size;
		memcpy(copy, img, (size_t)size);
		/* Variants 24..47 flip 256 bytes in one sixteenth of the file,
		 * sliding along it (deterministic LCG). */
		uint32_t x = 12345u + v * 7919u;
		long from = size * (v - 24) / 24, span = size / 16 + 1;
		for (int i = 0; v >= 24 && i < 256; i++) {
			x = x * 1103515245u + 12345u;
			long pos = from + (long)((x >> 8) % (uint32_t)span);
			copy[pos < size ? pos : size - 1] ^= (unsigned char)(x >> 24) | 1;
		}
		/* A fresh name per variant: nothing may be cached by path. */
		char *name = fmt("%s/corrupt.%u", fixdir, v);
		FILE *o = fopen(name, "wb");
		fwrite(copy, 1, (size_t)len, o);
		fclose(o);
		CHECK(ember_symbolizer_add_module(sym, v, name, name, NULL, 0) == 0);
		for (uint64_t pc = hot; pc < hot + hot_sz; pc += 3) {
			struct ember_sym_frame fr[MAXF];
			size_t n = ember_symbolize(sym, v, pc, fr, MAXF);
			tried++;
			answered += n >= 1 && fr[n - 1].function && fr[n - 1].module && fr[n - 1].file;
		}
		unlink(name);
		free(name);
	}
	printf("corrupt copies: %zu lookups, %zu answered\n", tried, answered);
	CHECK(answered == tried);
	ember_symbolizer_free(sym);
	free(img);
	free(copy);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct addrs { uint64_t v[4000]; size_t n; };

static bool addrs_cb(void *ctx, const char *name, const GElf_Sym *s)
{
	struct addrs *a = ctx;
	(void)name;
	if (GELF_ST_TYPE(s->st_info) == STT_FUNC && s->st_size)
		a->v[a->n++] = s->st_value + s->st_size / 2;
	return a->n == sizeof(a->v) / sizeof(a->v[0]);
}

/* Cold (first lookup of each address) and warm (cached) cost, function
 * midpoints from the file's own symbol table. */
static void bench(const char *file, const char *label)
{
	static struct addrs a;
	a.n = 0;
	elf_syms(file, addrs_cb, &a, NULL);
	if (a.n < 2) {
		printf("bench %s: no symbols, skipped\n", label);
		return;
	}
	struct ember_symbolizer *sym = ember_symbolizer_new();
	ember_symbolizer_add_module(sym, 0, file, file, NULL, 0);
	struct ember_sym_frame fr[MAXF];
	size_t named = 0;
	double t0 = now_s();
	ember_symbolize(sym, 0, a.v[0], fr, MAXF); /* opens the module */
	double t1 = now_s();
	for (size_t i = 1; i < a.n; i++) {
		size_t k = ember_symbolize(sym, 0, a.v[i], fr, MAXF);
		named += k && fr[k - 1].has_symbol;
	}
	double t2 = now_s();
	enum { PASSES = 20 };
	for (int p = 0; p < PASSES; p++)
		for (size_t i = 0; i < a.n; i++)
			ember_symbolize(sym, 0, a.v[i], fr, MAXF);
	double t3 = now_s();
	printf("bench %s: open+first %.1f ms, cold %.2f us/lookup (%zu addrs, %zu named), "
	       "warm %.1f ns/lookup\n", label, (t1 - t0) * 1e3, (t2 - t1) * 1e6 / (double)(a.n - 1),
	       a.n - 1, named, (t3 - t2) * 1e9 / (double)(a.n * PASSES));
	ember_symbolizer_free(sym);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s FIXTURE_BUILD_DIR FIXTURE_SOURCE_DIR\n", argv[0]);
		return 2;
	}
	fixdir = argv[1];
	srcdir = argv[2];
	elf_version(EV_CURRENT);

	test_demangle();
	struct ember_symbolizer *sym = ember_symbolizer_new();
	CHECK(sym != NULL);
	char *fix = fmt("%s/symb_fixture", fixdir);
	test_c_fixture(sym, 0, fix, fix, "plain");
	test_against_addr2line(sym, 0, "symb_fixture", "hot");
	char *noar = fmt("%s/symb_fixture_noaranges", fixdir);
	test_c_fixture(sym, 12, noar, noar, "no-aranges"); /* as clang emits */
	free(noar);
	test_cxx_and_lto(sym, 1);  /* ids 1, 2 */
	test_stripped_lib(sym, 3);
	test_debug_files(sym, 4);  /* ids 4..7 */
	test_fallbacks(sym, 8);    /* ids 8..10 */
	test_vdso(sym, 11);
	test_kallsyms(sym);
	ember_symbolizer_free(sym);
	test_corrupt();

	bench(fix, "fixture (DWARF)");
	free(fix);
	/* libc as mapped into this test: has DWARF when libc6-dbg is installed. */
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512], *libc = NULL;
	while (maps && !libc && fgets(line, sizeof(line), maps)) {
		char *p = strchr(line, '/');
		if (p && strstr(p, "/libc.so.6")) {
			p[strcspn(p, "\n")] = '\0';
			libc = strdup(p);
		}
	}
	if (maps)
		fclose(maps);
	if (libc)
		bench(libc, "libc.so.6");
	free(libc);
	if (access("/usr/bin/python3.11", R_OK) == 0)
		bench("/usr/bin/python3.11", "python3.11");
	else
		printf("bench python3.11: not installed\n");
	return check_report();
}
