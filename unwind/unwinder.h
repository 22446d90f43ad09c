/* The unwinder (unwind.c, with unwind_space.c, unwind_scan.c and
 * unwind_lock.c behind it): one sample's user registers and stack copy to
 * a list of frames, by DWARF CFI through libunwind's remote API and past
 * frames without CFI by a stack scan (docs/unwinding.md).  Used by the
 * sampler (sampler/) and by dump/; the unit tests and bench/unwind_bench.c
 * drive it directly.
 *
 * It reads the process model (process_model.h) and never changes it (the
 * ELF views of its modules index their symbols on first use).  It
 * owns what it caches per process (libunwind's address space with its CFI
 * cache, the first bytes of JIT functions) and drops those caches itself
 * when the model's counters say the process's code changed.
 *
 * Single-threaded: one struct unwinder is used by one thread at a time. */
#ifndef EMBER_UNWINDER_H
#define EMBER_UNWINDER_H

#include <stdbool.h>
#include <stdint.h>

#include "perf_regs.h"
#include "process_model.h"
#include "native_stack.h"

/* One sample as the kernel copied it. */
struct unwind_input {
	const uint64_t *regs;      /* PERF_REGS_COUNT values (perf_regs.h) */
	const uint8_t *stack;      /* copy of the stack from regs[EMBER_REG_SP] up */
	uint64_t stack_len;        /* bytes copied (the sample's dyn_size) */
	uint64_t stack_reserved;   /* bytes requested: a copy that filled them may be cut off */
};

/* Frames to probe (struct ember_frame_probe): fn is asked per frame
 * during the walk, as ember_sampler_hooks.probe documents. */
struct unwind_probes {
	ember_probe_fn fn;
	void *arg;
	struct ember_frame_probe *out;   /* room for EMBER_MAX_PROBES */
	uint32_t n;                      /* out: recorded */
};

struct unwind_proc;                  /* what it caches for one process (unwind.c) */

struct unwinder {
	/* Set by the owner: where a JIT function starts (ember_sampler_hooks.jit_start). */
	ember_jit_start_fn jit_start;
	void *jit_start_arg;
	/* Totals over every sample: stack scans past frames without CFI, and
	 * their elapsed time (ember_now_ns). */
	uint64_t scans, scan_ns;
	/* Return addresses' bits without a pointer signature (unwind_arch.h). */
	uint64_t ra_mask;
	/* Per process, by struct process.index; made on first use. */
	struct unwind_proc *procs;
	size_t procs_cap;
};

void unwinder_init(struct unwinder *u);
void unwinder_free(struct unwinder *u);

/* Unwind one sample of proc into out[0..max) (leaf first; callers' pcs
 * are return address - 1, see struct ember_frame_addr); returns the count.
 * Sets EMBER_SAMPLE_TRUNCATED, _FRAME_CAP, _UNWIND_ERROR, _NO_CFI and
 * _SCANNED in *flags as native_stack.h defines them.  probes: NULL for none. */
uint32_t unwind_sample(struct unwinder *u, const struct process *proc, const struct unwind_input *in,
		       struct ember_frame_addr *out, uint32_t max, uint32_t *flags, struct unwind_probes *probes);

#endif
