/* Inline chains from the DWARF DIE tree.
 *
 * The obvious API, dwarf_getscopes, returns no scopes at all for GCC-LTO code
 * in elfutils 0.188 (Debian's python3.11): it looks for the abstract origin of
 * an inlined instance inside the same CU, and with LTO the origin lives in
 * another CU (DW_FORM_ref_addr).  So we walk down from the CU DIE ourselves,
 * always into the one child whose PC ranges contain the address, and read
 * names through dwarf_attr_integrate, which follows cross-CU references.
 * Costs tens of microseconds on big LTO CUs; the caller caches results. */
#include <assert.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "inline_chain.h"
#include "sorted.h"

/* Deepest DIE nesting followed (scopes + namespaces); real code stays far below. */
#define MAX_DEPTH 256
/* Containers without PC ranges (namespace, class) nested this deep at most. */
#define MAX_CONTAINER_NEST 16
/* DIEs visited per lookup before we give up: bounds the time spent on
 * corrupt DWARF whose sibling links would otherwise run on and on. */
#define MAX_DIES_VISITED 4000000

struct walk {
	Dwarf_Addr pc;
	unsigned long visited;
};

/* Find the child of `parent` that contains pc: a code scope with PC ranges,
 * searched for through PC-less containers (C++ namespaces and classes hold
 * the concrete DIEs of functions defined inside them).  1 found, 0 not,
 * -1 gave up. */
static int find_child(struct walk *w, Dwarf_Die *parent, Dwarf_Die *out, int nest)
{
	Dwarf_Die child;
	if (dwarf_child(parent, &child) != 0)
		return 0;
	Dwarf_Off prev = dwarf_dieoffset(&child);
	for (;;) {
		if (++w->visited > MAX_DIES_VISITED)
			return -1;
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_entry_point:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			if (dwarf_haspc(&child, w->pc) > 0) {
				*out = child;
				return 1;
			}
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if (nest < MAX_CONTAINER_NEST && dwarf_haschildren(&child) > 0) {
				int r = find_child(w, &child, out, nest + 1);
				if (r != 0)
					return r;
			}
			break;
		default:
			break;
		}
		if (dwarf_siblingof(&child, &child) != 0)
			return 0;
		/* Sibling links come from the file (DW_AT_sibling): insist they
		 * move forward so corrupt DWARF cannot make us loop. */
		Dwarf_Off off = dwarf_dieoffset(&child);
		if (off <= prev)
			return -1;
		prev = off;
	}
}

/* Linkage name when there is one (C++/Rust: qualified, demangled later),
 * else DW_AT_name; both looked up through abstract_origin/specification. */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		n = dwarf_formstring(&a);
	if (!n && dwarf_attr_integrate(die, DW_AT_name, &a))
		n = dwarf_formstring(&a);
	return n && n[0] ? n : NULL;
}

/* Where the inlined instance `die` was called from: DW_AT_call_file (an
 * index into its CU's file table) and DW_AT_call_line. */
