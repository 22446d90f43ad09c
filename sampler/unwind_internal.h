/* Private to the unwinder's files; nothing else includes it.  unwind.c
 * walks a sample and calls down into the others: unwind_scan.c (the stack
 * scan's view of single words and functions), unwind_space.c (libunwind's
 * address space over a sample's copy) and unwind_lock.c; those call only
 * the process model, the ELF view and arch_insn.h.  The method is
 * docs/unwinding.md. */
#ifndef EMBER_UNWIND_INTERNAL_H
#define EMBER_UNWIND_INTERNAL_H

#include <libunwind.h>

#include "unwinder.h"

/* ---- state: per process (unwind.c owns it) and per sample ---- */

/* The first bytes of a JIT function, read from the target once (its
 * prologue tells where its return address is; samples unwound after the
 * process exited can no longer read it).  A small set-associative cache,
 * not a map: its size is bounded, and a miss costs one read. */
#define JIT_CODE_SET_BITS 5
#define JIT_CODE_SETS (1u << JIT_CODE_SET_BITS)
#define JIT_CODE_WAYS 4
#define JIT_CODE_BYTES 256
struct jit_code {
	uint64_t start;            /* 0: empty */
	uint64_t serial;           /* module_load.serial of the load holding start when read */
	uint32_t len;
	uint8_t bytes[JIT_CODE_BYTES];
};

/* What the unwinder keeps for one process. */
struct unwind_proc {
	unw_addr_space_t as;       /* NULL until its first sample */
	uint32_t unmap_gen;        /* the process's unmap_gen when as's cache was last valid */
	struct jit_code *jit_code; /* JIT_CODE_SETS * JIT_CODE_WAYS, allocated on first use */
	uint32_t jit_code_next;    /* the way to replace next */
};

/* Per-sample state handed to every accessor through libunwind's `arg`. */
struct unwind_ctx {
	const struct process *proc;
	const struct unwind_input *in;   /* the copy; its regs are the sample's */
	const uint64_t *regs;            /* what a cursor starts from: the sample's, or a scan's */
	bool read_past_copy;             /* a stack read fell above a full copy */
	bool noinfo;                     /* find_proc_info found no CFI during this step */
	uint64_t proc_scans, proc_scan_ns;   /* scans this sample, and their time */
	const struct module_load *last_load; /* where access_mem read last (loads do not move
	                                      * during a sample) */
};

/* ---- unwind_space.c ---- */

/* A libunwind remote address space answered from struct unwind_ctx, with
 * the global cache on, so caller frames hit the cache.  NULL on failure. */
unw_addr_space_t unwind_space_new(void);

/* libunwind register number -> index in the perf sample's regs[]. */
extern const int8_t unwind_dwarf_to_perf[UNW_X86_64_RIP + 1];

/* The word at addr from the stack copy; false when it is not in it. */
bool unwind_copy_word(const struct unwind_input *in, uint64_t addr, uint64_t *val);

/* How far above a full copy a read still counts as the stack going on past
 * what was copied (rather than a stray address). */
#define PAST_COPY_SLACK (1u << 20)

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
 * module code with a function symbol, or JIT code whose start u's
 * jit_start names (its bytes cached in up).  False when it cannot tell. */
bool unwind_prologue_slot(const struct unwinder *u, struct unwind_proc *up, const struct process *proc,
			  uint64_t pc, const uint64_t *regs, uint64_t *slot);

/* ---- unwind_lock.c: libunwind's signal-blocking lock, made free ---- */

/* Around every use of libunwind on this thread (why: unwind_lock.c). */
void unwind_lock_enter(void);
void unwind_lock_leave(void);

#endif
