/* The user registers a perf_event sample carries on x86-64, as ember asks
 * for them: which ones (PERF_REGS_MASK, the event's sample_regs_user) and
 * where each lands in the sample's array of PERF_REGS_COUNT words.  The
 * kernel writes the requested registers in the order of their bit numbers,
 * so the array index is the rank of the bit in the mask, not the bit
 * itself (r8 is bit 16 but index 12; docs/sampling.md).  Shared by the ring
 * reader (perf_ring.c), the unwinder and the prologue decoder
 * (arch_insn.h), which all number registers this way. */
#ifndef EMBER_PERF_REGS_H
#define EMBER_PERF_REGS_H

/* AX BX CX DX SI DI BP SP IP FLAGS CS SS (bits 0-11), R8..R15 (bits 16-23):
 * every general-purpose register, without the segment bases. */
#define PERF_REGS_MASK 0xff0fffULL

enum perf_reg {
	PERF_REG_AX, PERF_REG_BX, PERF_REG_CX, PERF_REG_DX, PERF_REG_SI, PERF_REG_DI,
	PERF_REG_BP, PERF_REG_SP, PERF_REG_IP, PERF_REG_FLAGS, PERF_REG_CS, PERF_REG_SS,
	PERF_REG_R8, PERF_REG_R9, PERF_REG_R10, PERF_REG_R11, PERF_REG_R12, PERF_REG_R13,
	PERF_REG_R14, PERF_REG_R15,
	PERF_REGS_COUNT           /* words of registers per sample */
};

#endif
