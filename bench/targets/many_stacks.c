/* A target with many distinct stacks, for what a profile's size costs
 * (checkpoints, the final write): each call walks LEVELS levels, choosing
 * one of two functions at each from the bits of a counter, so that there
 * are 2^LEVELS call paths, each visited in turn; THREADS threads do it, and
 * a profile keeps a thread's stacks apart. Runs for SECONDS.
 * usage: many_stacks [SECONDS=30] [LEVELS=15] [THREADS=2] */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "burn.h"

static double seconds = 30;
static int levels = 15;

static unsigned long walk(int level, unsigned long path, unsigned long n);

__attribute__((noinline)) static unsigned long left(int level, unsigned long path, unsigned long n)
{
	volatile char pad[16];   /* a real frame, not a tail call */
	pad[0] = (char)level;
	unsigned long r = walk(level + 1, path >> 1, n);
	return r + (unsigned long)pad[0];
}

__attribute__((noinline)) static unsigned long right(int level, unsigned long path, unsigned long n)
{
	volatile char pad[24];
	pad[0] = (char)level;
	unsigned long r = walk(level + 1, path >> 1, n);
	return r + (unsigned long)pad[0];
}

__attribute__((noinline)) static unsigned long walk(int level, unsigned long path, unsigned long n)
{
	if (level == levels)
		return burn(n);
	return path & 1 ? right(level, path, n) : left(level, path, n);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
	unsigned long path = (unsigned long)(size_t)arg * 7919, sum = 0;
	double end = now_s() + seconds;
	while (now_s() < end)   /* ~1 ms a path: about one sample each at 999 Hz */
		for (int i = 0; i < 64; i++)
			sum += walk(0, path++, 20000);
	return (void *)(size_t)(sum & 1);
}

int main(int argc, char **argv)
{
	seconds = argc > 1 ? atof(argv[1]) : 30;
	levels = argc > 2 ? atoi(argv[2]) : 15;
	int nthreads = argc > 3 ? atoi(argv[3]) : 2;
	pthread_t t[64];
	nthreads = nthreads < 1 ? 1 : nthreads > 64 ? 64 : nthreads;
	double t0 = cpu_now();
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(size_t)i);
	unsigned long check = 0;
	for (int i = 0; i < nthreads; i++) {
		void *r;
		pthread_join(t[i], &r);
		check += (unsigned long)(size_t)r;
	}
	report(cpu_now() - t0, check);
	return 0;
}
