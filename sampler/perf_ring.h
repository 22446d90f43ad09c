/* perf_event_open and its ring buffers (perf_ring.c): the kernel side of
 * capture, used by the sampler.  What each attribute and record field
 * means, and the ring's protocol, are in docs/sampling.md.  Not
 * thread-safe: one reader per ring. */
#ifndef EMBER_PERF_RING_H
#define EMBER_PERF_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler.h"

struct perf_event_attr;
struct perf_event_header;

/* Room for any record: perf_event_header.size is 16 bits. */
#define PERF_RECORD_MAX 65536

struct perf_ring {
	int fd;                    /* the event whose buffer this is */
	uint8_t *base;             /* metadata page followed by the data pages */
	size_t map_len;
	uint8_t *data;
	uint64_t data_size;        /* power of two */
};

/* The online CPUs (/sys/devices/system/cpu/online). Returns the count. */
int perf_online_cpus(int *cpus, int max);
/* Fill attr for sampling as ember does; launch selects enable_on_exec,
 * wake_per_sample a wakeup at every sample (ember_sampler_hooks). */
void perf_fill_attr(struct perf_event_attr *attr, const struct ember_sampler_opts *opts,
		    bool wake_per_sample, bool launch, bool exclude_kernel);
/* perf_event_open for (pid, cpu), close-on-exec.  The fd, or -1 (errno). */
int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu);
/* mmap a ring of `pages` data pages (a power of two) for fd. 0 or -errno. */
int perf_ring_map(struct perf_ring *r, int fd, size_t pages);
void perf_ring_unmap(struct perf_ring *r);
/* Call fn for every complete record in the ring, handing each one's space
 * back to the kernel after fn returns.  A record that wraps around the end
 * of the ring is copied into scratch (PERF_RECORD_MAX bytes) first, so fn
 * always sees it contiguous; it is valid only during the call.  Returns
 * the number of records. */
typedef void (*perf_record_fn)(void *arg, const struct perf_event_header *h);
size_t perf_ring_drain(struct perf_ring *r, uint8_t *scratch, perf_record_fn fn, void *arg);

#endif
