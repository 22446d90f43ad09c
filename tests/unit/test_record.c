/* Unit tests: record/'s capture-side aggregation (raw_stacks.c): identical
 * stacks of a thread are counted once, anything that changes what a stack
 * means keeps it apart, and the timeline keeps every sample in order. */
#include <stdint.h>

#include "check.h"
#include "raw_stacks.h"

static struct ember_sample sample(uint32_t tid, uint64_t t, const struct ember_frame_addr *f, uint32_t n)
{
	return (struct ember_sample){ .pid = 7, .tid = tid, .time_ns = t, .frames = f, .nframes = n };
}

int main(void)
{
	struct raw_stacks *rs = raw_stacks_new();
	CHECK(rs != NULL);
	const struct ember_frame_addr a[2] = { { .module = 1, .addr = 0x1000 }, { .module = 1, .addr = 0x2000 } };
	const struct ember_frame_addr b[2] = { { .module = 1, .addr = 0x1004 }, { .module = 1, .addr = 0x2000 } };
	const struct ember_frame_addr scanned[2] = { { .module = 1, .addr = 0x1000, .flags = EMBER_FRAME_SCANNED },
						     { .module = 1, .addr = 0x2000 } };
	struct ember_py_frame py[2] = { { .code = 3, .line = 10, .activation_start = true },
					{ .code = 4, .line = 20, .activation_start = true } };
	struct ember_sample s = sample(8, 100, a, 2);
	CHECK(raw_stacks_add(rs, &s, NULL, 0, 0) == 0);              /* entry 0 */
	s.time_ns = 50;
	CHECK(raw_stacks_add(rs, &s, NULL, 0, 0) == 0);              /* entry 0 again */
	s = sample(9, 200, a, 2);
	CHECK(raw_stacks_add(rs, &s, NULL, 0, 0) == 0);              /* another thread: 1 */
	s = sample(8, 300, b, 2);
	CHECK(raw_stacks_add(rs, &s, NULL, 0, 0) == 0);              /* another pc: 2 */
	s = sample(8, 400, scanned, 2);
	CHECK(raw_stacks_add(rs, &s, NULL, 0, 0) == 0);              /* found by a scan: 3 */
	s = sample(8, 500, a, 2);
	CHECK(raw_stacks_add(rs, &s, py, 2, EMBER_PY_AT_SAMPLE) == 0);   /* Python frames: 4 */
	s.time_ns = 600;
	CHECK(raw_stacks_add(rs, &s, py, 2, 0) == 0);                /* read after: still 4 */
	py[0].line = 11;
	CHECK(raw_stacks_add(rs, &s, py, 2, 0) == 0);                /* another line: 5 */
	CHECK(raw_stacks_add(rs, &s, py, 2, EMBER_PY_TORN) == 0);    /* torn: 6 */
	s.flags = EMBER_SAMPLE_TRUNCATED;
	CHECK(raw_stacks_add(rs, &s, py, 2, EMBER_PY_CHECKED) == 0); /* cut off, checked: 7 */
	CHECK(raw_stacks_add(rs, &s, py, 2, 0) == 0);                /* cut off, unchecked: 8 */
	s.flags = EMBER_SAMPLE_IN_KERNEL;
	CHECK(raw_stacks_add(rs, &s, py, 2, EMBER_PY_CHECKED) == 0); /* per-sample noise: 5 */
	s.flags = EMBER_SAMPLE_UNWIND_ERROR;
	CHECK(raw_stacks_add(rs, &s, py, 2, EMBER_PY_AT_SAMPLE) == 0);  /* stopped short, copied: 9 */
	CHECK(raw_stacks_samples(rs) == 13);

	static const uint64_t counts[] = { 2, 1, 1, 1, 2, 2, 1, 1, 1, 1 };
	size_t cursor = 0, n = 0;
	struct raw_stack_view v;
	while (raw_stacks_next(rs, &cursor, &v)) {
		CHECK(n < 10 && v.count == counts[n]);
		CHECK(v.pid == 7 && v.nframes == 2);
		if (n == 4)
			CHECK(v.npy == 2 && v.py[0].line == 10 && v.py[1].code == 4 && v.pyflags == 0);
		if (n == 7)
			CHECK(v.flags == EMBER_SAMPLE_TRUNCATED && v.pyflags == EMBER_PY_CHECKED);
		if (n == 3)
			CHECK(v.frames[0].flags == EMBER_FRAME_SCANNED);
		if (n == 9)
			CHECK(v.flags == EMBER_SAMPLE_UNWIND_ERROR && v.pyflags == EMBER_PY_AT_SAMPLE);
		n++;
	}
	CHECK(n == 10);
	/* one stored copy of each distinct sequence: entries 0 and 1 (two
	 * threads) and 4 (Python frames) have the same native frames */
	{
		struct raw_stack_view v0, v1, v4;
		cursor = 0;
		for (size_t k = 0; raw_stacks_next(rs, &cursor, &v); k++)
			*(k == 0 ? &v0 : k == 1 ? &v1 : k == 4 ? &v4 : &v) = v;
		CHECK(v0.frames == v1.frames && v0.frames == v4.frames);
		CHECK(v0.frames[1].addr == 0x2000 && v4.py[0].line == 10);
	}

	bool complete;
	static const uint32_t entries[] = { 0, 0, 1, 2, 3, 4, 4, 5, 6, 7, 8, 5, 9 };
	/* arrival order, not time order: the second sample is earlier */
	static const uint64_t times[] = { 100, 50, 200, 300, 400, 500, 600, 600, 600, 600, 600, 600, 600 };
	CHECK(raw_stacks_timeline_count(rs, &complete) == 13 && complete);
	size_t tc = 0, i = 0;
	uint64_t t = 0;
	uint32_t e;
	for (; raw_stacks_timeline_next(rs, &tc, &t, &e); i++)
		CHECK(i < 13 && e == entries[i] && t == times[i]);
	CHECK(i == 13);
	raw_stacks_free(rs);

	/* times far apart and large entry numbers come back exactly */
	rs = raw_stacks_new();
	static const uint64_t far[] = { UINT64_MAX - 5, 3, (uint64_t)1 << 62, ((uint64_t)1 << 62) + 1, 0 };
	for (uint32_t k = 0; k < 5; k++) {
		struct ember_frame_addr f[1] = { { .module = 1, .addr = 0x1000 + 16 * k } };
		s = sample(8, far[k], f, 1);
		CHECK(raw_stacks_add(rs, &s, NULL, 0, 0) == 0);
	}
	CHECK(raw_stacks_timeline_count(rs, &complete) == 5 && complete);
	tc = 0, i = 0, t = 0;
	for (; raw_stacks_timeline_next(rs, &tc, &t, &e); i++)
		CHECK(i < 5 && t == far[i] && e == i);
	CHECK(i == 5);
	raw_stacks_free(rs);

	/* --idle: weights add up; the same stack off CPU is an entry of its
	 * own, and off-CPU intervals stay out of the timeline */
	rs = raw_stacks_new();
	s = sample(8, 100, a, 2);
	CHECK(raw_stacks_add_weighted(rs, &s, NULL, 0, 0, 10101) == 0);
	s.time_ns = 200;
	CHECK(raw_stacks_add_weighted(rs, &s, NULL, 0, 0, 10101) == 0);
	s.flags = EMBER_SAMPLE_OFF_CPU;
	s.time_ns = 300;
	CHECK(raw_stacks_add_weighted(rs, &s, NULL, 0, 0, 500000) == 0);
	CHECK(raw_stacks_add_weighted(rs, &s, NULL, 0, 0, UINT64_MAX) == 0);   /* saturates */
	static const uint64_t wcounts[] = { 20202, UINT64_MAX }, wsamples[] = { 2, 2 };
	static const uint32_t wflags[] = { 0, EMBER_SAMPLE_OFF_CPU };
	cursor = 0, n = 0;
	while (raw_stacks_next(rs, &cursor, &v)) {
		CHECK(n < 2 && v.count == wcounts[n] && v.samples == wsamples[n] && v.flags == wflags[n]);
		n++;
	}
	CHECK(n == 2 && raw_stacks_samples(rs) == 4);
	CHECK(raw_stacks_timeline_count(rs, &complete) == 2 && complete);
	raw_stacks_free(rs);
	return check_report();
}
