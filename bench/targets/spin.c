/* Slowdown target: a fixed number of xorshift iterations (pure user-mode CPU,
 * no syscalls, no allocation).  Prints the CPU time of the work itself and the
 * whole process's CPU (getrusage at exit, startup included).
 * usage: spin [ITERATIONS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>

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

__attribute__((noinline)) static unsigned long work(unsigned long n)
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

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 500000000UL;
	double t0 = cpu_now();
	unsigned long s = work(n);
	double t1 = cpu_now();
	printf("cpu %.6f total %.6f check %lu\n", t1 - t0, rusage_total(), s & 1);
	return 0;
}
