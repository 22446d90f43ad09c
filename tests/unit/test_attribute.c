/* Dispatch attribution's plan (record/attribute.h) on made-up stacks: which
 * dispatcher stack a pool thread's sample goes under, by which rule, and
 * when it goes under none. Frame ids are small numbers; fn[] maps two lines
 * of one function to one id. */
#include <stdint.h>

#include "attribute.h"
#include "check.h"
#include "pools.h"

/* Frames: 0 root, 1 main, 2 stage_a, 3 stage_b, 4 GOMP_parallel, 5 region_a,
 * 6 region_b, 7 kernel, 8 [OpenMP wait], 9 worker entry, 10 clone root,
 * 11 line_a (Python), 12 line_b (Python), 13 region_a at another line,
 * 14 main at another line, 15 outer Python frame. */
enum { ROOT, MAIN, STAGE_A, STAGE_B, GOMP, REGION_A, REGION_B, KERNEL, WAIT, ENTRY, CLONE, LINE_A, LINE_B,
       REGION_A2, MAIN2, OUTER, NFRAMES };
static const uint32_t fn[NFRAMES] = {
	[ROOT] = ROOT, [MAIN] = MAIN, [STAGE_A] = STAGE_A, [STAGE_B] = STAGE_B, [GOMP] = GOMP,
	[REGION_A] = REGION_A, [REGION_B] = REGION_B, [KERNEL] = KERNEL, [WAIT] = WAIT, [ENTRY] = ENTRY,
	[CLONE] = CLONE, [LINE_A] = LINE_A, [LINE_B] = LINE_B, [REGION_A2] = REGION_A, [MAIN2] = MAIN,
	[OUTER] = OUTER,
};
static const char libgomp[] = "libgomp.so.1";

#define PID 100
#define MAIN_TID 100
#define WORKER_TID 101

static const uint32_t disp_a[] = { ROOT, MAIN, STAGE_A, GOMP, REGION_A, KERNEL };
static const uint32_t disp_b[] = { ROOT, MAIN2, STAGE_B, GOMP, REGION_B, KERNEL };
static const uint32_t serial[] = { ROOT, MAIN, STAGE_A };
static const uint32_t work_a[] = { CLONE, ENTRY, REGION_A2, KERNEL };
static const uint32_t work_b[] = { CLONE, ENTRY, REGION_B, KERNEL };
static const uint32_t waits[] = { CLONE, WAIT };

static struct attr_stack dispatcher(const uint32_t *ids, uint32_t n, uint32_t at)
{
	return (struct attr_stack){ .pid = PID, .tid = MAIN_TID, .ids = ids, .n = n, .kind = EMBER_POOL_OPENMP,
				    .pool = libgomp, .at = at };
}

static struct attr_stack worker(const uint32_t *ids, uint32_t n, uint32_t at, bool wait)
{
	return (struct attr_stack){ .pid = PID, .tid = WORKER_TID, .ids = ids, .n = n, .kind = EMBER_POOL_OPENMP,
				    .pool = libgomp, .worker = true, .wait = wait, .at = at };
}

static struct attr_decision decide(struct attr_plan *pl, uint32_t w, uint64_t time_ns)
{
	struct attr_decision d;
	attr_decide(pl, w, time_ns, &d);
	return d;
}

static bool prefix_is(const struct attr_decision *d, const uint32_t *want, uint32_t n)
{
	if (d->nprefix != n)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (d->prefix[i] != want[i])
			return false;
	return true;
}

/* Bracketing: the dispatcher inside region A's dispatch before and after
 * a worker's sample in region A: under stage_a's GOMP_parallel, region A
 * at another line of it all the same; a sample of region B there is not
 * region A's, and one path answers it instead. */
