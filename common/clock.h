/* Clocks, the one way ember reads them.  Header-only. */
#ifndef EMBER_COMMON_CLOCK_H
#define EMBER_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ember_clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC, the clock perf_event stamps ember's samples with. */
static inline uint64_t ember_now_ns(void)
{
	return ember_clock_ns(CLOCK_MONOTONIC);
}

/* CPU time of ember itself: what work costs, whatever the machine's load. */
static inline uint64_t ember_cpu_ns(void)
{
	return ember_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

#endif
