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

bool ember_pool_dispatch_function(enum ember_pool_kind k, const char *function)
{
	return k > EMBER_POOL_NONE && k < EMBER_POOL_KIND_COUNT && function && in_list(function, pools[k].dispatch);
}

bool ember_pool_wait_function(enum ember_pool_kind k, const char *function)
{
	return k > EMBER_POOL_NONE && k < EMBER_POOL_KIND_COUNT && function && in_list(function, pools[k].waits);
}

bool ember_pool_module_works(enum ember_pool_kind k)
{
	return k > EMBER_POOL_NONE && k < EMBER_POOL_KIND_COUNT && pools[k].module_works;
}

bool ember_pool_yield_function(const char *function, const char *module)
{
	static const char *const yields[] = {
		"sched_yield", "__sched_yield", "syscall",   /* libgomp and others call futex through syscall() */
		"__futex_abstimed_wait_common*", "futex_wait*", "__lll_lock_wait*", "pthread_cond_wait*",
		"__pthread_cond_wait*", "___pthread_cond_wait*", "pthread_cond_timedwait*",
		"__pthread_cond_timedwait*", "nanosleep", "__nanosleep", "clock_nanosleep*", "__clock_nanosleep*",
		"usleep", "sem_wait*", "__new_sem_wait*", "do_futex_wait*", "pause", NULL,
	};
	return function && module && starts_with(module, "libc.so") && in_list(function, yields);
}