static void test_bracket_and_region(void)
{
	struct attr_stack st[] = {
		dispatcher(disp_a, 6, 4),     /* 0 */
		dispatcher(disp_b, 6, 4),     /* 1 */
		worker(work_a, 4, 2, false),  /* 2 */
		worker(work_b, 4, 2, false),  /* 3 */
		dispatcher(serial, 3, 0),     /* 4: no dispatch (kind NONE below) */
	};
	st[4].kind = EMBER_POOL_NONE;
	struct attr_plan *pl = attr_plan_new(st, 5, fn, NFRAMES);
	CHECK(pl != NULL);
	CHECK(attr_plan_sample(pl, 10, 0) == 0);
	CHECK(attr_plan_sample(pl, 15, 2) == 0);
	CHECK(attr_plan_sample(pl, 16, 3) == 0);
	CHECK(attr_plan_sample(pl, 20, 0) == 0);
	CHECK(attr_plan_sample(pl, 30, 1) == 0);
	struct attr_decision d;
	d = decide(pl, 2, 15);
	CHECK(d.how == ATTR_BRACKET && prefix_is(&d, disp_a, 4) && !d.path_unknown);
	/* region B between two samples in region A: not bracketed; region B
	 * is only ever dispatched from stage_b */
	d = decide(pl, 3, 16);
	CHECK(d.how == ATTR_ONE_PATH && prefix_is(&d, disp_b, 4));
	/* without a time: region A's one path */
	d = decide(pl, 2, UINT64_MAX);
	CHECK(d.how == ATTR_ONE_PATH && prefix_is(&d, disp_a, 4));
	/* the dispatcher's own stack is no worker's */
	d = decide(pl, 0, 15);
	CHECK(d.how == ATTR_NONE);
	attr_plan_free(pl);
}

/* A wait between two regions goes where the dispatcher was both before
 * and after: main, at a line not known (it was at two lines of it). */
static void test_wait_between_regions(void)
{
	struct attr_stack st[] = {
		dispatcher(disp_a, 6, 4),
		dispatcher(disp_b, 6, 4),
		worker(waits, 2, 1, true),
	};
	struct attr_plan *pl = attr_plan_new(st, 3, fn, NFRAMES);
	CHECK(pl && attr_plan_sample(pl, 10, 0) == 0 && attr_plan_sample(pl, 20, 2) == 0 &&
	      attr_plan_sample(pl, 30, 1) == 0);
	struct attr_decision d;
	d = decide(pl, 2, 20);
	CHECK(d.how == ATTR_BRACKET && prefix_is(&d, disp_a, 1) && d.then == MAIN && d.path_unknown);
	/* the same wait with no time: no one path places a wait */
	d = decide(pl, 2, UINT64_MAX);
	CHECK(d.how == ATTR_NONE && d.why == ATTR_WHY_UNSURE);
	attr_plan_free(pl);
}

/* The peer read: the dispatcher's Python frames at the worker's sample
 * pick, among its dispatching stacks, the one at the same Python frames;
 * a Python line never seen dispatching gets the peer's layout and a
 * marker, as the pool's only dispatcher. */
