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
/* Whether function, of a module of pool k, is a call that starts a
 * parallel region or hands work to the pool's threads (GOMP_parallel,
 * __kmpc_fork_call, exec_blas, pthreadpool_parallelize_1d, ...). Pools
 * without such a name (TBB's are not exported) are entered at their
 * outermost frame. */
bool ember_pool_dispatch_function(enum ember_pool_kind k, const char *function);
/* Whether function, of a module of pool k, only waits (OpenBLAS's
 * exec_blas_async_wait): for pools whose module also holds the work. */
bool ember_pool_wait_function(enum ember_pool_kind k, const char *function);
/* Whether k's module holds the work its threads do too (OpenBLAS's
 * kernels): there a frame of the module is no sign of waiting. */
bool ember_pool_module_works(enum ember_pool_kind k);
/* Whether a function of the C library only gives the CPU away or sleeps
 * (sched_yield, futex waits, nanosleep, a condition variable's wait): what
 * a pool's spin loop calls between two looks for work. */
bool ember_pool_yield_function(const char *function, const char *module);

#endif
