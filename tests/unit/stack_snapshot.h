/* Stacks copied in process as the kernel copies them at a sample, through
 * known call chains: with CFI all the way, through a BLAS-style kernel
 * without CFI (in the module, or copied into anonymous memory as JIT code),
 * and through a non-leaf without CFI.  Shared by tests/unit/test_unwind.c
 * and bench/unwind_bench.c.  The register capture and the frames without
 * CFI are assembly, for x86-64 and for AArch64. */
#ifndef EMBER_STACK_SNAPSHOT_H
#define EMBER_STACK_SNAPSHOT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#ifdef UNWIND_BENCH_OLD
#include "sampler_internal.h"   /* another revision's sampler/ (bench/no_cfi_bench.py --old) */
#else
#include "perf_regs.h"
#endif

struct snapshot {
	uint64_t regs[PERF_REGS_COUNT];
	uint8_t stack[65536];
	uint64_t len;
};

/* Copying other frames' stack bytes is what a sampler does; ASan would see
 * it as an out-of-bounds read of those frames' locals. */
__attribute__((no_sanitize_address, noinline, unused)) static void copy_stack(uint8_t *dst, uint64_t sp, uint64_t len)
{
	const volatile uint8_t *src = (const volatile uint8_t *)(uintptr_t)sp;
	for (uint64_t i = 0; i < len; i++)
		dst[i] = src[i];
}

/* Copy the stack above s->regs[SP], as the kernel does: no further than the
 * end of the stack mapping. */
__attribute__((unused)) static void copy_from_sp(struct snapshot *s)
{
	uint64_t sp = s->regs[EMBER_REG_SP];
	s->len = sizeof s->stack;
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned long lo, hi;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && sp >= lo && sp < hi && hi - sp < s->len)
			s->len = hi - sp;
	if (f)
		fclose(f);
	copy_stack(s->stack, sp, s->len);
}

#if defined(__x86_64__)
/* Take the registers libunwind needs, and a copy of the stack above SP, as
 * the kernel would at a sample landing in this function. */
__attribute__((noinline, unused)) static void leaf_snapshot(struct snapshot *s)
{
	uint64_t ip, sp, bp, bx, r12, r13, r14, r15;
	__asm__ volatile("lea 0(%%rip), %0\n\t"
			 "mov %%rsp, %1\n\t"
			 "mov %%rbp, %2\n\t"
			 "mov %%rbx, %3\n\t"
			 "mov %%r12, %4\n\t"
			 "mov %%r13, %5\n\t"
			 "mov %%r14, %6\n\t"
			 "mov %%r15, %7\n\t"
			 : "=r"(ip), "=r"(sp), "=r"(bp), "=r"(bx), "=r"(r12), "=r"(r13), "=r"(r14), "=r"(r15));
	memset(s->regs, 0, sizeof s->regs);
	s->regs[EMBER_REG_PC] = ip;
	s->regs[EMBER_REG_SP] = sp;
	s->regs[X86_REG_BP] = bp;
	s->regs[1] = bx;
	s->regs[16] = r12, s->regs[17] = r13, s->regs[18] = r14, s->regs[19] = r15;
	copy_from_sp(s);
	__asm__ volatile("" ::: "memory");
}
#elif defined(__aarch64__)
/* x0..x29 stored from the register holding the address of regs[0] (perf's
 * arm64 layout: regs[N] is xN, A64_REG_*). */
#define A64_STORE_X0_X29(base)                                                             \
	"stp x0, x1, [" base ", #0]\n\t"    "stp x2, x3, [" base ", #16]\n\t"                \
	"stp x4, x5, [" base ", #32]\n\t"   "stp x6, x7, [" base ", #48]\n\t"                \
	"stp x8, x9, [" base ", #64]\n\t"   "stp x10, x11, [" base ", #80]\n\t"              \
	"stp x12, x13, [" base ", #96]\n\t" "stp x14, x15, [" base ", #112]\n\t"             \
	"stp x16, x17, [" base ", #128]\n\t" "stp x18, x19, [" base ", #144]\n\t"            \
	"stp x20, x21, [" base ", #160]\n\t" "stp x22, x23, [" base ", #176]\n\t"            \
	"stp x24, x25, [" base ", #192]\n\t" "stp x26, x27, [" base ", #208]\n\t"            \
	"stp x28, x29, [" base ", #224]\n\t"
/* Then x30, SP and the PC (of the adr), with x9 as scratch. */
#define A64_STORE_LR_SP_PC(base)                                                           \
	"str x30, [" base ", #240]\n\t"                                                        \
	"mov x9, sp\n\t"                                                                       \
	"str x9, [" base ", #248]\n\t"                                                         \
	"adr x9, .\n\t"                                                                        \
	"str x9, [" base ", #256]\n\t"
_Static_assert(A64_REG_LR == 30 && A64_REG_SP == 31 && A64_REG_PC == 32 && PERF_REGS_COUNT == 33,
	       "the offsets of A64_STORE_LR_SP_PC");

