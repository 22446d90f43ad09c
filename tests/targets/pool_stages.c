/* pool_stages [SECONDS] (default 2): a thread pool of the program's own
 * (two workers, a mutex and two condition variables), as a C program
 * writes one.  main runs two stages and a serial one in turn for SECONDS
 * of wall time; each stage hands its kernel to the pool over a range split
 * three ways, main taking the first third itself (as OpenMP's, OpenBLAS's
 * and TBB's callers do), and waits for the workers.  Each stage measures
 * the process's CPU time it took (every thread's), printed at the end as
 * "stage NAME SECONDS". */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include "common.h"

#define WORKERS 2
#define N (1 << 15)

typedef void (*job_fn)(int lo, int hi);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t posted = PTHREAD_COND_INITIALIZER, finished = PTHREAD_COND_INITIALIZER;
static job_fn job;
static unsigned generation, pending;
static double buf[N];

static void *pool_worker(void *arg)
{
	int me = (int)(long)arg;
	unsigned seen = 0;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (generation == seen)
			pthread_cond_wait(&posted, &lock);
		seen = generation;
		job_fn fn = job;
		pthread_mutex_unlock(&lock);
		fn(N / (WORKERS + 1) * (me + 1), N / (WORKERS + 1) * (me + 2));
		pthread_mutex_lock(&lock);
		if (--pending == 0)
			pthread_cond_signal(&finished);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

/* fn over [0, N): the workers take two thirds, the caller the first. */
__attribute__((noipa)) static void parallel_run(job_fn fn)
{
	pthread_mutex_lock(&lock);
	job = fn;
	pending = WORKERS;
	generation++;
	pthread_cond_broadcast(&posted);
	pthread_mutex_unlock(&lock);
	fn(0, N / (WORKERS + 1));
	pthread_mutex_lock(&lock);
	while (pending)
		pthread_cond_wait(&finished, &lock);
	pthread_mutex_unlock(&lock);
}

__attribute__((noipa)) void kernel_exp(int lo, int hi)
{
	for (int i = lo; i < hi; i++) {
		double x = i;
		for (int k = 0; k < 50; k++)
			x = exp(-x) + 0.5;
		buf[i] = x;
	}
}

__attribute__((noipa)) void kernel_log(int lo, int hi)
{
	for (int i = lo; i < hi; i++) {
		double x = i + 2;
		for (int k = 0; k < 50; k++)
			x = log(x) + 2;
		buf[i] += x;
	}
}

__attribute__((noipa)) void stage_exp(void)
{
	parallel_run(kernel_exp);
	buf[1]++;
}

__attribute__((noipa)) void stage_log(void)
{
	parallel_run(kernel_log);
	buf[2]++;
}

__attribute__((noipa)) void stage_serial(void)
{
	double x = 0;
	for (int i = 0; i < N * 40; i++)
		x += sqrt(i);
	buf[0] = x;
}

int main(int argc, char **argv)
{
	double secs = tgt_seconds(argc, argv, 1, 2.0), t_exp = 0, t_log = 0, t_serial = 0, t;
	pthread_t th[WORKERS];
	for (long i = 0; i < WORKERS; i++)
		pthread_create(&th[i], NULL, pool_worker, (void *)i);
	double end = tgt_now() + secs;
	while (tgt_now() < end) {
		t = tgt_process_cpu_now();
		stage_exp();
		t_exp += tgt_process_cpu_now() - t;
		t = tgt_process_cpu_now();
		stage_log();
		t_log += tgt_process_cpu_now() - t;
		t = tgt_process_cpu_now();
		stage_serial();
		t_serial += tgt_process_cpu_now() - t;
	}
	printf("stage stage_exp %.6f\nstage stage_log %.6f\nstage stage_serial %.6f\n", t_exp, t_log, t_serial);
	return 0;
}
