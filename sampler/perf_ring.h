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

#include "perf_regs.h"
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
	/* The drain's place in the ring (perf_rings_drain). */
	uint64_t head, tail;       /* the head it drains up to, and the next record */
	uint64_t next_ns;          /* the next record's time */
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
/* Call fn for every complete record of the mapped rings among
 * rings[0..nrings), oldest first across them: each ring is in time order
 * on its own, but a process's fork, exec and mappings land in the rings of
 * whichever CPUs it ran on, and the process model needs them in the order
 * they happened (a child forked on one CPU must find its parent's
 * mappings, made on another, already there).  Records are drained up to
 * each ring's head as read at the start; each one's space is handed back
 * to the kernel after fn returns.  A record that wraps around the end of a
 * ring is copied into scratch (PERF_RECORD_MAX bytes) first, so fn always
 * sees it contiguous; it is valid only during the call.  active: room for
 * nrings ints.  Returns the number of records. */
typedef void (*perf_record_fn)(void *arg, const struct perf_event_header *h);
size_t perf_rings_drain(struct perf_ring *rings, int nrings, int *active, uint8_t *scratch, perf_record_fn fn,
			void *arg);

/* ---- records, parsed ----
 *
 * The parsers check every length against the record's header and return
 * false for a record too short to hold what they read.  Pointers they
 * return point into the record: valid while it is (the drain callback). */

/* PERF_RECORD_SAMPLE, for the sample_type perf_fill_attr asks for. */
struct perf_sample {
	uint32_t pid, tid;
	uint64_t time_ns;          /* CLOCK_MONOTONIC (use_clockid) */
	uint32_t nkernel;          /* kernel return addresses copied to the caller's array */
	uint64_t abi;              /* PERF_SAMPLE_REGS_ABI_*: 0 when there are no user registers
	                            * (a kernel thread, a task exiting) */
	uint64_t regs[PERF_REGS_COUNT];   /* user registers (perf_regs.h), when abi */
	const uint8_t *stack;      /* the user stack copy from regs[EMBER_REG_SP] up */
	uint64_t stack_size;       /* bytes reserved for it in the record (the requested size) */
	uint64_t stack_len;        /* bytes the kernel copied (dyn_size), <= stack_size */
};
/* Kernel frames (PERF_SAMPLE_CALLCHAIN: sample_type says) go into
 * kernel_ips[0..max_kernel), context markers dropped. */
bool perf_parse_sample(const struct perf_event_header *h, uint64_t sample_type, struct perf_sample *out,
		       uint64_t *kernel_ips, uint32_t max_kernel);

/* PERF_RECORD_MMAP2: a mapping made (or its protection changed). */
struct perf_mmap2 {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t prot, flags;      /* PROT_*, MAP_* */
	const uint8_t *build_id;   /* NULL unless the record carries one (PERF_RECORD_MISC_MMAP_BUILD_ID) */
	size_t build_id_len;
	const char *name;          /* the file name, name_len bytes (not NUL-terminated when it
	                            * fills the record) */
	size_t name_len;
};
bool perf_parse_mmap2(const struct perf_event_header *h, struct perf_mmap2 *out);

/* PERF_RECORD_COMM: a thread's new name (PERF_RECORD_MISC_COMM_EXEC: set by an exec). */
struct perf_comm {
	uint32_t pid, tid;
	const char *comm;          /* comm_len bytes */
	size_t comm_len;
};
bool perf_parse_comm(const struct perf_event_header *h, struct perf_comm *out);

/* PERF_RECORD_FORK and PERF_RECORD_EXIT: a task made or gone (pid == tid:
 * a process), and the task that made it (ppid, ptid). */
struct perf_task {
	uint32_t pid, ppid, tid, ptid;
};
bool perf_parse_task(const struct perf_event_header *h, struct perf_task *out);

/* PERF_RECORD_READ (inherit_stat): a task the event was inherited by
 * ended; value is its count on this event (CPU time in ns, on this event's
 * CPU: ember's events are per CPU). */
struct perf_read {
	uint32_t pid, tid;
	uint64_t value;
};
bool perf_parse_read(const struct perf_event_header *h, struct perf_read *out);

/* PERF_RECORD_LOST: samples dropped because the ring was full. */
bool perf_parse_lost(const struct perf_event_header *h, uint64_t *lost);

#endif
