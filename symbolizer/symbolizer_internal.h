/* Private interfaces between the symbolizer's source files (and its unit
 * test).  Nothing here is part of the public contract in symbolizer.h. */
#ifndef EMBER_SYMBOLIZER_INTERNAL_H
#define EMBER_SYMBOLIZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdwfl.h>

#include "symbolizer.h"

/* ---- demangle.c: string interning and demangling ------------------------ */

/* Every string handed out by the symbolizer is interned here, so it outlives
 * the Dwfl it came from (a module can be re-declared and its Dwfl dropped)
 * and equal names share one pointer.  Each interned string also remembers
 * its readable (demangled) form, so a symbol is demangled once no matter how
 * many addresses or modules name it. */
struct intern_entry {
	const char *str;
	const char *readable; /* NULL until ember_readable_name asks */
	uint32_t hash;
	uint32_t len;
};

struct intern_chunk;

struct intern {
	struct intern_entry *slots; /* open addressing; str == NULL is empty */
	size_t cap, used;           /* cap is a power of two */
	struct intern_chunk *chunks;
	size_t chunk_used, chunk_cap;
};

void intern_init(struct intern *in);
void intern_free(struct intern *in);
/* Returns the interned copy of s[0..len), or NULL on OOM. */
const char *intern_strn(struct intern *in, const char *s, size_t len);
const char *intern_str(struct intern *in, const char *s);
/* The demangled form of raw symbol name `raw`, interned; raw itself (interned)
 * when it is not a mangled name.  NULL only on OOM. */
const char *ember_readable_name(struct intern *in, const char *raw);
/* Demangle one name: malloc'ed readable string, or NULL when `raw` is not a
 * mangled C++/Rust name (or demangling failed).  Exposed for the tests. */
char *ember_demangle(const char *raw);

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
