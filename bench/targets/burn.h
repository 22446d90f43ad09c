/* What the C bench targets share: a pure user-mode CPU burn (xorshift, no
 * syscalls, no allocation) and the report line bench.py parses:
 *   cpu WORK_SECONDS total PROCESS_CPU_SECONDS check BIT
 * WORK_SECONDS is the CPU time of the burn itself; PROCESS_CPU_SECONDS the
 * whole process's (getrusage at exit, start-up included). */
#ifndef EMBER_BENCH_BURN_H
#define EMBER_BENCH_BURN_H

#include <stdio.h>
#include <time.h>
#include <sys/resource.h>

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void report(double work_s, unsigned long check)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double total = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
	printf("cpu %.6f total %.6f check %lu\n", work_s, total, check & 1);
}

/* n xorshift steps; the sum keeps the compiler from dropping the loop */
__attribute__((noinline)) static unsigned long burn(unsigned long n)
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

#endif
