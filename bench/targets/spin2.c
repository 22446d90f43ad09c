/* Slowdown target: spin's work split over two threads, each a fixed number
 * of xorshift iterations.  Prints burn.h's line; the work's CPU time is
 * both threads' (the process's CPU clock around them).
 * usage: spin2 [ITERATIONS PER THREAD] */
#include <pthread.h>
#include <stdlib.h>

#include "burn.h"

static unsigned long iters, sums[2];

static void *worker(void *arg)
{
	unsigned long *sum = arg;
	*sum = burn(iters);
	return NULL;
}

int main(int argc, char **argv)
{
	iters = argc > 1 ? strtoul(argv[1], NULL, 10) : 300000000UL;
	double t0 = cpu_now();
	pthread_t t;
	if (pthread_create(&t, NULL, worker, &sums[1]) != 0)
		return 1;
	worker(&sums[0]);
	pthread_join(t, NULL);
	report(cpu_now() - t0, sums[0] ^ sums[1]);
	return 0;
}
