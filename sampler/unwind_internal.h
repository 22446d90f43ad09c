/* Private to the unwinder (unwind.c, unwind_space.c, unwind_scan.c): the
 * libunwind address space ember answers from a sample's copy, and the
 * pieces of the stack scan that look at one word or one function.  The
 * method is docs/unwinding.md. */
#ifndef EMBER_UNWIND_INTERNAL_H
#define EMBER_UNWIND_INTERNAL_H

#include <libunwind.h>

#include "sampler_internal.h"

struct unwind_space {
	unw_addr_space_t as;
};

/* Per-sample state handed to every accessor through libunwind's `arg`. */
struct unwind_ctx {
	struct process *proc;
	const struct unwind_input *in;   /* the copy; its regs are the sample's */
	const uint64_t *regs;            /* what a cursor starts from: the sample's, or a scan's */
	bool read_past_copy;             /* a stack read fell above a full copy */
	bool noinfo;                     /* find_proc_info found no CFI during this step */
	uint64_t proc_scans, proc_scan_ns;   /* scans this sample, and their time */
	const struct module_load *last_load; /* where access_mem read last (loads do not move
	                                      * during a sample) */
};

/* libunwind register number -> index in the perf sample's regs[]. */
extern const int8_t unwind_dwarf_to_perf[17];

/* The word at addr from the stack copy; false when it is not in it. */
bool unwind_copy_word(const struct unwind_input *in, uint64_t addr, uint64_t *val);

/* ---- unwind_scan.c ---- */

/* The scan's windows: words looked at above a frame's SP, and above each
 * callee-saved register that points into the copy further up (code that
 * realigns its stack keeps the entry SP in a register: OpenBLAS's Haswell
 * DGEMM kernel puts 28-32 KB of buffer between the two). */
#define SCAN_WORDS 512
#define ANCHOR_WORDS 64
#define ANCHOR_REGS 6

/* What the instruction before a candidate return address says. */
enum candidate {
	CAND_NONE,     /* no call there, or not in a module's code */
	CAND_WEAK,     /* a direct call to a function with CFI that does not hold the callee:
	                * a tail call (the callee was jumped to) or a stale address */
	CAND_GOOD,     /* an indirect call, a call through a PLT stub, or to code without CFI */
};

/* Is ra a return address, to a call that can have gone to callee_pc? */
enum candidate unwind_candidate(const struct process *proc, uint64_t ra, uint64_t callee_pc);

/* Word slots to scan, nearest first: the frame's own region above sp and a
 * window above each callee-saved register of regs that points higher into
 * the copy.  *reg_beyond: such a register points past the end of a full
 * copy; *beyond: that, or the slots reach the end of a full copy. */
size_t unwind_scan_slots(const struct unwind_input *in, uint64_t sp, const uint64_t *regs, uint64_t *slot,
			 size_t max, bool *reg_beyond, bool *beyond);

/* The return address's slot as the prologue of the function holding pc
 * says (pc: where the frame stands; for a caller, its return address):
 * module code with a function symbol, or JIT code whose start the JIT
 * named.  False when it cannot tell. */
bool unwind_prologue_slot(struct process_model *pm, struct process *proc, uint64_t pc, const uint64_t *regs,
			  uint64_t *slot);

#endif
