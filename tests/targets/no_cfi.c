/* no_cfi MODE [CPU-SECONDS] (default 1.5): hand-written assembly without CFI,
 * where almost all the time is spent, so that most samples must be unwound
 * past it.  Each mode's known chain, root first:
 *
 *   entry     main;outer;spin_no_cfi: a leaf that never touches the stack
 *             (its return address stays at [SP]; AArch64: in x30), as a
 *             library's `.init` or a PLT stub without unwind info.
 *   kernel    main;outer_kernel;blas_kernel_no_cfi: a BLAS-style leaf that
 *             saves the callee-saved registers, keeps that SP in rbx
 *             (AArch64: x19, after storing x29/x30 as a frame record) and
 *             puts a 28-32 KB page-aligned buffer under it, as OpenBLAS's
 *             Haswell DGEMM kernel does; called through a function pointer
 *             (OpenBLAS's kernel table).  Before each call, deep calls with
 *             big frames leave stale return addresses where the buffer goes.
 *   callback  main;outer_callback;each_no_cfi;spin_callback: a non-leaf
 *             without CFI, with a frame of its own (AArch64: a frame
 *             record and 1 KB below it), calling back into C.
 * The functions are x86-64 or AArch64 assembly. */
#include <stdint.h>
#include <string.h>
#include "common.h"

uint64_t spin_no_cfi(uint64_t n);
uint64_t blas_kernel_no_cfi(uint64_t n);
uint64_t each_no_cfi(uint64_t (*fn)(uint64_t), uint64_t n);

#if defined(__x86_64__)
__asm__(".text\n"
	".globl spin_no_cfi\n"
	".type spin_no_cfi, @function\n"
	"spin_no_cfi:\n"
	"	mov %rdi, %rax\n"
	"1:	imul %rax, %rax\n"
	"	dec %rdi\n"
	"	jnz 1b\n"
	"	ret\n"
	".size spin_no_cfi, .-spin_no_cfi\n"

	".globl blas_kernel_no_cfi\n"
	".type blas_kernel_no_cfi, @function\n"
	"blas_kernel_no_cfi:\n"
	"	sub $0x60, %rsp\n"
	"	mov %rbx, (%rsp)\n"
	"	mov %rbp, 0x8(%rsp)\n"
	"	mov %r12, 0x10(%rsp)\n"
	"	mov %r13, 0x18(%rsp)\n"
	"	mov %r14, 0x20(%rsp)\n"
	"	mov %r15, 0x28(%rsp)\n"
	"	mov %rsp, %rbx\n"
	"	sub $0x7080, %rsp\n"
	"	and $-4096, %rsp\n"
	"	mov %rdi, %rax\n"
	"	mov %rdi, %rbp\n"
	"	xor %r12, %r12\n"
	"1:	imul %rax, %rax\n"
	"	mov %rax, (%rsp,%r12,8)\n"   /* writes the first 64 words of its buffer */
	"	inc %r12\n"
	"	and $63, %r12\n"
	"	dec %rbp\n"
	"	jnz 1b\n"
	"	mov %rbx, %rsp\n"
	"	mov (%rsp), %rbx\n"
	"	mov 0x8(%rsp), %rbp\n"
	"	mov 0x10(%rsp), %r12\n"
	"	add $0x60, %rsp\n"
	"	ret\n"
	".size blas_kernel_no_cfi, .-blas_kernel_no_cfi\n"

	".globl each_no_cfi\n"
	".type each_no_cfi, @function\n"
	"each_no_cfi:\n"
	"	push %rbx\n"
	"	push %r12\n"
	"	push %r13\n"
	"	sub $48, %rsp\n"
	"	mov %rdi, %rbx\n"
	"	mov %rsi, %r12\n"
	"	xor %r13, %r13\n"
	"	mov %rbx, 8(%rsp)\n"         /* a code pointer in its frame: no return address */
	"1:	mov %r12, %rdi\n"
	"	call *%rbx\n"
	"	add %rax, %r13\n"
	"	dec %r12\n"
	"	jnz 1b\n"
	"	mov %r13, %rax\n"
	"	add $48, %rsp\n"
	"	pop %r13\n"
	"	pop %r12\n"
	"	pop %rbx\n"
	"	ret\n"
	".size each_no_cfi, .-each_no_cfi\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl spin_no_cfi\n"
	".type spin_no_cfi, %function\n"
	"spin_no_cfi:\n"
	"	mov x1, x0\n"
	"1:	mul x1, x1, x1\n"
	"	subs x0, x0, #1\n"
	"	b.ne 1b\n"
	"	mov x0, x1\n"
	"	ret\n"
	".size spin_no_cfi, .-spin_no_cfi\n"

	".globl blas_kernel_no_cfi\n"
	".type blas_kernel_no_cfi, %function\n"
	"blas_kernel_no_cfi:\n"
	"	stp x29, x30, [sp, #-48]!\n"
	"	stp x19, x20, [sp, #16]\n"
	"	stp x21, x22, [sp, #32]\n"
	"	mov x19, sp\n"
	"	sub x9, sp, #0x7, lsl #12\n"
	"	sub x9, x9, #0x80\n"
	"	and sp, x9, #-4096\n"
	"	mov x1, x0\n"
	"	mov x20, x0\n"
	"	mov x21, #0\n"
	"1:	mul x1, x1, x1\n"
	"	str x1, [sp, x21, lsl #3]\n"  /* writes the first 64 words of its buffer */
	"	add x21, x21, #1\n"
	"	and x21, x21, #63\n"
	"	subs x20, x20, #1\n"
	"	b.ne 1b\n"
	"	mov x0, x1\n"
	"	mov sp, x19\n"
	"	ldp x21, x22, [sp, #32]\n"
	"	ldp x19, x20, [sp, #16]\n"
	"	ldp x29, x30, [sp], #48\n"
	"	ret\n"
	".size blas_kernel_no_cfi, .-blas_kernel_no_cfi\n"

	".globl each_no_cfi\n"
	".type each_no_cfi, %function\n"
	"each_no_cfi:\n"
	"	stp x29, x30, [sp, #-48]!\n"
	"	mov x29, sp\n"
	"	stp x19, x20, [sp, #16]\n"
	"	str x21, [sp, #32]\n"
	"	sub sp, sp, #1024\n"
	"	mov x19, x0\n"
	"	mov x20, x1\n"
	"	mov x21, #0\n"
	"	str x19, [sp, #8]\n"         /* a code pointer in its frame: no return address */
	"1:	mov x0, x20\n"
	"	blr x19\n"
	"	add x21, x21, x0\n"
	"	subs x20, x20, #1\n"
	"	b.ne 1b\n"
	"	mov x0, x21\n"
	"	add sp, sp, #1024\n"
	"	ldr x21, [sp, #32]\n"
	"	ldp x19, x20, [sp, #16]\n"
	"	ldp x29, x30, [sp], #48\n"
	"	ret\n"
	".size each_no_cfi, .-each_no_cfi\n");
