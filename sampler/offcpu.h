/* The off-CPU tracer (offcpu.c, its BPF half offcpu.bpf.c): intervals
 * that target threads spend off CPU, each with the user registers and
 * stack the thread stopped with, delivered as samples with
 * EMBER_SAMPLE_OFF_CPU and their length (docs/offcpu.md).  Private to the
 * sampler: sampler_poll.c starts, drains and stops it; sampler_events.c
 * and sampler_records.c name the processes to trace. */
#ifndef EMBER_SAMPLER_OFFCPU_H
#define EMBER_SAMPLER_OFFCPU_H

#include <stdint.h>
#include <sys/types.h>

struct ember_sampler;
struct offcpu;

/* Load and attach the tracer (no process traced yet); stack_size: user
 * stack bytes copied per interval.  NULL with a one-line reason in err. */
struct offcpu *offcpu_open(uint32_t stack_size, char *err, size_t errlen);
/* Trace the threads of process pid from now on. */
void offcpu_add_process(struct offcpu *o, pid_t pid);
/* Readable when records wait (for poll), or -1. */
int offcpu_poll_fd(const struct offcpu *o);
/* Unwind and deliver every record waiting (through the sampler's poll
 * callback, as samples). */
void offcpu_drain(struct offcpu *o, struct ember_sampler *s);
/* Detach: no record is made after this; the ones made stay to drain, and
 * the next drain ends the intervals still open at the detach's time. */
void offcpu_detach(struct offcpu *o);
/* Intervals sent, and lost to a full ring. */
void offcpu_counts(const struct offcpu *o, uint64_t *sent, uint64_t *dropped);
void offcpu_free(struct offcpu *o);

#endif
