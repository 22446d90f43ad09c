/* no_cfi SECONDS (default 1.5): main -> outer -> spin_no_cfi, where
 * spin_no_cfi is hand-written assembly without CFI (as a library's `.init`
 * from crti.o, or a PLT without unwind info) that never touches the stack:
 * its return address stays at [SP].  Almost all the time is spent in it, so
 * most samples must read main;outer;spin_no_cfi, not spin_no_cfi alone. */
#include <stdint.h>
#include "common.h"

uint64_t spin_no_cfi(uint64_t n);

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
	".size spin_no_cfi, .-spin_no_cfi\n");
#else
#error "no_cfi: x86_64 only (its spin is x86_64 assembly)"
#endif

static volatile uint64_t sink;

__attribute__((noipa)) uint64_t outer(double secs)
{
	double end = tgt_now() + secs;
	uint64_t x = 0;
	do {
		x += spin_no_cfi(1u << 20);
	} while (tgt_now() < end);
	sink = x;
	return x ^ 1;
}

int main(int argc, char **argv)
{
	double secs = tgt_seconds(argc, argv, 1, 1.5);
	sink = outer(secs);
	tgt_report_cpu();
	return 0;
}
