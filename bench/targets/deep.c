/* Deep-stack target: main -> rec x (DEPTH+1) -> spin, every frame noinline and
 * built with -fomit-frame-pointer, so only DWARF CFI can unwind it.  With the
 * libc frames (_start, __libc_start_main, __libc_start_call_main) the sampled
 * stack is DEPTH + 6 frames deep.
 * usage: deep [DEPTH] [ITERATIONS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>

static volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double rusage_total(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

__attribute__((noinline)) static unsigned long spin(unsigned long n)
{
	unsigned long x = 88172645463325252UL, s = 0;
	for (unsigned long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		s += x;
	}
	return s;
}

__attribute__((noinline)) static unsigned long rec(int d, unsigned long n)
{
	volatile char pad[32]; /* a real frame, not a tail call */
	pad[0] = (char)d;
	unsigned long r = d > 0 ? rec(d - 1, n) : spin(n);
	sink += (unsigned long)pad[0];
	return r + 1;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 40;
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 10) : 2000000000UL;
	double t0 = cpu_now();
	unsigned long s = rec(depth, n);
	double t1 = cpu_now();
	printf("cpu %.6f total %.6f check %lu\n", t1 - t0, rusage_total(), s & 1);
	return 0;
}
