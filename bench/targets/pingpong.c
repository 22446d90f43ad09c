/* Context-switch-heavy target for bench/offcpu_bench.py: two threads pass
 * one byte back and forth over two pipes, ROUNDS times (argv[1]), each
 * blocking in read() until the other writes.  Prints the work's elapsed
 * time ("elapsed_s=...") from CLOCK_MONOTONIC, start to end of the rounds. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];
static long rounds;

static void *responder(void *arg)
{
	char c;
	(void)arg;
	for (long i = 0; i < rounds; i++)
		if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
			exit(1);
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atol(argv[1]) : 100000;
	if (pipe(ping) || pipe(pong))
		return 1;
	pthread_t t;
	pthread_create(&t, NULL, responder, NULL);
	char c = 'x';
	double t0 = now();
	for (long i = 0; i < rounds; i++)
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			return 1;
	double t1 = now();
	pthread_join(t, NULL);
	printf("elapsed_s=%.6f\n", t1 - t0);
	return 0;
}
