/* Thread pools by their code (pools.h; the facts: docs/pools.md). */
#include <stddef.h>
#include <string.h>

#include "pools.h"

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Whether name is one of the list, or starts with one that ends in '*'. */
static bool in_list(const char *name, const char *const *list)
{
	for (; *list; list++) {
		size_t n = strlen(*list);
		if ((*list)[n - 1] == '*' ? strncmp(name, *list, n - 1) == 0 : strcmp(name, *list) == 0)
			return true;
	}
	return false;
}

static const struct pool_facts {
	const char *name, *wait_marker, *knob;
	const char *const *modules;      /* file name prefixes */
	const char *const *dispatch;     /* functions that hand work to its threads */
	const char *const *waits;        /* functions of the module that only wait */
	bool module_works;               /* its module holds the work too */
} pools[EMBER_POOL_KIND_COUNT] = {
	[EMBER_POOL_OPENMP] = {
		"OpenMP", "[OpenMP wait]", "OMP_WAIT_POLICY=passive (GOMP_SPINCOUNT, KMP_BLOCKTIME)",
		(const char *const[]){ "libgomp", "libomp", "libiomp", NULL },
		(const char *const[]){ "GOMP_parallel*", "GOMP_teams*", "__kmpc_fork_call*", "__kmpc_fork_teams",
				       NULL },
		(const char *const[]){ NULL }, false },
	[EMBER_POOL_OPENBLAS] = {
		"OpenBLAS", "[OpenBLAS wait]", "OPENBLAS_NUM_THREADS (OpenBLAS's threads yield while they wait)",
		(const char *const[]){ "libopenblas", NULL },
		(const char *const[]){ "exec_blas", "exec_blas_async", NULL },
		(const char *const[]){ "exec_blas_async_wait", NULL }, true },
	[EMBER_POOL_TBB] = {
		"TBB", "[TBB wait]", "tbb::global_control / cv2.setNumThreads (TBB's threads spin before they sleep)",
		(const char *const[]){ "libtbb.so", NULL },
		(const char *const[]){ NULL },
		(const char *const[]){ NULL }, false },
	[EMBER_POOL_PTHREADPOOL] = {
		"pthreadpool", "[pthreadpool wait]", "torch.set_num_threads (pthreadpool spins before it sleeps)",
		(const char *const[]){ "libpthreadpool", NULL },
		(const char *const[]){ "pthreadpool_parallelize*", NULL },
		(const char *const[]){ NULL }, false },
	[EMBER_POOL_THREADS] = {
		"thread pool", NULL, NULL,
		(const char *const[]){ NULL },
		(const char *const[]){ NULL },
		(const char *const[]){ NULL }, true },
};

const char *ember_pool_name(enum ember_pool_kind k)
{
	return k > EMBER_POOL_NONE && k < EMBER_POOL_KIND_COUNT ? pools[k].name : "";
}

const char *ember_pool_wait_marker(enum ember_pool_kind k)
{
	return k > EMBER_POOL_NONE && k < EMBER_POOL_KIND_COUNT ? pools[k].wait_marker : NULL;
}

const char *ember_pool_wait_knob(enum ember_pool_kind k)
{
	return k > EMBER_POOL_NONE && k < EMBER_POOL_KIND_COUNT && pools[k].knob ? pools[k].knob : "";
}

enum ember_pool_kind ember_pool_of_module(const char *module)
{
	for (int k = EMBER_POOL_NONE + 1; module && k < EMBER_POOL_KIND_COUNT; k++)
		for (const char *const *m = pools[k].modules; *m; m++)
			if (starts_with(module, *m))
				return (enum ember_pool_kind)k;
	return EMBER_POOL_NONE;
}

/* Whether k's module holds the work its threads do too (OpenBLAS's
 * kernels): there a frame of the module is no sign of waiting. */
static bool module_works(enum ember_pool_kind k)
{
	return k > EMBER_POOL_NONE && k < EMBER_POOL_KIND_COUNT && pools[k].module_works;
}

static bool yields(const char *function, const char *module)
{
	static const char *const names[] = {
		"sched_yield", "__sched_yield", "syscall",   /* libgomp and others call futex through syscall() */
		"__futex_abstimed_wait_common*", "futex_wait*", "__lll_lock_wait*", "pthread_cond_wait*",
		"__pthread_cond_wait*", "___pthread_cond_wait*", "pthread_cond_timedwait*",
		"__pthread_cond_timedwait*", "nanosleep", "__nanosleep", "clock_nanosleep*", "__clock_nanosleep*",
		"usleep", "sem_wait*", "__new_sem_wait*", "do_futex_wait*", "pause", NULL,
	};
	return starts_with(module, "libc.so") && in_list(function, names);
}