/* Every register, as the kernel records them at a sample landing here,
 * before any call of this function changes x30; then the stack copy. */
__attribute__((noinline, unused)) static void leaf_snapshot(struct snapshot *s)
{
	uint64_t *r = s->regs;
	__asm__ volatile(A64_STORE_X0_X29("%0") A64_STORE_LR_SP_PC("%0") : : "r"(r) : "x9", "memory");
	copy_from_sp(s);
	__asm__ volatile("" ::: "memory");
}
#else
#error "stack_snapshot.h: no register capture for this architecture"
#endif

__attribute__((noinline)) void chain_c(struct snapshot *s) { leaf_snapshot(s); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void chain_b(struct snapshot *s) { chain_c(s); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void chain_a(struct snapshot *s) { chain_b(s); __asm__ volatile("" ::: "memory"); }

/* Written for the asm below, which cannot call a static function. */
void snapshot_copy(struct snapshot *s);
void snapshot_copy(struct snapshot *s)
{
	copy_from_sp(s);
}

void kernel_no_cfi(struct snapshot *s, void (*copy)(struct snapshot *));
extern const uint8_t kernel_no_cfi_end[];
void callback_no_cfi(void (*fn)(struct snapshot *), struct snapshot *s);

#if defined(__x86_64__)
/* kernel_no_cfi: a BLAS-style kernel without CFI.  It saves the callee-saved
 * registers, keeps that SP in rbx, and puts a 12-16 KB page-aligned buffer
 * under it (OpenBLAS's Haswell DGEMM kernel: 28-32 KB), so its return
 * address is past the scan's 512 words from SP and found through rbx.  Its
 * snapshot is taken inside it, as a sample landing there, by calling copy
 * through a register (position-independent: it also runs as a JIT copy).
 * callback_no_cfi: a non-leaf without CFI with a frame of its own, calling
 * back into C. */
__asm__(".text\n"
	".globl kernel_no_cfi\n"
	".type kernel_no_cfi, @function\n"
	"kernel_no_cfi:\n"
	"	push %rbp\n"
	"	push %rbx\n"
	"	push %r12\n"
	"	push %r13\n"
	"	push %r14\n"
	"	push %r15\n"
	"	mov %rsp, %rbx\n"
	"	sub $0x3000, %rsp\n"
	"	and $-4096, %rsp\n"
	"	mov %rdi, %r12\n"
	"	mov %rsi, %r13\n"
	"	lea 0(%rip), %rax\n"
	"	mov %rax, 64(%r12)\n"       /* regs[IP] */
	"	mov %rsp, 56(%r12)\n"       /* regs[SP] */
	"	mov %rbp, 48(%r12)\n"
	"	mov %rbx, 8(%r12)\n"
	"	mov %r12, 128(%r12)\n"
	"	mov %r13, 136(%r12)\n"
	"	mov %r14, 144(%r12)\n"
	"	mov %r15, 152(%r12)\n"
	"	mov %r12, %rdi\n"
	"	call *%r13\n"              /* (pushes below SP: the copy is of what lies above) */
	"	mov %rbx, %rsp\n"
	"	pop %r15\n"
	"	pop %r14\n"
	"	pop %r13\n"
	"	pop %r12\n"
	"	pop %rbx\n"
	"	pop %rbp\n"
	"	ret\n"
	".size kernel_no_cfi, .-kernel_no_cfi\n"
	".globl kernel_no_cfi_end\n"
	"kernel_no_cfi_end:\n"
	".globl callback_no_cfi\n"
	".type callback_no_cfi, @function\n"
	"callback_no_cfi:\n"
	"	push %rbx\n"
	"	push %r12\n"
	"	push %rbp\n"
	"	sub $48, %rsp\n"
	"	mov %rdi, %rbx\n"
	"	mov %rsi, %rdi\n"
	"	movq %rbx, 8(%rsp)\n"       /* a code pointer in its frame: no return address */
	"	call *%rbx\n"
	"	add $48, %rsp\n"
	"	pop %rbp\n"
	"	pop %r12\n"
	"	pop %rbx\n"
	"	ret\n"
	".size callback_no_cfi, .-callback_no_cfi\n");
#elif defined(__aarch64__)
/* kernel_no_cfi: the same kernel in A64.  It saves x29/x30 and the
 * callee-saved registers, keeps that SP in x19 (the frame record at
 * [x19]) and puts the 12-16 KB page-aligned buffer under it; x30 then
 * serves as a counter, as registers do in such kernels, so its return
 * address is only in memory, past the scan's 512 words from SP.  Its
 * snapshot is taken inside it, every register as at a sample there, by
 * calling copy through a register (position-independent: adr only).
 * callback_no_cfi: a non-leaf without CFI with a frame record and a 1 KB
 * frame, calling back into C. */
__asm__(".text\n"
	".globl kernel_no_cfi\n"
	".type kernel_no_cfi, %function\n"
	"kernel_no_cfi:\n"
	"	stp x29, x30, [sp, #-96]!\n"
	"	stp x19, x20, [sp, #16]\n"
	"	stp x21, x22, [sp, #32]\n"
	"	stp x23, x24, [sp, #48]\n"
	"	stp x25, x26, [sp, #64]\n"
	"	stp x27, x28, [sp, #80]\n"
	"	mov x19, sp\n"
	"	sub x9, sp, #0x3000\n"
	"	and sp, x9, #-4096\n"
	"	mov x20, x0\n"
	"	mov x21, x1\n"
	"	mov x30, #16\n"
	A64_STORE_X0_X29("x20")
	A64_STORE_LR_SP_PC("x20")
	"	mov x0, x20\n"
	"	blr x21\n"
	"	mov sp, x19\n"
	"	ldp x27, x28, [sp, #80]\n"
	"	ldp x25, x26, [sp, #64]\n"
	"	ldp x23, x24, [sp, #48]\n"
	"	ldp x21, x22, [sp, #32]\n"
	"	ldp x19, x20, [sp, #16]\n"
	"	ldp x29, x30, [sp], #96\n"
	"	ret\n"
	".size kernel_no_cfi, .-kernel_no_cfi\n"
	".globl kernel_no_cfi_end\n"
	"kernel_no_cfi_end:\n"
	".globl callback_no_cfi\n"
	".type callback_no_cfi, %function\n"
	"callback_no_cfi:\n"
	"	stp x29, x30, [sp, #-32]!\n"
	"	mov x29, sp\n"
	"	stp x19, x20, [sp, #16]\n"
	"	sub sp, sp, #1024\n"
	"	mov x19, x0\n"
	"	str x19, [sp, #8]\n"       /* a code pointer in its frame: no return address */
	"	mov x0, x1\n"
	"	blr x19\n"
	"	add sp, sp, #1024\n"
	"	ldp x19, x20, [sp, #16]\n"
	"	ldp x29, x30, [sp], #32\n"
	"	ret\n"
	".size callback_no_cfi, .-callback_no_cfi\n");
#endif

/* Deep calls with big frames before the kernel runs: their return
 * addresses stay in the memory its buffer then takes, stale, as in a real
 * program.  Each is a direct call to a function with CFI, which the scan
 * ranks after the kernel's own return address. */
__attribute__((noinline)) int stale_maker(int depth);
__attribute__((noinline)) int stale_maker(int depth)
{
	volatile char pad[200];
	pad[0] = (char)depth;
	int r = depth ? stale_maker(depth - 1) : 0;
	return r + pad[0];
}

__attribute__((noinline)) void kern_caller(struct snapshot *s);
__attribute__((noinline)) void kern_caller(struct snapshot *s)
{
	memset(s->regs, 0, sizeof s->regs);
	if (stale_maker(60) < 0)
		return;
	kernel_no_cfi(s, snapshot_copy);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void kern_outer(struct snapshot *s);
__attribute__((noinline)) void kern_outer(struct snapshot *s) { kern_caller(s); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void cb_leaf(struct snapshot *s);
__attribute__((noinline)) void cb_leaf(struct snapshot *s) { leaf_snapshot(s); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void cb_outer(struct snapshot *s);
__attribute__((noinline)) void cb_outer(struct snapshot *s) { callback_no_cfi(cb_leaf, s); __asm__ volatile("" ::: "memory"); }


/* kernel_no_cfi copied into anonymous executable memory: JIT code without
 * CFI, symbol or file.  NULL when that memory cannot be had. */
__attribute__((unused)) static void (*jit_kernel(void))(struct snapshot *, void (*)(struct snapshot *))
{
	size_t len = (size_t)(kernel_no_cfi_end - (const uint8_t *)(uintptr_t)kernel_no_cfi);
	uint8_t *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return NULL;
	memcpy(mem, (const void *)(uintptr_t)kernel_no_cfi, len);
	__builtin___clear_cache((char *)mem, (char *)mem + len);   /* AArch64: the instruction cache */
	if (mprotect(mem, 4096, PROT_READ | PROT_EXEC) != 0)
		return NULL;
	return (void (*)(struct snapshot *, void (*)(struct snapshot *)))(uintptr_t)mem;
}

/* Zero the stack below the caller: a test that unwinds keeps return
 * addresses in its locals, which no real target does. */
__attribute__((noinline)) void scrub_stack(void);
__attribute__((noinline)) void scrub_stack(void)
{
	volatile uint8_t buf[40960];
	for (size_t i = 0; i < sizeof buf; i += 8)
		buf[i] = 0;   /* (every word of the frame: a nonzero byte or two keeps no address intact) */
}

static void (*jit_kernel_fn)(struct snapshot *, void (*)(struct snapshot *));
__attribute__((noinline)) void jit_caller(struct snapshot *s);
__attribute__((noinline)) void jit_caller(struct snapshot *s)
{
	memset(s->regs, 0, sizeof s->regs);
	scrub_stack();
	if (stale_maker(60) < 0)
		return;
	jit_kernel_fn(s, snapshot_copy);
	__asm__ volatile("" ::: "memory");
}

#endif
