/* Thread pools by their code (resolve/pools.h): which functions dispatch,
 * wait or yield, and what a stack is to a pool -- a worker or a
 * dispatcher, where its own frames or the pool's work start, whether its
 * leaf waits -- on stacks laid out as the pools' threads have them
 * (docs/pools.md). */
#include <stdint.h>

#include "check.h"
#include "pools.h"

/* Module names are compared by address, as the profile interns them. */
static const char libc[] = "libc.so.6", gomp[] = "libgomp.so.1", blas[] = "libopenblasp-r0.3.21.so",
		  tbb[] = "libtbb.so.12", app[] = "app", py[] = "python3.11", torch[] = "libtorch_cpu.so";

static struct ember_pool_group root(void)
{
	return (struct ember_pool_group){ .root = true, .module = libc };
}

static struct ember_pool_group in(const char *module, const char *function)
{
	enum ember_pool_kind k = ember_pool_of_module(module);
	return (struct ember_pool_group){ .kind = (uint8_t)k, .fn = ember_pool_fn(k, function, module),
					  .module = module };
}

static void functions(void)
{
	CHECK(ember_pool_of_module("libgomp.so.1") == EMBER_POOL_OPENMP);
	CHECK(ember_pool_of_module("libomp.so.5") == EMBER_POOL_OPENMP);
	CHECK(ember_pool_of_module("libopenblas64_p-r0.3.21.so") == EMBER_POOL_OPENBLAS);
	CHECK(ember_pool_of_module("libtbb.so.12") == EMBER_POOL_TBB);
	CHECK(ember_pool_of_module("libtbbmalloc.so.2") == EMBER_POOL_NONE);   /* TBB's allocator runs no threads */
	CHECK(ember_pool_of_module("libc.so.6") == EMBER_POOL_NONE);
	CHECK(ember_pool_of_module(NULL) == EMBER_POOL_NONE);
	CHECK(ember_pool_fn(EMBER_POOL_OPENMP, "GOMP_parallel", gomp) == EMBER_POOL_FN_DISPATCH);
	CHECK(ember_pool_fn(EMBER_POOL_OPENMP, "__kmpc_fork_call", "libomp.so.5") == EMBER_POOL_FN_DISPATCH);
	CHECK(ember_pool_fn(EMBER_POOL_OPENBLAS, "exec_blas", blas) == EMBER_POOL_FN_DISPATCH);
	CHECK(ember_pool_fn(EMBER_POOL_OPENBLAS, "exec_blas_async_wait", blas) == EMBER_POOL_FN_WAIT);
	CHECK(ember_pool_fn(EMBER_POOL_OPENBLAS, "dgemm_kernel_HASWELL", blas) == 0);
	CHECK(ember_pool_fn(EMBER_POOL_NONE, "sched_yield", libc) == EMBER_POOL_FN_YIELD);
	CHECK(ember_pool_fn(EMBER_POOL_NONE, "__futex_abstimed_wait_common64", libc) == EMBER_POOL_FN_YIELD);
	CHECK(ember_pool_fn(EMBER_POOL_NONE, "sched_yield", app) == 0);      /* only the C library's */
	CHECK(ember_pool_fn(EMBER_POOL_NONE, "GOMP_parallel", app) == 0);    /* only in the pool's module */
	CHECK(ember_pool_fn(EMBER_POOL_OPENMP, NULL, gomp) == 0);
}

/* An OpenMP worker: clone, start_thread, libgomp's loop, then the region
 * (work), or libgomp's wait, into futex (waiting). */
static void openmp_worker(void)
{
	struct ember_pool_group work[] = { root(), root(), in(gomp, "[libgomp+0x1e2fc]"), in(torch, "region._omp_fn.0"),
					   in(torch, "kernel") };
	struct ember_pool_plan p = ember_pool_plan(work, 5, false, false);
	CHECK(p.kind == EMBER_POOL_OPENMP && p.worker && !p.wait && p.pool == gomp);
	CHECK(p.at == 3);   /* the region: its first own frame */
	struct ember_pool_group wait[] = { root(), root(), in(gomp, "[libgomp+0x1e2fc]"), in(gomp, "[libgomp+0x1e100]"),
					   in(libc, "syscall") };
	p = ember_pool_plan(wait, 5, false, false);
	CHECK(p.kind == EMBER_POOL_OPENMP && p.worker && p.wait);
	CHECK(p.wait_from == 2 && p.at == 2);   /* the wait mark stands for the pool's frames */
	/* The main thread, or a thread with Python frames, is no worker. */
	p = ember_pool_plan(work, 5, true, false);
	CHECK(!p.worker);
	p = ember_pool_plan(work, 5, false, true);
	CHECK(!p.worker);
}

