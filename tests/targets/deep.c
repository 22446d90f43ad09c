/* deep DEPTH CPU-SECONDS (defaults 2000, 1.5): DEPTH nested frames of recurse()
 * (each with a 256-byte local buffer, so ~300 bytes of stack per frame), and
 * bottom_spin() spins for CPU-SECONDS at the bottom.  A sample's stack is then
 * main;recurse x DEPTH;bottom_spin -- far more than a 32 KiB stack copy when
 * DEPTH is 2000, fully inside it when DEPTH is 20. */
#include <stdint.h>
#include "common.h"

static volatile uint64_t sink;

__attribute__((noipa)) uint64_t bottom_spin(double secs)
{
	double end = tgt_cpu_now() + secs;
	uint64_t x = 3;
	do {
		for (int i = 0; i < 20000; i++) {
			x = x * 0x5851F42D4C957F2Dull + 11;
			__asm__ volatile("" : "+r"(x));
		}
	} while (tgt_cpu_now() < end);
	return x;
}

/* n counts down to 1: recurse(DEPTH) makes exactly DEPTH recurse frames. */
__attribute__((noipa)) uint64_t recurse(int n, double secs)
{
	volatile char buf[256];
	for (int i = 0; i < 256; i += 64)
		buf[i] = (char)(n + i);
	uint64_t r = n > 1 ? recurse(n - 1, secs) : bottom_spin(secs);
	return r + (uint64_t)buf[n & 192]; /* uses buf after the call: no tail call */
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 2000;
	double secs = tgt_seconds(argc, argv, 2, 1.5);
	if (depth < 1)
		depth = 1;
	sink = recurse(depth, secs);
	tgt_report_cpu();
	return 0;
}
