/* A native stack as the unwinder makes it from one sample (unwinder.h) and
 * the sampler delivers it (sampler.h): its frames, the sample's flags that
 * say how far the walk got, the probes of chosen frames, and the two
 * questions the unwinder may ask its owner while it walks.  Types only. */
#ifndef EMBER_NATIVE_STACK_H
#define EMBER_NATIVE_STACK_H

#include <stdbool.h>
#include <stdint.h>

#include "probe_regs.h"

#define EMBER_NO_MODULE UINT32_MAX  /* address outside every known module */
#define EMBER_MAX_FRAMES 512        /* deepest native stack kept per sample */

/* A native frame: the module it belongs to and the address in that module's
 * ELF virtual-address space.  Caller frames are already return address - 1,
 * so they point into the call instruction.  For EMBER_NO_MODULE, and for a
 * JIT module (ember_module_info.jit_pid), addr is the absolute address in
 * the process. */
struct ember_frame_addr {
	uint32_t module;
	uint32_t flags;                /* enum ember_frame_addr_flags */
	uint64_t addr;
};

enum ember_frame_addr_flags {
	/* This frame has no unwind info (hand-written assembly, JIT code): its
	 * caller, the next frame, was found by scanning the stack copy for a
	 * return address that CFI unwinding goes on from. */
	EMBER_FRAME_SCANNED = 1u << 0,
};

enum ember_sample_flags {
	EMBER_SAMPLE_TRUNCATED    = 1u << 0, /* stack copy ended before the outermost frame */
	EMBER_SAMPLE_UNWIND_ERROR = 1u << 1, /* unwinding stopped early for another reason */
	EMBER_SAMPLE_IN_KERNEL    = 1u << 2, /* sample taken while the thread was in the kernel */
	EMBER_SAMPLE_FRAME_CAP    = 1u << 3, /* with TRUNCATED: cut at EMBER_MAX_FRAMES frames, not by
	                                      * the stack copy (a bigger copy would not help) */
	EMBER_SAMPLE_NO_CFI       = 1u << 4, /* the walk met a frame without usable unwind info ... */
	EMBER_SAMPLE_SCANNED      = 1u << 5, /* ... and found every such frame's caller by a stack
	                                      * scan (else UNWIND_ERROR or TRUNCATED is set) */
	EMBER_SAMPLE_OFF_CPU      = 1u << 6, /* not a sample of the clock: an interval the thread
	                                      * spent off CPU (off_cpu_ns long, ending at time_ns),
	                                      * with the stack it stopped with */
};

/* What one frame held at the sample, recorded for the frames the caller's
 * probe hook picked (ember_sampler_hooks.probe): for readers that must
 * know an interpreter's state at the sample rather than when they read it
 * (the eval loop keeps its instruction pointer in a register or a stack
 * slot).  Candidates are numbered: the registers of probe_regs.h first,
 * then stack words. */
#define EMBER_PROBE_WORDS 96         /* words of the frame's own stack region (Debian 3.14: next_instr 77 words below the CFA) */
#define EMBER_PROBE_CANDIDATES (EMBER_PROBE_REGS + EMBER_PROBE_WORDS)
#define EMBER_MAX_PROBES 64          /* probed frames per sample */
struct ember_frame_probe {
	uint32_t frame;                  /* index into the sample's frames (leaf first) */
	uint64_t pc;                     /* its pc (absolute; inside the call for callers) */
	bool leaf;                       /* the sampled frame itself: every register is known;
	                                  * otherwise only callee-saved ones (probe_regs.h) as
	                                  * the unwinder restored them, the others are 0 */
	uint32_t ncand;                  /* valid candidates: EMBER_PROBE_REGS + stack words */
	/* cand[0..EMBER_PROBE_REGS): the registers; cand[EMBER_PROBE_REGS + k]:
	 * the word at CFA - 8 * (k + 1), inside the frame's own region [SP, CFA)
	 * and the copy */
	uint64_t cand[EMBER_PROBE_CANDIDATES];
};

/* A frame's pc for which to record a struct ember_frame_probe? */
typedef bool (*ember_probe_fn)(void *arg, uint32_t pid, uint64_t pc);
/* Where the JIT function holding addr starts (*start), when known. */
typedef bool (*ember_jit_start_fn)(void *arg, uint32_t pid, uint64_t addr, uint64_t *start);

#endif
