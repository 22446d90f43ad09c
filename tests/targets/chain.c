/* chain SECONDS (default 1.5): main -> a -> b -> hot, and hot spins for
 * SECONDS of its own CPU time (however loaded the machine).
 *
 * Inline frame: mix() is `static inline` + always_inline and is inlined into
 * hot()'s loop; it does almost all of hot's work, so most samples must end in
 * `main;a;b;hot;mix`.
 *
 * a, b and hot are noipa (no inlining, no cloning: no `hot.constprop.0`) and
 * each does work after its call, so no call becomes a tail call. */
#include <stdint.h>
#include "common.h"

static volatile uint64_t sink;

static inline __attribute__((always_inline)) uint64_t mix(uint64_t x)
{
	for (int i = 0; i < 8192; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		x *= 0x9E3779B97F4A7C15ull;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

__attribute__((noipa)) uint64_t hot(double secs)
{
	double end = tgt_cpu_now() + secs;
	uint64_t x = 88172645463325252ull;
	do {   /* (the thread's CPU clock is a system call: under emulation a costly one) */
		for (int i = 0; i < 64; i++)
			x = mix(x);
	} while (tgt_cpu_now() < end);
	return x;
}

__attribute__((noipa)) uint64_t b(double secs)
{
	uint64_t r = hot(secs);
	sink = r;
	return r ^ 0x2;
}

__attribute__((noipa)) uint64_t a(double secs)
{
	uint64_t r = b(secs);
	sink = r;
	return r ^ 0x1;
}

int main(int argc, char **argv)
{
	double secs = tgt_seconds(argc, argv, 1, 1.5);
	sink = a(secs);
	tgt_report_cpu();
	return 0;
}
