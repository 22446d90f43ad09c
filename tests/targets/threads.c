/* threads CPU-SECONDS (default 1.5): two pthreads, named "worker-alpha" and
 * "worker-beta" (pthread_setname_np, set before they burn), burning
 * alpha_burn() and beta_burn() for CPU-SECONDS each while main joins.  After the join
 * it prints "alpha_tid=N", "beta_tid=N" and "cpu_seconds=X" on stdout. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>
#include "common.h"

static double secs;
static volatile uint64_t sink;
static pid_t alpha_tid, beta_tid;

__attribute__((noipa)) uint64_t alpha_burn(double s)
{
	double end = tgt_cpu_now() + s;
	uint64_t x = 1;
	do {
		for (int i = 0; i < 20000; i++) {
			x = x * 2862933555777941757ull + 3037000493ull;
			__asm__ volatile("" : "+r"(x));
		}
	} while (tgt_cpu_now() < end);
	return x;
}

__attribute__((noipa)) uint64_t beta_burn(double s)
{
	double end = tgt_cpu_now() + s;
	uint64_t x = 7;
	do {
		for (int i = 0; i < 20000; i++) {
			x ^= x << 7;
			x ^= x >> 9;
			__asm__ volatile("" : "+r"(x));
		}
	} while (tgt_cpu_now() < end);
	return x;
}

static void *alpha_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "worker-alpha");
	alpha_tid = gettid();
	sink = alpha_burn(secs);
	return NULL;
}

static void *beta_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "worker-beta");
	beta_tid = gettid();
	sink = beta_burn(secs);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t ta, tb;
	secs = tgt_seconds(argc, argv, 1, 1.5);
	if (pthread_create(&ta, NULL, alpha_main, NULL) || pthread_create(&tb, NULL, beta_main, NULL)) {
		perror("pthread_create");
		return 1;
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	printf("alpha_tid=%d\nbeta_tid=%d\n", (int)alpha_tid, (int)beta_tid);
	tgt_report_cpu();
	return 0;
}
