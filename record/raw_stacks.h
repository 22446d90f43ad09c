/* record/'s capture-side aggregation (raw_stacks.c): identical address
 * stacks of a thread, with the Python frames read for them, counted once;
 * and every sample's arrival, for timelines. For capture.c, which adds,
 * and build_profile.c, which reads. Not thread-safe. */
#ifndef EMBER_RECORD_RAW_STACKS_H
#define EMBER_RECORD_RAW_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python_stacks.h"
#include "sampler.h"

struct raw_stacks;
struct raw_stacks *raw_stacks_new(void);
void raw_stacks_free(struct raw_stacks *rs);
/* Count one sample with the Python frames read for it (py may be NULL when
 * npy is 0). 0, or -1 on OOM. */
int raw_stacks_add(struct raw_stacks *rs, const struct ember_sample *s, const struct ember_py_frame *py,
		   uint32_t npy, uint32_t pyflags);
/* The same with a weight: the sample stands for weight units of the
 * profile's time (record --idle counts microseconds: docs/offcpu.md). */
int raw_stacks_add_weighted(struct raw_stacks *rs, const struct ember_sample *s, const struct ember_py_frame *py,
			    uint32_t npy, uint32_t pyflags, uint64_t weight);
/* The Python frames read for a sample: the sampled thread's own, or, with
 * EMBER_PY_PEER in flags, those of thread peer_tid read at the sample. */
struct raw_py {
	const struct ember_py_frame *frames;     /* innermost first; NULL when n is 0 */
	uint32_t n, flags;                       /* enum ember_py_read_flags */
	uint32_t peer_tid;
};
/* The same as raw_stacks_add_weighted, with a peer's frames. */
int raw_stacks_add_sample(struct raw_stacks *rs, const struct ember_sample *s, const struct raw_py *py,
			  uint64_t weight);
uint64_t raw_stacks_samples(const struct raw_stacks *rs);

struct raw_stack_view {
	uint32_t pid, tid, flags;
	uint32_t nframes, nkernel;
	const struct ember_frame_addr *frames;   /* leaf first */
	const uint64_t *kernel_ips;              /* leaf first */
	uint32_t npy, pyflags;
	const struct ember_py_frame *py;         /* innermost first */
	uint32_t peer_tid;                       /* with EMBER_PY_PEER: the thread py is of */
	uint64_t count;                          /* the weight of its samples (raw_stacks_add_weighted) */
	uint64_t samples;                        /* how many */
};
/* Samples in arrival order: (time, index of the stack in iteration
 * order).  raw_stacks_timeline_count: how many; *complete is false when
 * the run outgrew the timeline's cap (then there is none to read).
 * raw_stacks_timeline_next: the next one after *cursor, in order (start
 * with *cursor and *time_ns at 0; *time_ns carries the previous sample's
 * time to the next call); false after the last. */
size_t raw_stacks_timeline_count(const struct raw_stacks *rs, bool *complete);
bool raw_stacks_timeline_next(const struct raw_stacks *rs, size_t *cursor, uint64_t *time_ns, uint32_t *entry);
/* Iterate: false after the last stack. *cursor starts at 0. */
bool raw_stacks_next(const struct raw_stacks *rs, size_t *cursor, struct raw_stack_view *v);

#endif
