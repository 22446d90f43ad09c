/* Unit tests of the live table of `ember top` (profile/top.c) against a
 * known sample set: own and total per function over an interval and since
 * the start, the sort keys, the thread filter and the three views. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "profile.h"
#include "report.h"

/* Frames of the sample set. */
enum { F_START, F_EVAL, F_MAIN, F_WORK12, F_WORK13, F_HELPER, F_MEMCPY, NF };

struct fixture {
	struct ember_profile p;
	uint32_t f[NF];
	uint32_t s1, s2, s3, s4;   /* stacks */
	uint32_t t0, t1;           /* threads */
};

static uint32_t frame(struct ember_profile *p, enum ember_frame_kind kind, const char *name, const char *file,
		      uint32_t line, uint32_t first_line, const char *module)
{
	struct ember_frame f = { .kind = kind, .name = name, .file = file, .line = line, .first_line = first_line,
				 .module = module };
	return ember_profile_frame(p, &f);
}

static uint32_t stack(struct ember_profile *p, const uint32_t *ids, uint32_t n)
{
	return ember_profile_stack(p, ids, n);
}

/* Stacks, root first (N native, I interpreter, P Python):
 *   s1  start(N) eval(I) main(P) eval(I) work:12(P)
 *   s2  start(N) eval(I) main(P) eval(I) work:13(P) memcpy(N)
 *   s3  start(N) eval(I) main(P) eval(I) helper(P) eval(I)
 *   s4  start(N) eval(I) work:12(P) eval(I) work:12(P)     (recursion) */
static void fixture_init(struct fixture *x)
{
	struct ember_profile *p = &x->p;
	uint32_t *f = x->f;
	CHECK(ember_profile_init(p) == 0);
	f[F_START] = frame(p, EMBER_FRAME_NATIVE, "_start", "", 0, 0, "app");
	f[F_EVAL] = frame(p, EMBER_FRAME_INTERP, "_PyEval_EvalFrameDefault", "", 0, 0, "libpython3.so");
	f[F_MAIN] = frame(p, EMBER_FRAME_PYTHON, "main", "a.py", 3, 1, "");
	f[F_WORK12] = frame(p, EMBER_FRAME_PYTHON, "work", "a.py", 12, 10, "");
	f[F_WORK13] = frame(p, EMBER_FRAME_PYTHON, "work", "a.py", 13, 10, "");
	f[F_HELPER] = frame(p, EMBER_FRAME_PYTHON, "Helper.run", "b.py", 6, 5, "");
	f[F_MEMCPY] = frame(p, EMBER_FRAME_NATIVE, "memcpy", "", 0, 0, "libc.so.6");
	uint32_t a[] = { f[F_START], f[F_EVAL], f[F_MAIN], f[F_EVAL], f[F_WORK12] };
	uint32_t b[] = { f[F_START], f[F_EVAL], f[F_MAIN], f[F_EVAL], f[F_WORK13], f[F_MEMCPY] };
	uint32_t c[] = { f[F_START], f[F_EVAL], f[F_MAIN], f[F_EVAL], f[F_HELPER], f[F_EVAL] };
	uint32_t d[] = { f[F_START], f[F_EVAL], f[F_WORK12], f[F_EVAL], f[F_WORK12] };
	x->s1 = stack(p, a, 5);
	x->s2 = stack(p, b, 6);
	x->s3 = stack(p, c, 6);
	x->s4 = stack(p, d, 5);
	x->t0 = ember_profile_thread(p, 100, 100, "MainThread");
	x->t1 = ember_profile_thread(p, 100, 101, "worker");
}

/* The row labelled label, or NULL. */
static const struct ember_top_row *row(const struct ember_top_table *tb, const char *label)
{
	for (size_t i = 0; i < tb->nrows; i++)
		if (strcmp(tb->rows[i].label, label) == 0)
			return &tb->rows[i];
	return NULL;
}

/* The row's four counts equal own_now, total_now, own_all, total_all. */
static bool counts(const struct ember_top_table *tb, const char *label, uint64_t on, uint64_t tn, uint64_t oa,
		   uint64_t ta)
{
	const struct ember_top_row *r = row(tb, label);
	if (!r) {
		fprintf(stderr, "no row '%s'\n", label);
		return false;
	}
	if (r->own_now == on && r->total_now == tn && r->own_all == oa && r->total_all == ta)
		return true;
	fprintf(stderr, "row '%s': %llu %llu %llu %llu, expected %llu %llu %llu %llu\n", label,
		(unsigned long long)r->own_now, (unsigned long long)r->total_now, (unsigned long long)r->own_all,
		(unsigned long long)r->total_all, (unsigned long long)on, (unsigned long long)tn,
		(unsigned long long)oa, (unsigned long long)ta);
	return false;
}

