/* Stopping one thread for its registers and stack (dump_stop.c), for dump.c. */
#ifndef EMBER_DUMP_STOP_H
#define EMBER_DUMP_STOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "perf_regs.h"

#define DUMP_STACK_MAX 65536

/* One thread's user state, taken while it was stopped. */
struct dump_regs {
	uint64_t regs[PERF_REGS_COUNT];   /* perf_regs.h's numbering, as the unwinder takes them */
	uint8_t *stack;                   /* DUMP_STACK_MAX bytes, the caller's */
	uint64_t stack_len;               /* copied from SP up */
	uint64_t stop_wait_ns;            /* from the interrupt until the stop was seen */
	uint64_t pause_ns;                /* from the stop seen to the detach: how long it was kept
	                                   * stopped (it stopped at most stop_wait_ns earlier) */
};

/* Called while the thread is stopped (after its registers and stack are
 * taken): read what must match them, such as its Python frames. */
typedef void (*dump_stopped_fn)(void *arg, uint32_t tid);

/* Stop thread tid of pid, take its registers and stack into *out, call fn,
 * sleep sleep_ms (a test knob), and let it go.  0, or -errno: -ESRCH it
 * ended, -EPERM not permitted, -ETIMEDOUT it did not stop within a second
 * (in uninterruptible sleep: it stays seized, without being stopped,
 * until it can stop or ember exits). */
int dump_stop_thread(pid_t pid, uint32_t tid, struct dump_regs *out, dump_stopped_fn fn, void *arg,
		     uint32_t sleep_ms);

#endif
