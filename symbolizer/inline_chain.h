/* The DWARF frames of one address, innermost inlined call first
 * (inline_chain.c), for symbolizer.c: the chain, and the per-module index
 * of CU ranges it keeps for files without .debug_aranges.  Private to
 * symbolizer/. */
#ifndef EMBER_INLINE_CHAIN_H
#define EMBER_INLINE_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdwfl.h>

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

#endif