uint8_t ember_pool_fn(enum ember_pool_kind k, const char *function, const char *module)
{
	if (!function || !module)
		return 0;
	bool known = k > EMBER_POOL_NONE && k < EMBER_POOL_KIND_COUNT;
	return (known && in_list(function, pools[k].dispatch) ? EMBER_POOL_FN_DISPATCH : 0) |
	       (known && in_list(function, pools[k].waits) ? EMBER_POOL_FN_WAIT : 0) |
	       (yields(function, module) ? EMBER_POOL_FN_YIELD : 0);
}

static bool in_pool(const struct ember_pool_group *g, uint8_t kind, const char *module)
{
	return g->kind == kind && g->module == module;
}

/* With the pool's frames from group lo on: whether the leaf only waits
 * (its innermost frames yield, or the innermost is the pool's own and the
 * pool's module holds no work of its own, or is entry itself: a loop that
 * looks for work, or a function that only waits), and where the waiting
 * frames start. */
static bool leaf_waits(const struct ember_pool_group *g, uint32_t lo, uint32_t ng, uint8_t kind,
		       const char *module, uint32_t entry, uint32_t *wait_from)
{
	uint32_t x = ng;
	while (x > lo && (g[x - 1].fn & EMBER_POOL_FN_YIELD))
		x--;
	bool yielding = x < ng;
	if (x == lo)
		return false;   /* nothing of the pool's own at the leaf */
	x--;
	if (!in_pool(&g[x], kind, module))
		return false;
	if (!yielding && module_works(kind) && x != entry && !(g[x].fn & EMBER_POOL_FN_WAIT))
		return false;   /* in the module's own work (OpenBLAS's kernels) */
	uint32_t from = ng;
	while (from > lo && (in_pool(&g[from - 1], kind, module) || (g[from - 1].fn & EMBER_POOL_FN_YIELD)))
		from--;
	*wait_from = from;
	return true;
}

struct ember_pool_plan ember_pool_plan(const struct ember_pool_group *g, uint32_t ng, bool main_thread,
				       bool has_python)
{
	struct ember_pool_plan pl = { .wait_from = UINT32_MAX };
	uint32_t roots = 0;
	while (roots < ng && g[roots].root)
		roots++;
	if (!main_thread && !has_python && roots > 0 && roots < ng) {
		/* A thread of its own with no Python: a pool's worker, by the
		 * function its thread started in. */
		uint8_t kind = g[roots].kind ? g[roots].kind : EMBER_POOL_THREADS;
		const char *module = g[roots].module;
		uint32_t own = roots + 1;
		if (!module_works(kind))
			while (own < ng && in_pool(&g[own], kind, module))
				own++;
		pl = (struct ember_pool_plan){ .kind = kind, .worker = true, .pool = module, .wait_from = UINT32_MAX };
		if (kind != EMBER_POOL_THREADS)
			pl.wait = leaf_waits(g, roots, ng, kind, module, roots, &pl.wait_from);
		pl.at = pl.wait && pl.wait_from < own ? pl.wait_from : own;
		return pl;
	}
	for (uint32_t i = 0; i < ng; i++) {
		if (!g[i].kind)
			continue;
		/* The pool's frames from here on: the dispatch call is the
		 * innermost of its dispatch functions among them, else, in a
		 * runtime that does nothing but run and wait for its threads
		 * (OpenMP, TBB, pthreadpool), the outermost frame. A library
		 * that does its own work (OpenBLAS) dispatched nothing without
		 * such a call. */
		uint32_t end = i, d = UINT32_MAX;
		for (; end < ng && in_pool(&g[end], g[i].kind, g[i].module); end++)
			if (g[end].fn & EMBER_POOL_FN_DISPATCH)
				d = end;
		if (d == UINT32_MAX && !module_works(g[i].kind))
			d = i;
		if (d == UINT32_MAX) {
			i = end - 1;   /* a call into the library that dispatched nothing */
			continue;
		}
		pl = (struct ember_pool_plan){ .kind = g[i].kind, .pool = g[i].module, .at = d, .wait_from = UINT32_MAX };
		pl.wait = leaf_waits(g, d + 1, ng, g[i].kind, g[i].module, d, &pl.wait_from);
		return pl;
	}
	return pl;
}
