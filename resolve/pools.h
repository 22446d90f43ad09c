/* Thread pools by their code: which library a frame belongs to, which of
 * its functions hand work to the pool's threads, and which functions are
 * waiting. The facts each pool needs are in docs/pools.md.
 *
 * A pool is known by the file its code is in (libgomp, libomp, OpenBLAS,
 * TBB, pthreadpool), so that stripped builds (Debian's libgomp and
 * OpenBLAS have no symbol for their threads' loops) are recognised by
 * where their code lies, not by names alone. */
#ifndef EMBER_RESOLVE_POOLS_H
#define EMBER_RESOLVE_POOLS_H

#include <stdbool.h>
#include <stdint.h>

enum ember_pool_kind {
	EMBER_POOL_NONE = 0,
	EMBER_POOL_OPENMP,       /* GNU libgomp, LLVM libomp / Intel libiomp5 */
	EMBER_POOL_OPENBLAS,     /* OpenBLAS's own pthread server */
	EMBER_POOL_TBB,          /* oneTBB / TBB (OpenCV's Debian build) */
	EMBER_POOL_PTHREADPOOL,  /* pthreadpool (PyTorch's XNNPACK, QNNPACK) */
	EMBER_POOL_THREADS,      /* a program's own threads: a pool only by what its dispatcher shows */
	EMBER_POOL_KIND_COUNT
};

/* "OpenMP", "OpenBLAS", "TBB", "pthreadpool", "thread pool"; "" for none. */
const char *ember_pool_name(enum ember_pool_kind k);
/* The marker of its waiting frames: "[OpenMP wait]", ...; NULL for none. */
const char *ember_pool_wait_marker(enum ember_pool_kind k);
/* The environment variable or call that changes how its threads wait. */
const char *ember_pool_wait_knob(enum ember_pool_kind k);

/* The pool library a module is (its file's base name), or EMBER_POOL_NONE. */
enum ember_pool_kind ember_pool_of_module(const char *module);
/* What a function is to a pool (bits). */
enum ember_pool_fn {
	EMBER_POOL_FN_DISPATCH = 1,   /* of a module of pool k, a call that starts a parallel region
	                               * or hands work to the pool's threads (GOMP_parallel,
	                               * __kmpc_fork_call, exec_blas, pthreadpool_parallelize_1d,
	                               * ...); pools without such a name (TBB's are not exported)
	                               * are entered at their outermost frame */
	EMBER_POOL_FN_WAIT = 2,       /* of a module of pool k, a function that only waits
	                               * (OpenBLAS's exec_blas_async_wait): for pools whose module
	                               * also holds the work */
	EMBER_POOL_FN_YIELD = 4,      /* of the C library, a function that only gives the CPU away or
	                               * sleeps (sched_yield, futex waits, nanosleep, a condition
	                               * variable's wait): what a pool's spin loop calls between two
	                               * looks for work */
};
/* The enum ember_pool_fn bits of function (of module, its file's base
 * name) for pool k, the pool of module. */
uint8_t ember_pool_fn(enum ember_pool_kind k, const char *function, const char *module);

/* What one native group of a stack (a captured address: a function and
 * what was inlined into it) is to the pools. */
struct ember_pool_group {
	uint8_t kind;              /* enum ember_pool_kind of its module; EMBER_POOL_NONE */
	uint8_t fn;                /* enum ember_pool_fn bits of its function */
	bool root;                 /* a thread's or the program's first function */
	const char *module;        /* its module's base name, interned: compared by address */
};

/* What a stack is to a thread pool, in groups. */
struct ember_pool_plan {
	uint8_t kind;              /* enum ember_pool_kind; EMBER_POOL_NONE: neither */
	bool worker;               /* a thread of the pool (else its dispatcher) */
	bool wait;                 /* the pool's frames at its leaf only wait */
	const char *pool;          /* the pool's module */
	uint32_t at;               /* worker: its first own group (past its root and the pool's
	                            * loop); dispatcher: the group of the dispatch call */
	uint32_t wait_from;        /* with wait: the first group of the waiting frames */
};

/* The plan of a stack of groups g[0..ng), root first. A thread of its own
 * (not the main thread) with no Python frames and a root is a pool's
 * worker, by the function its thread started in (EMBER_POOL_THREADS when
 * that is no pool library's); any other stack dispatches to the first
 * pool it calls into through a dispatch function (or, for a pool whose
 * module does no work of its own, through its outermost frame). Its
 * leaf waits when the innermost frames yield, or are the pool's own and
 * the module holds no work (or are its wait functions, or the worker's
 * loop itself). */
struct ember_pool_plan ember_pool_plan(const struct ember_pool_group *g, uint32_t ng, bool main_thread,
				       bool has_python);

#endif
