/* The bytecode index: every code object read, by the remote address range
 * of its bytecode, sorted by start.  The sample check (evidence.c) maps the
 * instruction pointer an eval-loop activation held at the sample back to
 * its code object and line through it.  Ranges of freed code objects stay
 * and overlap their successors': a lookup prefers the code objects of the
 * read at hand, else the most recently validated. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "py_read.h"
#include "sorted.h"

#define RECENT_NS 2000000000ull       /* a code object validated this recently is trusted */
#define LOOK_BACK 16                  /* overlapping ranges looked at */

void py_bc_add(struct ember_python *py, uint32_t id)
{
	struct py_code_cache *cc = py->code;
	const struct py_code_entry *c = py_code(py, id);
	if (!c->bc_start || c->ninstr_bytes <= 0)
		return;
	if (EMBER_GROW(cc->bc, cc->bc_cap, cc->nbc + 1) != 0)
		return;   /* not indexed: its activations stay unchecked */
	struct py_bc_range r = { c->bc_start, c->bc_start + (uint64_t)c->ninstr_bytes, id };
	size_t lo = ember_upper_bound(cc->bc, cc->nbc, sizeof *cc->bc, sizeof r.start, r.start);
	memmove(&cc->bc[lo + 1], &cc->bc[lo], (cc->nbc - lo) * sizeof r);
	cc->bc[lo] = r;
	cc->nbc++;
}

uint32_t py_bc_lookup(const struct ember_python *py, uint64_t addr, const struct ember_py_frame *fr, int n)
{
	const struct py_code_cache *cc = py->code;
	size_t lo = ember_upper_bound(cc->bc, cc->nbc, sizeof *cc->bc, sizeof cc->bc->start, addr);
	uint32_t best = 0;
	uint64_t best_ns = 0;
	for (size_t i = lo, k = 0; i-- > 0 && k < LOOK_BACK; k++) {
		const struct py_bc_range *r = &cc->bc[i];
		if (addr >= r->end)
			continue;
		for (int j = 0; j < n; j++)
			if (py_code_base(py, fr[j].code) == r->code)
				return r->code;
		uint64_t ns = py_code(py, r->code)->checked_ns;
		if (!best || ns > best_ns) {
			best = r->code;
			best_ns = ns;
		}
	}
	if (best && cc->now_ns > best_ns && cc->now_ns - best_ns > RECENT_NS)
		return 0;
	return best;
}

int py_bc_line(const struct ember_python *py, uint32_t id, uint64_t addr)
{
	const struct py_code_entry *c = py_code(py, id);
	uint64_t off = addr - c->bc_start;
	if (off > 0)
		off--;
	if (py->rt.major == 3)
		off &= ~1ull;   /* 2-byte code units from 3.6 */
	int l = py_lines_lookup(&c->lines, (int)off);
	return l < 0 ? 0 : l;
}
