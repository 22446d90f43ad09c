/* The sampler's state (sampler_state.c), private to the sampler's own
 * files: what struct ember_sampler holds, and sampler_fail, which records
 * an error in it.  sampler_poll.c (the lifecycle and the drain),
 * sampler_events.c (opening the events) and sampler_records.c (what each
 * record does) stand above it; below it, the process model, the perf rings
 * and the unwinder, which never call back up. */
#ifndef EMBER_SAMPLER_STATE_H
#define EMBER_SAMPLER_STATE_H

#include <linux/perf_event.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "perf_ring.h"
#include "process_model.h"
#include "sampler.h"
#include "unwinder.h"

#define MAX_CPUS 1024
#define MAX_KERNEL_FRAMES 128        /* kernel frames kept per sample (--kernel) */

struct ember_sampler {
	struct ember_sampler_opts opts;
	struct perf_event_attr attr;
	int cpus[MAX_CPUS];
	int ncpus;
	struct perf_ring *rings;         /* one per CPU */
	int *ring_active;                /* one per CPU: perf_rings_drain's */
	struct pollfd *pfds;
	int *fds;                        /* every event fd, ring owners included */
	size_t nfds, fds_cap;
	size_t ring_pages;
	pid_t target;
	bool attached;
	bool stopped;
	struct process_model pm;
	struct unwinder unw;
	struct ember_sampler_stats stats;
	uint8_t *scratch;
	struct ember_frame_addr frames[EMBER_MAX_FRAMES];
	uint64_t kernel_ips[MAX_KERNEL_FRAMES];
	/* The callback of the poll in progress. */
	ember_sample_fn fn;
	void *fn_arg;
	struct ember_sampler_hooks hooks;   /* ember_sampler_set_hooks */
	struct ember_frame_probe probes[EMBER_MAX_PROBES];
	int delivered;
	struct offcpu *offcpu;           /* opts.off_cpu, when the tracer runs */
	char offcpu_err[256];            /* ... why it does not */
	char err[512];
};

/* Put the message in s->err; returns -code, for `return sampler_fail(...)`. */
int sampler_fail(struct ember_sampler *s, enum ember_sampler_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
