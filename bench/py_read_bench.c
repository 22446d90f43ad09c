/* Cost of one Python stack read (ember_python_read_thread) against the
 * cheapest possible remote read on the same machine, in the same run.
 *
 * usage: ember_py_read_bench PID [READS] [PACE_US]
 *
 * Reads the main thread of PID (a Python process) READS times (default
 * 4000) with two readers -- the library's defaults, and the options `ember
 * record` uses (no GIL check) --
 * alternating with a "floor" read: one 64-byte process_vm_readv of the
 * target's first mapping, the least any remote read can cost.  Each is timed
 * alone.  With PACE_US > 0 every read is preceded
 * by a sleep of that many microseconds, as a sampling profiler's reads are
 * (caches and TLBs are then cold); 0 measures back-to-back reads.
 *
 * Prints one line:
 *   frames=N floor_us=F default_us=D (xD/F) ember_us=E (xE/F) syscalls=S
 * medians over the READS rounds, and each read's ratio to the floor (noise
 * on this kind of machine moves all alike, so the ratio is the stable
 * number); S = process_vm_readv calls per read of the ember-options reader. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "python_stacks.h"

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double median_us(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_u64);
	return (double)v[n / 2] / 1000.0;
}

/* Start of the target's first mapping: always mapped and readable. */
static unsigned long first_mapping(int pid)
{
	char path[64];
	unsigned long lo = 0;
	snprintf(path, sizeof path, "/proc/%d/maps", pid);
	FILE *f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%lx-", &lo) != 1)
			lo = 0;
		fclose(f);
	}
	return lo;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PID [READS] [PACE_US]\n", argv[0]);
		return 2;
	}
	int pid = atoi(argv[1]);
	int reads = argc > 2 ? atoi(argv[2]) : 4000;
	int pace = argc > 3 ? atoi(argv[3]) : 0;
	unsigned long floor_addr = first_mapping(pid);
	if (reads < 1 || !floor_addr) {
		fprintf(stderr, "py_read_bench: bad READS or no such process %d\n", pid);
		return 2;
	}

	struct ember_python *py[2];
	struct ember_python_opts opts[2] = { EMBER_PYTHON_OPTS_DEFAULT, EMBER_PYTHON_OPTS_DEFAULT };
	opts[1].no_gil_check = true;   /* as the session opens readers without --gil */
	char msg[256];
	for (int k = 0; k < 2; k++)
		if (ember_python_open(&py[k], pid, &opts[k], msg, sizeof msg) != EMBER_PY_OK) {
			fprintf(stderr, "py_read_bench: %s\n", msg);
			return 1;
		}
	static struct ember_py_frame frames[256];
	uint32_t flags;
	int n = 0;
	for (int i = 0; i < 50; i++)   /* warm the code caches and the prefetch plans */
		for (int k = 0; k < 2; k++)
			n = ember_python_read_thread(py[k], (uint32_t)pid, frames, 256, &flags);

	uint64_t *t[3];   /* floor, default, ember */
	for (int k = 0; k < 3; k++)
		if (!(t[k] = calloc((size_t)reads, sizeof *t[k])))
			return 1;
	char buf[64];
	struct iovec l = { buf, sizeof buf }, r = { (void *)floor_addr, sizeof buf };
	struct ember_python_stats st0, st1;
	ember_python_stats(py[1], &st0);
	for (int i = 0; i < reads; i++) {
		for (int k = 0; k < 3; k++) {
			if (pace)
				usleep((useconds_t)pace);
			uint64_t t0 = now_ns();
			if (k == 0) {
				if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof buf) {
					fprintf(stderr, "py_read_bench: process %d gone\n", pid);
					return 1;
				}
			} else {
				n = ember_python_read_thread(py[k - 1], (uint32_t)pid, frames, 256, &flags);
			}
			t[k][i] = now_ns() - t0;
		}
	}
	ember_python_stats(py[1], &st1);
	double fl = median_us(t[0], reads), dflt = median_us(t[1], reads), emb = median_us(t[2], reads);
	printf("frames=%d floor_us=%.2f default_us=%.2f (x%.2f) ember_us=%.2f (x%.2f) syscalls=%.2f\n", n, fl, dflt,
	       dflt / fl, emb, emb / fl, (double)(st1.syscalls - st0.syscalls) / reads);
	for (int k = 0; k < 3; k++)
		free(t[k]);
	for (int k = 0; k < 2; k++)
		ember_python_close(py[k]);
	return 0;
}
