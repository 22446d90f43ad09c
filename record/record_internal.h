/* Inside record/: the run's state, the capture-side aggregation of stacks
 * (raw_stacks.c) and the resolution of a run into a profile
 * (build_profile.c). Files call downward: record.c -> capture.c ->
 * raw_stacks.c; record.c -> build_profile.c -> raw_stacks.c. */
#ifndef EMBER_RECORD_INTERNAL_H
#define EMBER_RECORD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "jit_map.h"
#include "record.h"

/* ---- raw_stacks.c: identical address stacks of a thread counted once ---- */
struct raw_stacks;
struct raw_stacks *raw_stacks_new(void);
void raw_stacks_free(struct raw_stacks *rs);
/* Count one sample with the Python frames read for it (py may be NULL when
 * npy is 0). 0, or -1 on OOM. */
int raw_stacks_add(struct raw_stacks *rs, const struct ember_sample *s, const struct ember_py_frame *py,
		   uint32_t npy, uint32_t pyflags);
uint64_t raw_stacks_samples(const struct raw_stacks *rs);

struct raw_stack_view {
	uint32_t pid, tid, flags;
	uint32_t nframes, nkernel;
	const struct ember_frame_addr *frames;   /* leaf first */
	const uint64_t *kernel_ips;              /* leaf first */
	uint32_t npy, pyflags;
	const struct ember_py_frame *py;         /* innermost first */
	uint64_t count;
};
/* Samples in arrival order: (time, index of the stack in iteration order).
 * *complete is false when the run outgrew the timeline's cap. */
struct raw_timed {
	uint64_t time_ns;
	uint32_t entry;
};
const struct raw_timed *raw_stacks_timeline(const struct raw_stacks *rs, size_t *n, bool *complete);
/* Iterate: false after the last stack. *cursor starts at 0. */
bool raw_stacks_next(const struct raw_stacks *rs, size_t *cursor, struct raw_stack_view *v);

/* ---- build_profile.c ---- */
struct build_in {
	const struct raw_stacks *raw;
	const struct ember_sampler *sampler;      /* its modules and thread names */
	const struct ember_py_session *python;    /* NULL: no Python frames */
	struct ember_jit_map *jit;                /* names of JIT code */
	const struct ember_record_opts *opts;     /* merge, subprocesses, full_filenames */
};
/* Symbolize every raw stack, merge the Python frames read with it and add
 * it to p. *mismatched counts the samples whose Python frames disagreed
 * with their native stack. 0, or -1 on OOM. */
int build_profile(const struct build_in *in, struct ember_profile *p, uint64_t *mismatched);

/* ---- the run (record.c, capture.c) ---- */
#define MAX_PY_FRAMES 1024
#define PY_READ_BUCKET_NS 100    /* Python read times: 0.1 us buckets */
#define PY_READ_BUCKETS 1000     /* up to 100 us */

/* Python reads of the run and how long they took. */
struct py_reads {
	uint64_t read_ns, reads;       /* time reading Python frames, and reads that found some */
	uint32_t hist[PY_READ_BUCKETS];/* those reads by time (the last bucket: longer) */
	uint64_t lag_ns, late;         /* sample-to-read delay summed, and reads > 1 ms late */
	uint64_t at_sample;            /* reads whose frames the copier took at the sample */
	uint64_t before_copier;        /* samples before the copier knew their thread */
	uint64_t gil_dropped;          /* gil_only: samples of threads not holding it */
	bool gil_unknown;              /* gil_only, but the runtime records no holder */
};

struct ember_record {
	struct ember_record_opts opts;
	struct ember_sampler *sampler;
	struct raw_stacks *raw;
	struct ember_py_session *python;
	struct ember_jit_map *jit;     /* names of JIT code, from the targets' perf maps */
	bool jit_remove;               /* ember asked for those maps: delete them after reading */
	int poll_ms;                   /* the longest wait between two drains */
	struct py_reads pr;
	/* The last sample's Python frames, read before it was unwound. */
	struct ember_py_frame py[MAX_PY_FRAMES];
	uint32_t npy, pyflags, py_tid;
	uint64_t py_time, py_lag;      /* its sample time, and how late the read started */
	uint64_t test_reads;
	volatile sig_atomic_t *stop;
	bool oom;
	pid_t child;
	int child_status;
	bool child_reaped;
	struct rusage child_ru;
	double usage0_user_s, usage0_sys_s;   /* attach mode: the target's CPU at the start */
	long usage0_vol, usage0_invol;
	bool usage0_ok;
	uint64_t start_unix_ns;
	double t0_s;                   /* CLOCK_MONOTONIC when the run started (before attach or launch) */
	double wall_s, profiler_cpu_s, symbolize_s;
	uint64_t mismatched;
	char command[1024];
};

/* capture.c: the sampler's hooks and the drain policy (before start), and
 * the capture loop. */
void capture_hooks(struct ember_record *r);
void capture_run(struct ember_record *r, ember_record_progress_fn progress, void *arg);

#endif
