/* Private interfaces between the symbolizer's source files (and its unit
 * test).  Nothing here is part of the public contract in symbolizer.h. */
#ifndef EMBER_SYMBOLIZER_INTERNAL_H
#define EMBER_SYMBOLIZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <string.h>

#include <elfutils/libdwfl.h>

#include "grow.h"
#include "hash.h"
#include "idtab.h"
#include "strtab.h"
#include "symbolizer.h"

/* ---- demangle.c: names and demangling ----------------------------------- */

/* Every string handed out by the symbolizer is interned in strs, so it
 * outlives the Dwfl it came from (a module can be re-declared and its Dwfl
 * dropped) and equal names share one pointer.  Beside it, each raw symbol
 * name asked for remembers its readable (demangled) form, so a symbol is
 * demangled once however many addresses or modules name it. */
struct sym_readable {
	const char *raw;       /* interned in strs */
	const char *readable;  /* interned in strs */
};

struct sym_names {
	struct ember_strtab *strs;
	struct ember_idtab index;       /* interned raw name -> its entry in readable[] */
	struct sym_readable *readable;
	size_t nreadable, readable_cap;
};

/* 0, or -1 on OOM (n is then empty and may be freed). */
int sym_names_init(struct sym_names *n);
void sym_names_free(struct sym_names *n);
/* The demangled form of raw symbol name `raw`, interned; raw itself (interned)
 * when it is not a mangled name.  A symbol version ("@@GLIBC_2.34") is
 * dropped first.  NULL only on OOM. */
const char *ember_readable_name(struct sym_names *n, const char *raw);
/* Demangle one name: malloc'ed readable string, or NULL when `raw` is not a
 * mangled C++/Rust name (or demangling failed).  Exposed for the tests. */
char *ember_demangle(const char *raw);

/* ---- sorted address tables ----------------------------------------------- */

/* Entries of v[0..n), each `size` bytes and starting with a uint64_t key,
 * sorted by that key: the number of entries whose key is <= key, i.e. the
 * index just past the last entry at or below key.  One binary search for the
 * symbol tables, kallsyms, CU ranges and JIT entries. */
static inline size_t sym_upper_bound(const void *v, size_t n, size_t size, uint64_t key)
{
	const unsigned char *b = v;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;
		memcpy(&k, b + mid * size, sizeof k);
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Leading underscores of a symbol name: among aliases at one address the
 * one with fewer reads better ("malloc" over "__libc_malloc"). */
static inline size_t sym_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* ---- symtab.c: sorted function table per module ------------------------- */

struct sym_entry {
	uint64_t addr, end;   /* [addr, end) in the module's ELF address space */
	const char *raw;      /* points into the module's libelf data */
	const char *readable; /* interned demangled name, filled on first hit */
};

struct symtab {
	struct sym_entry *v;
	size_t n;
};

/* Build the table from dwfl_module_getsymtab (.symtab of the file or its
 * debug file, else .dynsym).  A module without symbols gives n == 0.
 * Returns 0, or -1 on OOM. */
int symtab_build(struct symtab *t, Dwfl_Module *mod);
struct sym_entry *symtab_find(const struct symtab *t, uint64_t addr);
void symtab_free(struct symtab *t);

/* ---- inline_chain.c: DWARF frames for one address ----------------------- */

/* Longest inline chain kept; deeper chains keep their innermost frames and
 * the containing function. */
#define EMBER_MAX_INLINE 32

/* One level of the chain as found in the DWARF.  Strings point into the
 * module's Dwarf data (valid while its Dwfl lives); the caller interns them. */
struct dw_frame {
	const char *name;     /* linkage name (mangled) or DW_AT_name; NULL if none */
	const char *file;     /* NULL when unknown */
	uint32_t line;
	bool inlined;
};

/* Address ranges of every CU, for files without .debug_aranges (clang and
 * LLVM-based compilers do not emit it by default, and libdw 0.188's address
 * lookups then find no CU at all).  Built on the first miss. */
struct cu_range {
	uint64_t lo, hi;  /* [lo, hi) in module addresses */
	uint64_t die_off; /* CU DIE offset in .debug_info */
};

struct cu_index {
	bool built;
	struct cu_range *v;
	size_t n;
};

void cu_index_free(struct cu_index *ci);

/* Fill out[] innermost first: one frame per DW_TAG_inlined_subroutine that
 * contains addr, then the containing DW_TAG_subprogram (whose name may be
 * NULL when the DWARF has no subprogram for addr; file/line still come from
 * the line table).  Returns the number of frames, 0 when the module has no
 * DWARF for addr. */
size_t dw_inline_chain(struct cu_index *ci, Dwfl_Module *mod, uint64_t addr,
		       struct dw_frame *out, size_t max);

/* ---- kallsyms.c ---------------------------------------------------------- */

struct ksym {
	uint64_t addr;
	uint32_t name_off; /* into kallsyms.names */
};

struct kallsyms {
	bool loaded;       /* load attempted (successfully or not) */
	struct ksym *v;
	size_t n;
	char *names;
	size_t names_len, names_cap;
};

/* Parse a kallsyms-format file, keeping text symbols (t, T, w, W).  Nonzero
 * only on OOM; an unreadable file or hidden (all-zero) addresses leave n == 0. */
int kallsyms_load(struct kallsyms *k, const char *path);
/* Name of the text symbol containing addr, or NULL. */
const char *kallsyms_lookup(const struct kallsyms *k, uint64_t addr);
void kallsyms_free(struct kallsyms *k);

/* ---- symbolizer.c: test hooks ------------------------------------------- */

/* Read kernel symbols from `path` instead of /proc/kallsyms (tests use a
 * fake file).  Must be called before the first ember_symbolize_kernel. */
int ember_symbolizer_set_kallsyms_path(struct ember_symbolizer *sym, const char *path);

#endif
