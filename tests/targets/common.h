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

#include <dirent.h>
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

/* The process's CPU time in seconds, every live thread's: what a stage that
 * hands work to other threads cost in all.  It sums each thread's own clock
 * rather than reading CLOCK_PROCESS_CPUTIME_ID: the kernel's process clock
 * brings only the calling thread up to date and takes the others' time as
 * of their last tick or context switch (kernel/sched/cputime.c,
 * thread_group_cputime), so a pool thread still computing, or spinning
 * without a system call, when a stage ends would have up to a tick of that
 * stage counted in the next.  A thread's own clock is read up to date.  The
 * targets' pools live as long as the process: no thread's time ends early. */
static inline double tgt_process_cpu_now(void)
{
	double total = 0.0;
	DIR *dir = opendir("/proc/self/task");
	if (!dir)
		return 0.0;
	struct dirent *de;
	while ((de = readdir(dir)) != NULL) {
		int tid = atoi(de->d_name);
		if (tid <= 0)
			continue;
		/* MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) of the kernel's
		 * posix-timers.h: the thread's scheduler clock. */
		clockid_t clock = (clockid_t)((~(unsigned)tid << 3) | 4 | 2);
		struct timespec ts;
		if (clock_gettime(clock, &ts) == 0)
			total += (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
	}
	closedir(dir);
	return total;
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
