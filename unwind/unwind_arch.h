/* The unwinder's facts about the machine, one place per architecture:
 * libunwind's register numbers against the perf sample's
 * (unwind_dwarf_to_perf, unwind_space.c), the registers a caller frame
 * keeps across calls (restored by CFI, so a scan started past a frame
 * without CFI can trust them), the callee-saved registers the scan looks
 * above, whether return addresses go through a link register and frame
 * records, and pointer authentication (docs/unwinding.md, "Per
 * architecture").  Register numbering of the sample itself: perf_regs.h. */
#ifndef EMBER_UNWIND_ARCH_H
#define EMBER_UNWIND_ARCH_H

#include <libunwind.h>
#include <stdint.h>

#include "perf_regs.h"

#if defined(__x86_64__)
#define UNWIND_REG_LAST UNW_X86_64_RIP
/* Callee-saved registers and SP, as libunwind numbers them. */
#define UNWIND_KEPT_REGS                                                                              \
	UNW_X86_64_RBX, UNW_X86_64_RBP, UNW_X86_64_R12, UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15, \
		UNW_X86_64_RSP
/* Callee-saved registers a function without CFI may keep its entry SP in
 * (sample numbering). */
#define UNWIND_ANCHORS X86_REG_BX, X86_REG_BP, X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15
#define ANCHOR_REGS 6
/* A call pushes the return address: no link register, no frame records. */
#define UNWIND_LINK_REG (-1)
#define UNWIND_FRAME_RECORDS 0
/* The caller's SP is right above a scanned return address: one try. */
#define UNWIND_SP_TRIES 1
#define UNWIND_SP_STEP 0
#elif defined(__aarch64__)
#define UNWIND_REG_LAST UNW_AARCH64_PC
#define UNWIND_KEPT_REGS                                                                                 \
	UNW_AARCH64_X19, UNW_AARCH64_X20, UNW_AARCH64_X21, UNW_AARCH64_X22, UNW_AARCH64_X23,             \
		UNW_AARCH64_X24, UNW_AARCH64_X25, UNW_AARCH64_X26, UNW_AARCH64_X27, UNW_AARCH64_X28,     \
		UNW_AARCH64_X29, UNW_AARCH64_SP
#define UNWIND_ANCHORS                                                                         \
	A64_REG_X19, A64_REG_X19 + 1, A64_REG_X19 + 2, A64_REG_X19 + 3, A64_REG_X19 + 4,       \
		A64_REG_X19 + 5, A64_REG_X19 + 6, A64_REG_X19 + 7, A64_REG_X19 + 8, A64_REG_X28, \
		A64_REG_FP
#define ANCHOR_REGS 11
/* bl/blr put the return address in x30; a function that calls others
 * stores it with x29 as a frame record: x29 at [slot - 8], x30 at [slot]. */
#define UNWIND_LINK_REG A64_REG_LR
#define UNWIND_LINK_UNW UNW_AARCH64_X30
#define UNWIND_FRAME_RECORDS 1
/* A frame record can sit below the rest of the callee's frame: the caller's
 * SP is tried at 16-byte steps (the stack's alignment) above the record,
 * up to 128 bytes of the callee's saves and locals past it. */
#define UNWIND_SP_TRIES 9
#define UNWIND_SP_STEP 16
#else
#error "ember: no unwinder register map for this architecture"
#endif

/* libunwind register number -> index in the perf sample's regs[] (-1: none). */
extern const int8_t unwind_dwarf_to_perf[UNWIND_REG_LAST + 1];

/* A return address without its pointer authentication code: AArch64 code
 * built with -mbranch-protection signs the return addresses it stores
 * (ARMv8.3 PAuth: Cortex-A76 and Orin's A78AE have none, newer cores do);
 * the signature sits in the bits above the user address space.  mask is
 * struct unwinder's ra_mask (all ones where nothing is signed). */
static inline uint64_t unwind_strip_ra(uint64_t ra, uint64_t mask)
{
	return ra & mask;
}

/* The mask for unwind_strip_ra on this machine: its user addresses' bits
 * when the CPU signs pointers (HWCAP_PACA), else every bit. */
uint64_t unwind_ra_mask(void);

#endif