/* The labels in table order, joined by '|'. */
static const char *order(const struct ember_top_table *tb, char *buf, size_t len)
{
	buf[0] = 0;
	for (size_t i = 0; i < tb->nrows; i++) {
		if (i)
			strncat(buf, "|", len - strlen(buf) - 1);
		strncat(buf, tb->rows[i].label, len - strlen(buf) - 1);
	}
	return buf;
}

/* Two intervals: first t0 s1 x6, s2 x2 and t1 s3 x2; then t0 s1 x1 and
 * t1 s3 x3, s4 x1. */
static void two_intervals(struct fixture *x, struct ember_top *t)
{
	struct ember_profile *p = &x->p;
	CHECK(ember_profile_add(p, x->s1, x->t0, 6) == 0);
	CHECK(ember_profile_add(p, x->s2, x->t0, 2) == 0);
	CHECK(ember_profile_add(p, x->s3, x->t1, 2) == 0);
	CHECK(ember_top_update(t, p) == 0);
	CHECK(ember_profile_add(p, x->s1, x->t0, 1) == 0);
	CHECK(ember_profile_add(p, x->s3, x->t1, 3) == 0);
	CHECK(ember_profile_add(p, x->s4, x->t1, 1) == 0);
	CHECK(ember_top_update(t, p) == 0);
}

static void test_merged(void)
{
	struct fixture x;
	struct ember_top *t = ember_top_new();
	struct ember_top_table tb;
	char buf[512];
	fixture_init(&x);
	CHECK(t != NULL);
	two_intervals(&x, t);
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_MERGED, UINT32_MAX, EMBER_TOP_BY_OWN, &tb) == 0);
	CHECK(tb.samples_now == 5 && tb.samples_all == 15);
	CHECK(tb.nrows == 5);   /* the interpreter's frames are out of this view */
	/* work's two lines are one function, labelled with its first line; a
	 * recursive stack counts once in its total */
	CHECK(counts(&tb, "work (a.py:10)", 2, 2, 8, 10));
	CHECK(counts(&tb, "Helper.run (b.py:5)", 3, 3, 5, 5));
	CHECK(counts(&tb, "memcpy", 0, 0, 2, 2));
	CHECK(counts(&tb, "main (a.py:1)", 0, 4, 0, 14));
	CHECK(counts(&tb, "_start", 0, 5, 0, 15));
	/* by own in the interval; ties by total in it */
	CHECK_STR(order(&tb, buf, sizeof buf), "Helper.run (b.py:5)|work (a.py:10)|_start|main (a.py:1)|memcpy");
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_MERGED, UINT32_MAX, EMBER_TOP_BY_TOTAL, &tb) == 0);
	CHECK_STR(order(&tb, buf, sizeof buf), "_start|main (a.py:1)|Helper.run (b.py:5)|work (a.py:10)|memcpy");
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_MERGED, UINT32_MAX, EMBER_TOP_BY_OWN_ALL, &tb) == 0);
	CHECK_STR(order(&tb, buf, sizeof buf), "work (a.py:10)|Helper.run (b.py:5)|memcpy|_start|main (a.py:1)");
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_MERGED, UINT32_MAX, EMBER_TOP_BY_TOTAL_ALL, &tb) == 0);
	CHECK_STR(order(&tb, buf, sizeof buf), "_start|main (a.py:1)|work (a.py:10)|Helper.run (b.py:5)|memcpy");
	ember_top_free(t);
	ember_profile_free(&x.p);
}

static void test_views(void)
{
	struct fixture x;
	struct ember_top *t = ember_top_new();
	struct ember_top_table tb;
	char buf[512];
	fixture_init(&x);
	two_intervals(&x, t);
	/* Python only: own time is the innermost Python function's (memcpy's
	 * samples are work's); native frames are gone */
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_PYTHON, UINT32_MAX, EMBER_TOP_BY_OWN_ALL, &tb) == 0);
	CHECK(tb.samples_all == 15 && tb.nrows == 3);
	CHECK(counts(&tb, "work (a.py:10)", 2, 2, 10, 10));
	CHECK(counts(&tb, "Helper.run (b.py:5)", 3, 3, 5, 5));
	CHECK(counts(&tb, "main (a.py:1)", 0, 4, 0, 14));
	CHECK_STR(order(&tb, buf, sizeof buf), "work (a.py:10)|Helper.run (b.py:5)|main (a.py:1)");
	/* native only: the interpreter's frames are back, Python's gone */
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_NATIVE, UINT32_MAX, EMBER_TOP_BY_OWN_ALL, &tb) == 0);
	CHECK(tb.nrows == 3);
	CHECK(counts(&tb, "_PyEval_EvalFrameDefault", 5, 5, 13, 15));
	CHECK(counts(&tb, "memcpy", 0, 0, 2, 2));
	CHECK(counts(&tb, "_start", 0, 5, 0, 15));
	CHECK(row(&tb, "work (a.py:10)") == NULL);
	ember_top_free(t);
	ember_profile_free(&x.p);
}

