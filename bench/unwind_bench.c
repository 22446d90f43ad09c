/* The unwinder's cost per sample on stacks copied in process
 * (tests/unit/stack_snapshot.h): a chain with CFI all the way, and chains
 * through a frame without CFI -- a BLAS-style kernel (its return address
 * from its prologue), a non-leaf calling back into C, and the kernel as JIT
 * code, with its start known (perf map) and by the scan alone.
 *
 *   unwind_bench [ROUNDS]   prints "case ns_per_unwind frames scan_ns"
 *
 * Built against this tree's sampler, and by bench/no_cfi_bench.py against an
 * older one with -DUNWIND_BENCH_OLD (only the chain with CFI: the rest is
 * what the scan added), whose unwinder takes the process model itself. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "stack_snapshot.h"
#ifndef UNWIND_BENCH_OLD
#include "unwinder.h"
#endif

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct snapshot snap;

/* What unwind_sample takes first. */
#ifdef UNWIND_BENCH_OLD
typedef struct process_model bench_unwinder;
#else
typedef struct unwinder bench_unwinder;
#endif

static void run(const char *name, bench_unwinder *uw, struct process *self, int rounds)
{
	struct unwind_input in = { .regs = snap.regs, .stack = snap.stack, .stack_len = snap.len,
				   .stack_reserved = snap.len + 8 };
	struct ember_frame_addr frames[128];
	uint32_t flags = 0, n = 0;
	for (int i = 0; i < 100; i++)   /* caches warm, as in a run */
		n = unwind_sample(uw, self, &in, frames, 128, &flags, NULL);
#ifndef UNWIND_BENCH_OLD
	uint64_t scans0 = uw->scans, scan_ns0 = uw->scan_ns;
#endif
	uint64_t t0 = now_ns();
	for (int i = 0; i < rounds; i++) {
		flags = 0;
		n = unwind_sample(uw, self, &in, frames, 128, &flags, NULL);
	}
	double per = (double)(now_ns() - t0) / rounds;
	double scan = 0;
#ifndef UNWIND_BENCH_OLD
	if (uw->scans > scans0)
		scan = (double)(uw->scan_ns - scan_ns0) / (double)(uw->scans - scans0);
#endif
	printf("%s %.0f %u %.0f\n", name, per, n, scan);
}

#ifndef UNWIND_BENCH_OLD
static bool jit_start_of(void *arg, uint32_t pid, uint64_t addr, uint64_t *start)
{
	(void)arg, (void)pid;
	*start = addr & ~4095ull;
	return true;
}
#endif

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20000;
	struct process_model pm;
	process_model_init(&pm);
	struct process *self = process_get(&pm, getpid(), true);
	process_load_proc_maps(&pm, self, true);
#ifdef UNWIND_BENCH_OLD
	bench_unwinder *uw = &pm;
#else
	bench_unwinder unw, *uw = &unw;
	unwinder_init(uw);
#endif

	chain_a(&snap);
	run("cfi_chain", uw, self, rounds);
#ifndef UNWIND_BENCH_OLD
	kern_outer(&snap);
	run("kernel_prologue", uw, self, rounds);
	cb_outer(&snap);
	run("callback_prologue", uw, self, rounds);
	jit_kernel_fn = jit_kernel();
	if (jit_kernel_fn) {
		jit_caller(&snap);
		process_load_proc_maps(&pm, self, true);
		uw->jit_start = jit_start_of;
		run("jit_prologue", uw, self, rounds);
		uw->jit_start = NULL;
		run("jit_scan", uw, self, rounds);
	}
#endif
#ifndef UNWIND_BENCH_OLD
	unwinder_free(uw);
#endif
	process_model_free(&pm);
	return 0;
}