static void test_peer(void)
{
	static const uint32_t py_a[] = { OUTER, LINE_A }, py_b[] = { OUTER, LINE_B };
	static const uint32_t line_a[] = { OUTER, LINE_A, GOMP, REGION_A, KERNEL };
	static const uint32_t line_b[] = { OUTER, LINE_B, GOMP, REGION_A, KERNEL };
	static const uint32_t line_c[] = { OUTER, LINE_A };   /* the same Python frames, not dispatching */
	struct attr_stack st[] = {
		dispatcher(line_a, 5, 3),
		dispatcher(line_b, 5, 3),
		worker(work_a, 4, 2, false),
		worker(work_a, 4, 2, false),
		worker(waits, 2, 1, true),
	};
	st[0].py = py_a;
	st[0].npy = 2;
	st[1].py = py_b;
	st[1].npy = 2;
	for (int i = 2; i < 5; i++) {
		st[i].peer_tid = MAIN_TID;
		st[i].npy = 2;
	}
	st[2].py = py_a;
	st[3].py = py_b;
	st[4].py = py_a;
	struct attr_plan *pl = attr_plan_new(st, 5, fn, NFRAMES);
	CHECK(pl != NULL);
	struct attr_decision d;
	d = decide(pl, 2, UINT64_MAX);
	CHECK(d.how == ATTR_PEER && prefix_is(&d, line_a, 3));
	d = decide(pl, 3, UINT64_MAX);
	CHECK(d.how == ATTR_PEER && prefix_is(&d, line_b, 3));
	/* waiting while the dispatcher was at line A: under line A itself */
	d = decide(pl, 4, UINT64_MAX);
	CHECK(d.how == ATTR_PEER && prefix_is(&d, line_a, 2));
	attr_plan_free(pl);

	/* Line A never showed the dispatch: its layout from the peer's own
	 * stack there, with the path marked unknown. */
	struct attr_stack st2[] = { dispatcher(line_b, 5, 3), worker(work_a, 4, 2, false),
				    dispatcher(line_c, 2, 0) };
	st2[0].py = py_b;
	st2[0].npy = 2;
	st2[1].py = py_a;
	st2[1].npy = 2;
	st2[1].peer_tid = MAIN_TID;
	st2[2].py = py_a;
	st2[2].npy = 2;
	st2[2].kind = EMBER_POOL_NONE;
	pl = attr_plan_new(st2, 3, fn, NFRAMES);
	CHECK(pl != NULL);
	d = decide(pl, 1, UINT64_MAX);
	CHECK(d.how == ATTR_PEER && prefix_is(&d, line_c, 2) && d.path_unknown);
	attr_plan_free(pl);
}

/* Nothing says which: no dispatching thread at all, or two that disagree. */
static void test_none(void)
{
	struct attr_stack st[] = { worker(work_a, 4, 2, false) };
	struct attr_plan *pl = attr_plan_new(st, 1, fn, NFRAMES);
	struct attr_decision d;
	CHECK(pl != NULL);
	d = decide(pl, 0, 5);
	CHECK(d.how == ATTR_NONE && d.why == ATTR_WHY_NO_DISPATCHER);
	attr_plan_free(pl);

	static const uint32_t other_a[] = { ROOT, MAIN2, STAGE_B, GOMP, REGION_A, KERNEL };
	struct attr_stack st2[] = { dispatcher(disp_a, 6, 4), dispatcher(other_a, 6, 4),
				    worker(work_a, 4, 2, false) };
	st2[1].tid = 102;   /* another thread dispatches region A from elsewhere */
	pl = attr_plan_new(st2, 3, fn, NFRAMES);
	CHECK(pl && attr_plan_sample(pl, 10, 0) == 0 && attr_plan_sample(pl, 11, 1) == 0 &&
	      attr_plan_sample(pl, 20, 2) == 0 && attr_plan_sample(pl, 30, 0) == 0 &&
	      attr_plan_sample(pl, 31, 1) == 0);
	d = decide(pl, 2, 20);
	CHECK(d.how == ATTR_NONE && d.why == ATTR_WHY_SEVERAL);
	attr_plan_free(pl);
}

/* A program's own threads: a worker running the function the other
 * thread also calls itself, always from one place. */
static void test_threads_pool(void)
{
	static const uint32_t run[] = { ROOT, MAIN, STAGE_A, REGION_A, KERNEL };
	static const uint32_t own[] = { CLONE, ENTRY, REGION_A2, KERNEL };
	struct attr_stack st[] = {
		{ .pid = PID, .tid = MAIN_TID, .ids = run, .n = 5 },
		{ .pid = PID, .tid = WORKER_TID, .ids = own, .n = 4, .kind = EMBER_POOL_THREADS, .worker = true,
		  .at = 2 },
	};
	struct attr_plan *pl = attr_plan_new(st, 2, fn, NFRAMES);
	struct attr_decision d;
	CHECK(pl != NULL);
	d = decide(pl, 1, UINT64_MAX);
	CHECK(d.how == ATTR_ONE_PATH && prefix_is(&d, run, 3));
	attr_plan_free(pl);
}

int main(void)
{
	test_bracket_and_region();
	test_wait_between_regions();
	test_peer();
	test_none();
	test_threads_pool();
	return check_report();
}
