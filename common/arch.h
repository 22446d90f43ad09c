/* What ember assumes of the machine beyond its registers (those are
 * unwind/perf_regs.h, unwind/unwind_arch.h, unwind/probe_regs.h and the
 * call decoders of unwind/arch_insn.h): the ELF machine of the programs
 * it reads, the top of user space, and glibc's layout where the Python
 * reader needs it.  Everything here is the machine ember was built for:
 * it profiles programs of its own architecture.  Page sizes are asked of
 * the system (sysconf), never assumed: arm64 kernels run with 4, 16 or
 * 64 KB pages. */
#ifndef EMBER_ARCH_H
#define EMBER_ARCH_H

#include <elf.h>

#if defined(__x86_64__)
#define EMBER_ARCH_NAME "x86_64"
#define EMBER_ELF_MACHINE EM_X86_64
/* User addresses lie below 2^47 (4-level page tables; 5-level ones give a
 * program more only when it asks for it). */
#define EMBER_USER_ADDR_END 0x800000000000ull
/* Where glibc keeps a thread's kernel TID in its struct pthread (glibc
 * 2.36; the reader finds it by search and prefers this on ties). */
#define EMBER_GLIBC_TID_OFF 0x2d0
#elif defined(__aarch64__)
#define EMBER_ARCH_NAME "aarch64"
#define EMBER_ELF_MACHINE EM_AARCH64
/* 48-bit user addresses (4 KB pages, 4 levels; 64 KB pages can give 52). */
#define EMBER_USER_ADDR_END (1ull << 52)
#define EMBER_GLIBC_TID_OFF 0xd0
#else
#error "ember: unsupported architecture (x86-64 and AArch64 are)"
#endif

#endif
