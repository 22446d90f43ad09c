/* Sorted function-symbol table per module.
 *
 * dwfl_module_addrinfo scans the whole symbol table on every call (about
 * 1 ms per lookup on python3.11's 41.7 k symbols: docs/symbolization.md), so
 * we read the table once through dwfl_module_getsym_info -- which picks
 * .symtab from the file or its separate debug file and falls back to .dynsym
 * for stripped files, joined by the MiniDebugInfo of .gnu_debugdata when the
 * file has one (libdw built with lzma, as Debian's is) -- keep the functions,
 * sort them and binary-search. */
#include <stdlib.h>
#include <string.h>

#include <gelf.h>

#include "sorted.h"
#include "sym_search.h"
#include "symtab.h"

struct cand {
	uint64_t addr, size, limit; /* limit: end of the containing section */
	const char *name;
	int rank;                   /* lower is preferred among aliases */
};

/* How many entries before the match we re-check for a symbol that encloses
 * the address (a sized function containing a nested function symbol). */
#define NEST_LOOKBACK 16

static int bind_rank(unsigned char info)
{
	switch (GELF_ST_BIND(info)) {
	case STB_GLOBAL: return 0;
	case STB_WEAK: return 1;
	case STB_LOCAL: return 2;
	default: return 3;
	}
}

/* Sort by address; at one address put the alias we want to show first: a
 * sized one, not a compatibility version ("memcpy" over "memcpy@GLIBC_2.2.5"), global before
 * weak before local, fewer leading underscores ("malloc" over
 * "__libc_malloc"), then by name so the choice is stable. */
static int cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if ((a->size == 0) != (b->size == 0))
		return a->size == 0 ? 1 : -1;
	/* Only a non-default version ("memcpy@GLIBC_2.2.5", a compatibility
	 * symbol) is a worse name; a default one ("__libc_start_main@@GLIBC_2.34")
	 * is the public name and prints without its version. */
	const char *ata = strchr(a->name, '@'), *atb = strchr(b->name, '@');
	bool va = ata && ata[1] != '@', vb = atb && atb[1] != '@';
	if (va != vb)
		return va ? 1 : -1;
	if (a->rank != b->rank)
		return a->rank - b->rank;
	size_t ua = sym_underscores(a->name), ub = sym_underscores(b->name);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* End of the allocated section holding symbol section `shndx`, in module
 * addresses; `fallback` when it cannot be told. */
static uint64_t section_limit(Elf *elf, GElf_Word shndx, Dwarf_Addr bias, uint64_t fallback)
{
	if (!elf || shndx == SHN_ABS || shndx == SHN_COMMON)
		return fallback;
	Elf_Scn *scn = elf_getscn(elf, shndx);
	GElf_Shdr shdr;
	if (!scn || !gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_ALLOC))
		return fallback;
	uint64_t end = shdr.sh_addr + shdr.sh_size + bias;
	return end > shdr.sh_addr ? end : fallback;
}

int symtab_build(struct symtab *t, Dwfl_Module *mod)
{
	memset(t, 0, sizeof(*t));
	int n = dwfl_module_getsymtab(mod);
	if (n <= 0)
		return 0; /* no symbols at all: every lookup falls back */

	Dwarf_Addr low = 0, high = 0;
	dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, NULL, NULL);

	struct cand *c = malloc((size_t)n * sizeof(*c));
	if (!c)
		return -1;
	size_t nc = 0;
	for (int i = 0; i < n; i++) {
		GElf_Sym s;
		GElf_Addr addr;
		GElf_Word shndx = SHN_UNDEF;
		Elf *elf = NULL;
		Dwarf_Addr bias = 0;
		const char *name = dwfl_module_getsym_info(mod, i, &s, &addr, &shndx, &elf, &bias);
		if (!name || !name[0])
			continue;
		int type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		/* Undefined imports and symbols in non-allocated sections
		 * (shndx reported as -1) have no code in this module. */
		if (shndx == SHN_UNDEF || shndx == (GElf_Word)-1)
			continue;
		c[nc++] = (struct cand){
			.addr = addr,
			.size = s.st_size,
			.limit = section_limit(elf, shndx, bias, high),
			.name = name,
			.rank = bind_rank(s.st_info),
		};
	}
	if (nc == 0) {
		free(c);
		return 0;
	}
	qsort(c, nc, sizeof(*c), cand_cmp);

	struct sym_entry *v = malloc(nc * sizeof(*v));
	if (!v) {
		free(c);
		return -1;
	}
	size_t nv = 0;
	for (size_t i = 0; i < nc;) {
		size_t j = i;
		uint64_t end = 0;
		/* Aliases at one address: the first is the name, the widest
		 * size wins. */
		for (; j < nc && c[j].addr == c[i].addr; j++) {
			uint64_t e = c[j].addr + c[j].size;
			if (c[j].size && e > c[j].addr && e > end)
				end = e;
		}
		if (end == 0) {
			/* Size 0 (hand-written assembly, some vdso and stripped
			 * symbols): assume it runs to the next symbol, but not
			 * past the end of its section. */
			end = c[i].limit;
			if (j < nc && c[j].addr < end)
				end = c[j].addr;
			if (end <= c[i].addr)
				end = c[i].addr + 1;
		}
		v[nv++] = (struct sym_entry){ .addr = c[i].addr, .end = end, .raw = c[i].name };
		i = j;
	}
	free(c);
	t->v = v;
	t->n = nv;
	return 0;
}

struct sym_entry *symtab_find(const struct symtab *t, uint64_t addr)
{
	size_t after = ember_upper_bound(t->v, t->n, sizeof(*t->v), 8, addr);
	if (after == 0)
		return NULL;
	size_t lo = after - 1;  /* the last entry starting at or below addr */
	for (size_t k = 0; k <= NEST_LOOKBACK && k <= lo; k++) {
		struct sym_entry *e = &t->v[lo - k];
		if (addr < e->end)
			return e;
	}
	return NULL;
}

void symtab_free(struct symtab *t)
{
	free(t->v);
	t->v = NULL;
	t->n = 0;
}