static void call_site(Dwarf_Die *die, const char **file, uint32_t *line)
{
	Dwarf_Attribute a;
	Dwarf_Word w;
	*file = NULL;
	*line = 0;
	if (dwarf_attr(die, DW_AT_call_line, &a) && dwarf_formudata(&a, &w) == 0 && w <= UINT32_MAX)
		*line = (uint32_t)w;
	Dwarf_Die cu;
	Dwarf_Files *files;
	size_t nfiles;
	if (dwarf_attr(die, DW_AT_call_file, &a) && dwarf_formudata(&a, &w) == 0 &&
	    dwarf_diecu(die, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 &&
	    w < nfiles)
		*file = dwarf_filesrc(files, w, NULL, NULL);
}

/* Bounds on what a (possibly corrupt) file can make us allocate. */
#define MAX_UNITS (1u << 20)
#define MAX_CU_RANGES (1u << 22)

static int range_cmp(const void *pa, const void *pb)
{
	const struct cu_range *a = pa, *b = pb;
	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static void cu_index_build(struct cu_index *ci, Dwarf *dw, Dwarf_Addr bias)
{
	size_t cap = 0;
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Die cudie;
	uint8_t type;
	bool oom = false;      /* then the ranges read so far make the index */
	ci->built = true;
	for (unsigned units = 0; !oom && units < MAX_UNITS &&
	     dwarf_get_units(dw, cu, &next, NULL, &type, &cudie, NULL) == 0; units++, cu = next) {
		if (type != DW_UT_compile && type != DW_UT_skeleton && type != DW_UT_partial)
			continue;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;
		while (ci->n < MAX_CU_RANGES && (off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if ((oom = EMBER_GROW(ci->v, cap, ci->n + 1) < 0))
				break;
			ci->v[ci->n++] = (struct cu_range){ lo + bias, hi + bias, dwarf_dieoffset(&cudie) };
		}
	}
	if (ci->n)
		qsort(ci->v, ci->n, sizeof(*ci->v), range_cmp);
}

void cu_index_free(struct cu_index *ci)
{
	free(ci->v);
	memset(ci, 0, sizeof(*ci));
}

/* The CU DIE containing addr: libdwfl's lookup (driven by .debug_aranges),
 * else our own index of CU ranges. */
static bool find_cu(struct cu_index *ci, Dwfl_Module *mod, uint64_t addr, Dwarf_Die *out,
		    Dwarf_Addr *bias)
{
	Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, bias);
	if (cu) {
		*out = *cu;
		return true;
	}
	Dwarf *dw = dwfl_module_getdwarf(mod, bias);
	if (!dw)
		return false;
	if (!ci->built)
		cu_index_build(ci, dw, *bias);
	size_t lo = ember_upper_bound(ci->v, ci->n, sizeof(*ci->v), 8, addr); /* ranges starting at or below addr */
	/* Ranges of different CUs do not nest in sane files: the closest
	 * start below addr decides, with a few more looks for odd ones. */
	for (size_t k = lo, seen = 0; k-- > 0 && seen < 8; seen++)
		if (addr < ci->v[k].hi)
			return dwarf_offdie(dw, ci->v[k].die_off, out) != NULL;
	return false;
}

size_t dw_inline_chain(struct cu_index *ci, Dwfl_Module *mod, uint64_t addr,
		       struct dw_frame *out, size_t max)
{
	if (max == 0)
		return 0;
	Dwarf_Addr bias = 0;
	Dwarf_Die cudie, *cu = &cudie;
	if (!find_cu(ci, mod, addr, cu, &bias))
		return 0;

	/* Scopes from the CU down to the innermost one containing pc. */
	static_assert(MAX_DEPTH > EMBER_MAX_INLINE, "chain buffer");
	Dwarf_Die chain[MAX_DEPTH];
	size_t depth = 0;
	struct walk w = { .pc = addr - bias };
	Dwarf_Die cur = *cu;
	while (depth < MAX_DEPTH && find_child(&w, &cur, &chain[depth], 0) > 0)
		cur = chain[depth++];

	/* The frames are the innermost subprogram (a GCC nested function's
	 * parent is not a caller) and the inlined instances inside it. */
	size_t first = 0;
	for (size_t i = 0; i < depth; i++) {
		int tag = dwarf_tag(&chain[i]);
		if (tag == DW_TAG_subprogram || tag == DW_TAG_entry_point)
			first = i;
	}
	Dwarf_Die *inl[MAX_DEPTH]; /* inlined instances, outermost first */
	size_t k = 0;
	for (size_t i = first; i < depth; i++)
		if (dwarf_tag(&chain[i]) == DW_TAG_inlined_subroutine)
			inl[k++] = &chain[i];
	Dwarf_Die *outer = NULL;
	if (depth > 0 && dwarf_tag(&chain[first]) != DW_TAG_inlined_subroutine)
		outer = &chain[first];

	/* Innermost frame: its line is the line table's row for addr (from
	 * the CU found above: dwfl_module_getsrc would redo the lookup and
	 * fail the same way without .debug_aranges). */
	const char *file = NULL;
	int lineno = 0;
	Dwarf_Line *l = dwarf_getsrc_die(cu, addr - bias);
	if (l) {
		file = dwarf_linesrc(l, NULL, NULL);
		if (dwarf_lineno(l, &lineno) != 0)
			lineno = 0;
	}

	/* Keep the innermost max - 1 inlined frames and the containing
	 * function when the chain does not fit; the caller's own cap
	 * (EMBER_MAX_INLINE) applies the same way. */
	size_t keep = k;
	if (keep > max - 1)
		keep = max - 1;
	size_t n = 0;
	for (size_t j = k; j-- > 0;) {
		/* inl[j]: name from its origin; its line is where the
		 * next-inner frame (inl[j + 1]) was called, or the line
		 * table's row for the innermost one. */
		const char *f = file;
		uint32_t line = lineno > 0 ? (uint32_t)lineno : 0;
		if (j + 1 < k)
			call_site(inl[j + 1], &f, &line);
		if (k - j <= keep)
			out[n++] = (struct dw_frame){ .name = die_name(inl[j]), .file = f,
						      .line = line, .inlined = true };
	}
	const char *f = file;
	uint32_t line = lineno > 0 ? (uint32_t)lineno : 0;
	if (k > 0)
		call_site(inl[0], &f, &line);
	out[n++] = (struct dw_frame){ .name = outer ? die_name(outer) : NULL, .file = f,
				      .line = line, .inlined = false };
	return n;
}
