/* The stack scan's view of single words and single functions
 * (unwind_scan.c), for the walk that tries its candidates (unwind.c): the
 * scan's windows, what a candidate return address is worth, and where a
 * prologue puts the return address, with the per-process cache of JIT
 * functions' first bytes that last one reads through.  It calls the
 * process model, the ELF view, arch_insn.h and the stack copy's reads
 * (unwind_space.h). */
#ifndef EMBER_UNWIND_SCAN_H
#define EMBER_UNWIND_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind_arch.h"
#include "unwinder.h"

/* The scan's windows: words looked at above a frame's SP, and above each
 * callee-saved register that points into the copy further up (code that
 * realigns its stack keeps the entry SP in a register: OpenBLAS's Haswell
 * DGEMM kernel puts 28-32 KB of buffer between the two). */
#define SCAN_WORDS 512
#define ANCHOR_WORDS 64   /* (ANCHOR_REGS: unwind_arch.h) */

/* The first bytes of JIT functions of one process, read from the target
 * once each (unwind_scan.c says how).  Zero is empty; the owner keeps one
 * per process and frees it with unwind_jit_code_free. */
struct jit_code;
struct jit_code_cache {
	struct jit_code *sets;     /* allocated on first use */
	uint32_t next;             /* the way to replace next */
};

void unwind_jit_code_free(struct jit_code_cache *jc);

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

/* A caller as a frame without CFI leaves it: its return address, its SP
 * and, when known, its frame pointer (AArch64 frame records). */
struct caller_guess {
	uint64_t ra, sp;
	bool fp_known;
	uint64_t fp;
};

/* The caller as the prologue of the function holding pc says (pc: where
 * the frame stands; for a caller, its return address): the return address
 * from its slot in the copy or, before the prologue stored it, from the
 * link register.  Module code with a function symbol, or JIT code whose
 * start u's jit_start names (its bytes cached in jc).  False when it cannot
 * tell.  The return address is stripped of any pointer signature. */
bool unwind_prologue_caller(const struct unwinder *u, struct jit_code_cache *jc, const struct process *proc,
			    const struct unwind_input *in, uint64_t pc, const uint64_t *regs,
			    struct caller_guess *g);

/* The caller when the scan found its return address in slot: its SP right
 * above the slot, and on AArch64 the frame pointer stored below it as a
 * frame record, when that points higher up the copy. */
void unwind_slot_caller(const struct unwind_input *in, uint64_t slot, struct caller_guess *g);

#endif
