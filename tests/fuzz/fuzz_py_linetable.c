/* fuzz.py_linetable: CPython line-table decoding (python-stacks/runtime/linetable.c)
 * for every format ember reads: 2.7 lnotab, 3.6-3.9 lnotab, the 3.10 PEP 626
 * table and the 3.11+ location table.  Input: one byte for the format, four
 * for co_firstlineno, the table's bytes.  The table comes from the target's
 * memory, so it may be anything.  Two decoders must agree at every offset
 * looked at: the pre-decoded runs the code cache keeps (py_lines_build +
 * py_lines_lookup) and the direct walk (py_line_direct) -- the unit test
 * checks both against CPython's own answers on real tables. */
#include "fuzz_util.h"

#include <string.h>

#include "py_runtime.h"

#define PROBES 64    /* offsets looked up besides the runs' edges */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void agree(const struct py_lines *l, enum py_linetable_kind k, const uint8_t *t, size_t n, int first,
		  int addr)
{
	int a = py_lines_lookup(l, addr), b = py_line_direct(k, t, n, first, addr);
	if (a != b) {
		fprintf(stderr, "kind %d, first line %d, offset %d: runs say %d, the direct walk %d\n", (int)k, first,
			addr, a, b);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 5)
		return 0;
	enum py_linetable_kind k = (enum py_linetable_kind)(data[0] % 4);
	int32_t first;
	memcpy(&first, data + 1, 4);
	const uint8_t *t = data + 5;
	size_t n = size - 5;
	struct py_lines l;
	if (py_lines_build(&l, k, t, n, first) != 0) {
		py_lines_free(&l);
		return 0;
	}
	agree(&l, k, t, n, first, -1);
	/* Each run's first offset and the one before it, then offsets spread
	 * over what the table covers and a little past it. */
	for (uint32_t i = 0; i < l.n && i < 2 * PROBES; i++) {
		int s = (int)l.runs[i].start;
		agree(&l, k, t, n, first, s);
		if (s > 0)
			agree(&l, k, t, n, first, s - 1);
	}
	uint32_t span = (l.n ? l.runs[l.n - 1].start : 0) + 64;
	if (l.end + 64 > span)
		span = l.end + 64;
	for (uint32_t i = 0; i < PROBES; i++)
		agree(&l, k, t, n, first, (int)((uint64_t)span * i / PROBES));
	py_lines_free(&l);
	return 0;
}
