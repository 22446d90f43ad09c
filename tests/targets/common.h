/* Shared helpers for ember's end-to-end target programs (tests/targets).
 * Header-only on purpose: every target is a single self-contained program. */
#ifndef EMBER_TARGET_COMMON_H
#define EMBER_TARGET_COMMON_H

/* A function that stays a frame of its own, its body not merged into its
 * callers nor theirs into it: GCC's noipa; clang, which has no such
 * attribute, keeps it as a call with noinline (tests build omp_stages.c with
 * clang for LLVM's OpenMP runtime). */
#ifdef __clang__
#define TGT_FRAME __attribute__((noinline))
#else
#define TGT_FRAME __attribute__((noipa))
#endif

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static inline double tgt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The calling thread's CPU time in seconds.  A spin loop that runs until
 * this moves on by N seconds gets N seconds of samples however loaded the
 * machine is (CI runs tests side by side on two cores), so a test can ask
 * for a sample count that a wall-clock loop gives only on an idle machine. */
static inline double tgt_cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The process's CPU time in seconds, every thread's: what a stage that
 * hands work to other threads cost in all. */
static inline double tgt_process_cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* argv[i] as seconds (float), or def when absent. */
static inline double tgt_seconds(int argc, char **argv, int i, double def)
{
	return argc > i ? atof(argv[i]) : def;
}

/* Prints "cpu_seconds=X" (user + sys of the whole process) on stdout, so
 * a test can judge the sample count against the CPU time really used. */
static inline void tgt_report_cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		   (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	printf("cpu_seconds=%.3f\n", s);
	fflush(stdout);
}

#endif
