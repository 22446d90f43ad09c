/* Machine code, per architecture, as unwinding past code without CFI needs
 * it: is the instruction that ends where a return address points a call,
 * and where did it go?  Is a call target a PLT stub?  And what does a
 * function's prologue do to the stack pointer?
 *
 * The stack scan (unwind.c) uses this to tell a return address from any
 * other pointer into code that a stack holds (a function pointer, a stale
 * value), and to find a frame's return address from its prologue.  The
 * decoders are plain functions of bytes, so every architecture's is built
 * and tested on every host; the ARCH_ macros pick the machine's.
 * docs/unwinding.md describes the encodings. */
#ifndef EMBER_ARCH_INSN_H
#define EMBER_ARCH_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum call_kind {
	CALL_NONE = 0,      /* the bytes before ra do not end in a call */
	CALL_DIRECT,        /* a call with its target in the instruction (*target set) */
	CALL_INDIRECT,      /* a call through a register or memory: target unknown */
};

/* The longest instruction any decoder looks back over. */
#define CALL_INSN_MAX 8

/* before[0..n) are the n bytes that end right before the return address ra
 * (before[n - 1] is the byte at ra - 1).  n may be less than CALL_INSN_MAX
 * near the start of a code segment. */
enum call_kind call_before_x86_64(const uint8_t *before, size_t n, uint64_t ra, uint64_t *target);
enum call_kind call_before_aarch64(const uint8_t *before, size_t n, uint64_t ra, uint64_t *target);

/* Do the n bytes at a call's target start a PLT stub (a jump through the
 * GOT to a function elsewhere)?  Then the target tells nothing of where the
 * call went. */
bool plt_stub_x86_64(const uint8_t *code, size_t n);
bool plt_stub_aarch64(const uint8_t *code, size_t n);

/* What a function's first instructions did to the stack pointer, up to a
 * point in the function: where its return address is, and where its
 * caller's SP was.  Registers are numbered as they sit in a perf_event
 * sample (perf_regs.h). */
struct prologue {
	bool sp_known;        /* the return address is at SP + sp_off (unless ra_in_lr) */
	uint64_t sp_off;
	int anchor;           /* >= 0: a callee-saved register holding SP at some point: the
	                       * return address is at its value + anchor_off (x86-64) */
	uint64_t anchor_off;
	uint64_t entry_off;   /* the caller's SP is SP + entry_off; with !sp_known, the
	                       * anchor's value + entry_off (as fp_off below) */
	bool ra_in_lr;        /* AArch64: not stored yet, the link register holds it */
	bool fp_saved;        /* AArch64: the caller's x29 is at SP + fp_off */
	uint64_t fp_off;
};
/* code[0..n): the function from its first byte up to the pc the frame
 * stands at.  Knows the instructions hand-written prologues use (pushes,
 * stack adjustments, register saves, a copy of SP, a realignment; on
 * AArch64 stores of register pairs and single registers, pre-indexed or
 * not, SP subtractions, `mov xN, sp` into x19-x28 and `and sp` realigning)
 * and stops at the first other one, taking the
 * stack pointer as unchanged after it.  False when it could tell nothing. */
bool prologue_x86_64(const uint8_t *code, size_t n, struct prologue *p);
bool prologue_aarch64(const uint8_t *code, size_t n, struct prologue *p);

#if defined(__x86_64__)
#define ARCH_CALL_BEFORE call_before_x86_64
#define ARCH_PLT_STUB plt_stub_x86_64
#define ARCH_PROLOGUE prologue_x86_64
#elif defined(__aarch64__)
#define ARCH_CALL_BEFORE call_before_aarch64
#define ARCH_PLT_STUB plt_stub_aarch64
#define ARCH_PROLOGUE prologue_aarch64
#else
#error "ember: no call-instruction decoder for this architecture"
#endif

#endif