/* OpenBLAS's module holds its kernels: a worker in a kernel works, one in
 * its own loop waits; a caller dispatches only through exec_blas. */
static void openblas(void)
{
	struct ember_pool_group work[] = { root(), root(), in(blas, "blas_thread_server"), in(blas, "inner_thread"),
					   in(blas, "dgemm_kernel_HASWELL") };
	struct ember_pool_plan p = ember_pool_plan(work, 5, false, false);
	CHECK(p.kind == EMBER_POOL_OPENBLAS && p.worker && !p.wait && p.at == 3);
	struct ember_pool_group spin[] = { root(), root(), in(blas, "blas_thread_server") };
	p = ember_pool_plan(spin, 3, false, false);
	CHECK(p.worker && p.wait && p.wait_from == 2);
	struct ember_pool_group yielding[] = { root(), root(), in(blas, "blas_thread_server"), in(libc, "sched_yield") };
	p = ember_pool_plan(yielding, 4, false, false);
	CHECK(p.worker && p.wait && p.wait_from == 2);
	struct ember_pool_group call[] = { root(), in(py, "main"), in(blas, "cblas_dgemm"), in(blas, "dgemm_thread_nn"),
					   in(blas, "exec_blas"), in(blas, "inner_thread"), in(blas, "dgemm_kernel_HASWELL") };
	p = ember_pool_plan(call, 7, true, true);
	CHECK(p.kind == EMBER_POOL_OPENBLAS && !p.worker && !p.wait && p.at == 4);
	struct ember_pool_group waiting[] = { root(), in(py, "main"), in(blas, "cblas_dgemm"), in(blas, "exec_blas"),
					      in(blas, "exec_blas_async_wait"), in(libc, "sched_yield") };
	p = ember_pool_plan(waiting, 6, true, true);
	CHECK(!p.worker && p.wait && p.at == 3 && p.wait_from == 4);
	/* A call into OpenBLAS that hands nothing out (a small product) is no dispatch. */
	struct ember_pool_group serial[] = { root(), in(py, "main"), in(blas, "cblas_dgemm"), in(blas, "dgemm_kernel_HASWELL") };
	p = ember_pool_plan(serial, 4, true, true);
	CHECK(p.kind == EMBER_POOL_NONE);
}

/* A dispatcher through GOMP_parallel: its own share of the region after the
 * call is work; TBB, without exported dispatch names, is entered at its
 * outermost frame. */
static void dispatchers(void)
{
	struct ember_pool_group omp[] = { root(), in(app, "main"), in(gomp, "GOMP_parallel"), in(app, "region._omp_fn.0") };
	struct ember_pool_plan p = ember_pool_plan(omp, 4, true, false);
	CHECK(p.kind == EMBER_POOL_OPENMP && !p.worker && !p.wait && p.at == 2);
	struct ember_pool_group omp_wait[] = { root(), in(app, "main"), in(gomp, "GOMP_parallel"), in(gomp, "[libgomp+0x1d00]"),
					       in(libc, "syscall") };
	p = ember_pool_plan(omp_wait, 5, true, false);
	CHECK(!p.worker && p.wait && p.at == 2 && p.wait_from == 3);
	struct ember_pool_group t[] = { root(), in(app, "main"), in(tbb, "[libtbb+0x3f00]"), in(tbb, "[libtbb+0x2a00]"),
					in(app, "body") };
	p = ember_pool_plan(t, 5, true, false);
	CHECK(p.kind == EMBER_POOL_TBB && !p.worker && !p.wait && p.at == 2);
	struct ember_pool_group none[] = { root(), in(app, "main"), in(app, "work") };
	p = ember_pool_plan(none, 3, true, false);
	CHECK(p.kind == EMBER_POOL_NONE && !p.worker && !p.wait);
}

/* A program's own thread: a pool only by the function its thread started in. */
static void own_threads(void)
{
	struct ember_pool_group g[] = { root(), root(), in(app, "worker_loop"), in(app, "work") };
	struct ember_pool_plan p = ember_pool_plan(g, 4, false, false);
	CHECK(p.kind == EMBER_POOL_THREADS && p.worker && !p.wait && p.pool == app && p.at == 3);
	/* A stack that is all root (no function of its own yet) is nothing. */
	p = ember_pool_plan(g, 2, false, false);
	CHECK(p.kind == EMBER_POOL_NONE);
}

int main(void)
{
	functions();
	openmp_worker();
	openblas();
	dispatchers();
	own_threads();
	return check_report();
}
