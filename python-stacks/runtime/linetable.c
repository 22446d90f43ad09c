/* CPython line tables: co_lnotab (2.7, 3.6-3.9), the 3.10 PEP 626 table and
 * the 3.11+ location table.  Two forms: direct decoders (reference, one
 * lookup = one table walk) and a pre-decoded sorted run array the code cache
 * keeps per code object, so a per-sample lookup is a binary search.  Both
 * are checked against CPython's own co_lines()/findlinestarts() for the whole
 * standard library by tests/unit/test_python_linetable.c. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "py_runtime.h"
#include "sorted.h"

#define MAX_TABLE (1u << 20)

/* line + delta.  The table and co_firstlineno come from the target's
 * memory, so the sum may not fit an int: it wraps (both decoders alike)
 * rather than overflow. */
static inline int line_add(int line, int delta)
{
	return (int)((unsigned)line + (unsigned)delta);
}

static int lnotab_line(const uint8_t *t, size_t n, int firstlineno, int addr, bool signed_lines)
{
	int line = firstlineno, a = 0;
	for (size_t i = 0; i + 1 < n; i += 2) {
		a += t[i];
		if (a > addr)
			break;
		line = line_add(line, signed_lines ? (int8_t)t[i + 1] : t[i + 1]);
	}
	return line;
}

static int linetable310_line(const uint8_t *t, size_t n, int firstlineno, int addr)
{
	int line = firstlineno, end = 0;
	for (size_t i = 0; i + 1 < n; i += 2) {
		int start = end;
		end += t[i];
		int d = (int8_t)t[i + 1];
		if (d != -128)
			line = line_add(line, d);
		if (start <= addr && addr < end)
			return d == -128 ? -1 : line;
	}
	return -1;
}

/* One location-table entry starting at t[*i]: code, length in bytes, line
 * delta.  Returns false on a corrupt/truncated entry. */
static bool loc_entry(const uint8_t *t, size_t n, size_t *i, int *code, int *len, int *delta)
{
	uint8_t b = t[(*i)++];
	if (!(b & 0x80))
		return false;
	*code = (b >> 3) & 15;
	*len = ((b & 7) + 1) * 2;
	*delta = 0;
	if (*code == 13 || *code == 14) {
		unsigned u = 0, shift = 0;
		uint8_t c;
		do {
			if (*i >= n || shift > 30)
				return false;
			c = t[(*i)++];
			u |= (unsigned)(c & 63) << shift;
			shift += 6;
		} while (c & 64);
		*delta = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
	} else if (*code >= 10 && *code <= 12) {
		*delta = *code - 10;
	}
	while (*i < n && !(t[*i] & 0x80))
		(*i)++;
	return true;
}

static int loctable_line(const uint8_t *t, size_t n, int firstlineno, int addr)
{
	int line = firstlineno, a = 0;
	size_t i = 0;
	while (i < n) {
		int code, len, delta;
		if (!loc_entry(t, n, &i, &code, &len, &delta))
			return -1;
		line = line_add(line, delta);
		if (a <= addr && addr < a + len)
			return code == 15 ? -1 : line;
		a += len;
	}
	return -1;
}

int py_line_direct(enum py_linetable_kind k, const uint8_t *t, size_t n, int firstlineno, int addr)
{
	if (addr < 0)
		return firstlineno;
	if (n > MAX_TABLE)
		return -1;
	switch (k) {
	case PY_LT_LNOTAB_UNSIGNED: return lnotab_line(t, n, firstlineno, addr, false);
	case PY_LT_LNOTAB: return lnotab_line(t, n, firstlineno, addr, true);
	case PY_LT_310: return linetable310_line(t, n, firstlineno, addr);
	case PY_LT_LOCATIONS: return loctable_line(t, n, firstlineno, addr);
	}
	return -1;
}

static bool push(struct py_lines *l, size_t *cap, uint32_t start, int32_t line)
{
	/* Later entries at the same start win (lnotab with zero address steps;
	 * empty ranges elsewhere are never pushed). */
	if (l->n && l->runs[l->n - 1].start == start) {
		l->runs[l->n - 1].line = line;
		return true;
	}
	if (l->n && l->runs[l->n - 1].line == line)
		return true;   /* merge equal neighbours */
	if (EMBER_GROW(l->runs, *cap, (size_t)l->n + 1) != 0)
		return false;
	l->runs[l->n].start = start;
	l->runs[l->n].line = line;
	l->n++;
	return true;
}

int py_lines_build(struct py_lines *l, enum py_linetable_kind k, const uint8_t *t, size_t n, int firstlineno)
{
	size_t cap = 0;
	memset(l, 0, sizeof *l);
	l->firstlineno = firstlineno;
	if (n > MAX_TABLE)
		return -1;
	if (k == PY_LT_LNOTAB || k == PY_LT_LNOTAB_UNSIGNED) {
		/* line(addr) = firstlineno + sum of deltas of pairs whose cumulative
		 * address <= addr. */
		int line = firstlineno;
		uint32_t a = 0;
		l->open_ended = true;
		if (!push(l, &cap, 0, line))
			return -1;
		for (size_t i = 0; i + 1 < n; i += 2) {
			a += t[i];
			line = line_add(line, k == PY_LT_LNOTAB ? (int8_t)t[i + 1] : t[i + 1]);
			if (!push(l, &cap, a, line))
				return -1;
		}
		return 0;
	}
	if (k == PY_LT_310) {
		int line = firstlineno;
		uint32_t end = 0;
		for (size_t i = 0; i + 1 < n; i += 2) {
			uint32_t start = end;
			end += t[i];
			int d = (int8_t)t[i + 1];
			if (d != -128)
				line = line_add(line, d);
			if (end > start && !push(l, &cap, start, d == -128 ? -1 : line))
				return -1;
		}
		l->end = end;
		return 0;
	}
	int line = firstlineno;
	uint32_t a = 0;
	size_t i = 0;
	while (i < n) {
		int code, len, delta;
		if (!loc_entry(t, n, &i, &code, &len, &delta))
			break;   /* corrupt tail: the direct decoder answers -1 from here on */
		line = line_add(line, delta);
		if (!push(l, &cap, a, code == 15 ? -1 : line))
			return -1;
		a += len;
	}
	l->end = a;
	return 0;
}

int py_lines_lookup(const struct py_lines *l, int addr)
{
	if (addr < 0)
		return l->firstlineno;
	if (!l->n || (!l->open_ended && (uint32_t)addr >= l->end))
		return -1;
	size_t after = ember_upper_bound(l->runs, l->n, sizeof *l->runs, sizeof l->runs->start, (uint32_t)addr);
	return after ? l->runs[after - 1].line : -1;   /* the last run starting at or below addr */
}

void py_lines_free(struct py_lines *l)
{
	free(l->runs);
	memset(l, 0, sizeof *l);
}