static void test_threads_and_intervals(void)
{
	struct fixture x;
	struct ember_top *t = ember_top_new();
	struct ember_top_table tb;
	char buf[512];
	fixture_init(&x);
	two_intervals(&x, t);
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_MERGED, x.t1, EMBER_TOP_BY_OWN, &tb) == 0);
	CHECK(tb.samples_now == 4 && tb.samples_all == 6);
	CHECK(tb.nrows == 4);   /* memcpy ran on t0 only */
	CHECK(counts(&tb, "Helper.run (b.py:5)", 3, 3, 5, 5));
	CHECK(counts(&tb, "work (a.py:10)", 1, 1, 1, 1));
	CHECK(row(&tb, "memcpy") == NULL);
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_MERGED, x.t0, EMBER_TOP_BY_OWN, &tb) == 0);
	CHECK(tb.samples_now == 1 && tb.samples_all == 9);
	CHECK(counts(&tb, "work (a.py:10)", 1, 1, 7, 9));
	/* Samples added after the last update are in no table until the next. */
	CHECK(ember_profile_add(&x.p, x.s2, x.t0, 4) == 0);
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_MERGED, UINT32_MAX, EMBER_TOP_BY_OWN, &tb) == 0);
	CHECK(tb.samples_all == 15 && counts(&tb, "memcpy", 0, 0, 2, 2));
	CHECK(ember_top_update(t, &x.p) == 0);
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_MERGED, UINT32_MAX, EMBER_TOP_BY_OWN, &tb) == 0);
	CHECK(tb.samples_now == 4 && tb.samples_all == 19);
	CHECK(counts(&tb, "memcpy", 4, 4, 6, 6));
	CHECK_STR(tb.rows[0].label, "memcpy");
	/* An interval without samples: nothing now, everything since the start
	 * (work is under the 4 new memcpy samples too). */
	CHECK(ember_top_update(t, &x.p) == 0);
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_MERGED, UINT32_MAX, EMBER_TOP_BY_OWN, &tb) == 0);
	CHECK(tb.samples_now == 0 && tb.samples_all == 19);
	CHECK(counts(&tb, "work (a.py:10)", 0, 0, 8, 14));
	/* all tied at 0 in it: ordered by own since the start */
	CHECK_STR(order(&tb, buf, sizeof buf), "work (a.py:10)|memcpy|Helper.run (b.py:5)|_start|main (a.py:1)");
	ember_top_free(t);
	ember_profile_free(&x.p);
}

/* A new thread, frame and stack appearing between updates. */
static void test_growth(void)
{
	struct fixture x;
	struct ember_top *t = ember_top_new();
	struct ember_top_table tb;
	fixture_init(&x);
	CHECK(ember_top_update(t, &x.p) == 0);
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_MERGED, UINT32_MAX, EMBER_TOP_BY_OWN, &tb) == 0);
	CHECK(tb.nrows == 0 && tb.samples_all == 0);
	CHECK(ember_profile_add(&x.p, x.s1, x.t0, 3) == 0);
	CHECK(ember_top_update(t, &x.p) == 0);
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_MERGED, UINT32_MAX, EMBER_TOP_BY_OWN, &tb) == 0);
	uint32_t fresh = frame(&x.p, EMBER_FRAME_NATIVE, "compress", "", 0, 0, "libz.so.1");
	uint32_t ids[] = { x.f[F_START], fresh };
	uint32_t s = stack(&x.p, ids, 2), th = ember_profile_thread(&x.p, 100, 102, "zip");
	CHECK(ember_profile_add(&x.p, s, th, 7) == 0);
	CHECK(ember_top_update(t, &x.p) == 0);
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_MERGED, th, EMBER_TOP_BY_OWN, &tb) == 0);
	CHECK(tb.nrows == 2 && tb.samples_now == 7 && tb.samples_all == 7);
	CHECK(counts(&tb, "compress", 7, 7, 7, 7));
	CHECK(ember_top_table(t, &x.p, EMBER_TOP_MERGED, UINT32_MAX, EMBER_TOP_BY_OWN, &tb) == 0);
	CHECK(counts(&tb, "work (a.py:10)", 0, 0, 3, 3));
	ember_top_free(t);
	ember_profile_free(&x.p);
}

int main(void)
{
	test_merged();
	test_views();
	test_threads_and_intervals();
	test_growth();
	return check_report();
}
