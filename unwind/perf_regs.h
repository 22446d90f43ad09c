/* The user registers a perf_event sample carries, as ember asks for them,
 * per architecture: which ones (PERF_REGS_MASK, the event's
 * sample_regs_user) and where each lands in the sample's array of
 * PERF_REGS_COUNT words.  The kernel writes the requested registers in the
 * order of their bit numbers, so the array index is the rank of the bit in
 * the mask, not the bit itself (x86-64: r8 is bit 16 but index 12;
 * docs/sampling.md).  Shared by the ring reader (perf_ring.c), the
 * unwinder and the prologue decoder (arch_insn.h), which all number
 * registers this way.
 *
 * Both architectures' numbering is defined on every host, so the decoders
 * of each are built and tested everywhere; EMBER_REG_SP and EMBER_REG_PC,
 * PERF_REGS_MASK and PERF_REGS_COUNT are the machine's. */
#ifndef EMBER_PERF_REGS_H
#define EMBER_PERF_REGS_H

/* x86-64: AX BX CX DX SI DI BP SP IP FLAGS CS SS (bits 0-11), R8..R15
 * (bits 16-23): every general-purpose register, without the segment bases. */
#define X86_REGS_MASK 0xff0fffULL
enum x86_reg {
	X86_REG_AX, X86_REG_BX, X86_REG_CX, X86_REG_DX, X86_REG_SI, X86_REG_DI,
	X86_REG_BP, X86_REG_SP, X86_REG_IP, X86_REG_FLAGS, X86_REG_CS, X86_REG_SS,
	X86_REG_R8, X86_REG_R9, X86_REG_R10, X86_REG_R11, X86_REG_R12, X86_REG_R13,
	X86_REG_R14, X86_REG_R15,
	X86_REGS_COUNT
};

/* AArch64: x0..x28, x29 (the frame pointer), x30 (the link register), sp,
 * pc: bits 0-32, every bit its own index. */
#define A64_REGS_MASK 0x1ffffffffULL
enum a64_reg {
	A64_REG_X0, A64_REG_X19 = 19, A64_REG_X28 = 28, A64_REG_FP = 29, A64_REG_LR = 30,
	A64_REG_SP = 31, A64_REG_PC = 32,
	A64_REGS_COUNT
};

#if defined(__x86_64__)
#define PERF_REGS_MASK X86_REGS_MASK
#define PERF_REGS_COUNT X86_REGS_COUNT
#define EMBER_REG_SP X86_REG_SP
#define EMBER_REG_PC X86_REG_IP
#elif defined(__aarch64__)
#define PERF_REGS_MASK A64_REGS_MASK
#define PERF_REGS_COUNT A64_REGS_COUNT
#define EMBER_REG_SP A64_REG_SP
#define EMBER_REG_PC A64_REG_PC
#else
#error "ember: no perf_event register layout for this architecture"
#endif

#endif
