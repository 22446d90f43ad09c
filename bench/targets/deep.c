/* Deep-stack target: main -> rec x (DEPTH+1) -> burn, every frame noinline and
 * built with -fomit-frame-pointer, so only DWARF CFI can unwind it.  With the
 * libc frames (_start, __libc_start_main, __libc_start_call_main) the sampled
 * stack is DEPTH + 6 frames deep.
 * usage: deep [DEPTH] [ITERATIONS] */
#include <stdlib.h>

#include "burn.h"

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long rec(int d, unsigned long n)
{
	volatile char pad[32]; /* a real frame, not a tail call */
	pad[0] = (char)d;
	unsigned long r = d > 0 ? rec(d - 1, n) : burn(n);
	sink += (unsigned long)pad[0];
	return r + 1;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 40;
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 10) : 2000000000UL;
	double t0 = cpu_now();
	unsigned long s = rec(depth, n);
	report(cpu_now() - t0, s);
	return 0;
}