#else
#error "no_cfi: no assembly for this architecture (x86-64 and AArch64 only)"
#endif

static volatile uint64_t sink;
static uint64_t (*volatile kernel_table[1])(uint64_t) = { blas_kernel_no_cfi };

/* Deep calls with big frames: their return addresses stay behind in the
 * memory the kernel's buffer takes next. */
__attribute__((noinline)) static uint64_t leave_stale(int depth)
{
	volatile char pad[256];
	pad[0] = (char)depth;
	return (depth ? leave_stale(depth - 1) : 0) + (uint64_t)pad[0];
}

__attribute__((noipa)) uint64_t outer(double secs)
{
	double end = tgt_cpu_now() + secs;
	uint64_t x = 0;
	do {
		x += spin_no_cfi(1u << 20);
	} while (tgt_cpu_now() < end);
	return x ^ 1;
}

__attribute__((noipa)) uint64_t outer_kernel(double secs)
{
	double end = tgt_cpu_now() + secs;
	uint64_t x = 0;
	do {
		x += leave_stale(100);
		x += kernel_table[0](1u << 20);
	} while (tgt_cpu_now() < end);
	return x ^ 1;
}

__attribute__((noipa)) uint64_t spin_callback(uint64_t n)
{
	uint64_t x = n;
	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

__attribute__((noipa)) uint64_t outer_callback(double secs)
{
	double end = tgt_cpu_now() + secs;
	uint64_t x = 0;
	do {
		x += each_no_cfi(spin_callback, 64);
	} while (tgt_cpu_now() < end);
	return x ^ 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "entry";
	double secs = tgt_seconds(argc, argv, 2, 1.5);
	if (strcmp(mode, "entry") == 0)
		sink = outer(secs);
	else if (strcmp(mode, "kernel") == 0)
		sink = outer_kernel(secs);
	else if (strcmp(mode, "callback") == 0)
		sink = outer_callback(secs);
	else {
		fprintf(stderr, "usage: no_cfi entry|kernel|callback [CPU-SECONDS]\n");
		return 2;
	}
	tgt_report_cpu();
	return 0;
}
