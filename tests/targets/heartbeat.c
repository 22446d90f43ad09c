/* heartbeat STATEFILE [TRIGGERFILE]: runs until killed.
 *
 * Three threads "hb-worker-0..2" loop forever: light_spin() ~1 ms of CPU, then
 * sleep ~4 ms, counting their loops.  Every ~20 ms main rewrites STATEFILE
 * atomically (write + rename) with one line:
 *   beats=N w0=N w1=N w2=N late=N tids=T0,T1,T2 late_tid=T
 * so a test can check the process keeps making progress (e.g. after a
 * profiler detached).  When TRIGGERFILE is given and appears, main starts a
 * fourth thread "late-worker" that burns CPU in late_burn() until killed --
 * for "a thread created after attach is profiled too". */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "common.h"

#define NWORKERS 3

static atomic_ulong counters[NWORKERS];
static atomic_ulong late_counter;
static atomic_int tids[NWORKERS];
static atomic_int late_tid;
static volatile uint64_t sink;

__attribute__((noipa)) uint64_t light_spin(double secs)
{
	double end = tgt_now() + secs;
	uint64_t x = 5;
	do {
		for (int i = 0; i < 2000; i++) {
			x = x * 0x2545F4914F6CDD1Dull + 1;
			__asm__ volatile("" : "+r"(x));
		}
	} while (tgt_now() < end);
	return x;
}

__attribute__((noipa)) uint64_t late_burn(double secs)
{
	double end = tgt_now() + secs;
	uint64_t x = 9;
	do {
		for (int i = 0; i < 20000; i++) {
			x ^= x << 11;
			x = x * 0x9E3779B97F4A7C15ull;
			__asm__ volatile("" : "+r"(x));
		}
	} while (tgt_now() < end);
	return x;
}

static void *worker(void *arg)
{
	int idx = (int)(intptr_t)arg;
	char name[16];
	snprintf(name, sizeof name, "hb-worker-%d", idx);
	pthread_setname_np(pthread_self(), name);
	atomic_store(&tids[idx], (int)gettid());
	for (;;) {
		sink = light_spin(0.001);
		atomic_fetch_add(&counters[idx], 1);
		usleep(4000);
	}
	return NULL;
}

static void *late_worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "late-worker");
	atomic_store(&late_tid, (int)gettid());
	for (;;) {
		sink = late_burn(0.05);
		atomic_fetch_add(&late_counter, 1);
	}
	return NULL;
}

static void write_state(const char *path, unsigned long beats)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "beats=%lu w0=%lu w1=%lu w2=%lu late=%lu tids=%d,%d,%d late_tid=%d\n", beats,
		atomic_load(&counters[0]), atomic_load(&counters[1]), atomic_load(&counters[2]),
		atomic_load(&late_counter), atomic_load(&tids[0]), atomic_load(&tids[1]),
		atomic_load(&tids[2]), atomic_load(&late_tid));
	fclose(f);
	rename(tmp, path);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: heartbeat STATEFILE [TRIGGERFILE]\n");
		return 2;
	}
	const char *trigger = argc > 2 ? argv[2] : NULL;
	pthread_t t;
	for (int i = 0; i < NWORKERS; i++) {
		if (pthread_create(&t, NULL, worker, (void *)(intptr_t)i)) {
			perror("pthread_create");
			return 1;
		}
	}
	int late_started = 0;
	for (unsigned long beats = 1;; beats++) {
		write_state(argv[1], beats);
		if (trigger && !late_started && access(trigger, F_OK) == 0) {
			if (pthread_create(&t, NULL, late_worker, NULL)) {
				perror("pthread_create");
				return 1;
			}
			late_started = 1;
		}
		usleep(20000);
	}
}
