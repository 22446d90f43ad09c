/* ember python-stacks, the session: Python frames for every process of a
 * record run.
 *
 * A session keeps one reader (struct ember_python) per target process. The
 * reader is opened on the process's first sample and retried while the
 * process is not Python yet (a launched shell may exec python later, an
 * interpreter may still be loading), and each sample's Python frames are
 * read right after its native sample: from the copier's record when the
 * frames were copied at the sample, else from the live process. Python
 * thread names (threading.Thread.name) are read while the target runs.
 *
 * The merge of those frames into a native stack is merge/py_merge.h's.
 *
 * Not thread-safe: a session is used by the thread that drains the sampler,
 * including its hooks (ember_py_session_is_eval runs inside the unwinder).
 * (A copier_later load runs on a thread of its own that shares nothing
 * with the session but its result, taken by ember_py_session_copier_poll.) */
#ifndef EMBER_PY_SESSION_H
#define EMBER_PY_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "py_merge.h"
#include "python_stacks.h"
#include "sampler.h"

struct ember_py_session_opts {
	bool gil;                 /* find out which thread holds the GIL (--gil) */
	bool copier;              /* load the copier, which copies frames at the sample */
	/* ... on a thread of its own, not before ember_py_session_new returns
	 * (where the kernel's check of the program takes 0.2 s or more: the
	 * command need not wait for it): from now on, or with copier_on_python
	 * only once a target process is found to be Python (a command that
	 * never runs Python costs nothing).  Until the copier is ready, frames
	 * are read after the sample; processes and threads started before are
	 * not copied at all (perf events pass the program on at fork only). */
	bool copier_later;
	bool copier_on_python;
	struct ember_py_copier_opts copier_opts;   /* ... and how (libbpf's messages, timing) */
	/* Test knobs (struct ember_record_knobs says where they come from). */
	bool no_copy_use;         /* keep the copier loaded but read every sample after it */
	bool no_debug_info;       /* learn the eval loop's instruction pointer from samples only */
	int start_stall_ms;       /* sleep once when the first runtime is found */
};

struct ember_py_session;

/* NULL on OOM. A copier that cannot be loaded is not an error: frames are
 * then read after each sample, and ember_py_session_copier_note says why. */
struct ember_py_session *ember_py_session_new(const struct ember_py_session_opts *o);
void ember_py_session_free(struct ember_py_session *s);

/* Where the copier is. */
enum ember_py_copier_state {
	EMBER_PY_COPIER_OFF,      /* not asked for, or refused (ember_py_session_copier_note) */
	EMBER_PY_COPIER_LATER,    /* copier_on_python, and no Python process found yet */
	EMBER_PY_COPIER_LOADING,  /* being loaded on its thread */
	EMBER_PY_COPIER_ON,       /* loaded: frames are copied at the sample */
};
enum ember_py_copier_state ember_py_session_copier_state(const struct ember_py_session *s);
/* Without waiting: true once, when a copier_later load has just
 * finished with the copier ready (the caller then attaches
 * ember_py_session_copier_fd to its events and polls the wake fd). */
bool ember_py_session_copier_poll(struct ember_py_session *s);
/* copier_later: nanoseconds from the load's start (with copier_on_python:
 * the first Python process found) to the copier's being ready (0 when it
 * was loaded before the session was made, or never). */
uint64_t ember_py_session_copier_wait_ns(const struct ember_py_session *s);
/* ... and the CPU time of that load's thread (the kernel's check). */
uint64_t ember_py_session_copier_load_cpu_ns(const struct ember_py_session *s);

/* The copier's program for the sampler's events; 0 when there is none. */
int ember_py_session_copier_fd(const struct ember_py_session *s);
/* The copier's wake fd, -1 when frames are not copied at the sample (then
 * every sample must wake ember for its read to come soon enough). */
int ember_py_session_wake_fd(const struct ember_py_session *s);
/* Why frames are not copied at the sample: "" when they are, or when the
 * copier was not asked for. */
const char *ember_py_session_copier_note(const struct ember_py_session *s);
/* With copier_opts.at_switch: why frames are not copied as threads leave
 * the CPU (one line), or NULL when they are or the copier is not loaded. */
const char *ember_py_session_switch_note(const struct ember_py_session *s);
/* Whether the copier loaded is its unrolled variant (ember_py_copier_unrolled). */
bool ember_py_session_copier_unrolled(const struct ember_py_session *s);
void ember_py_session_copier_stats(const struct ember_py_session *s, struct ember_py_copier_stats *out);
/* After each drain of the sampler: keep the records no read took yet. */
void ember_py_session_consume(struct ember_py_session *s);

/* The Python frames of the sampled thread, innermost first (0 when its
 * process is not Python or the thread has no Python state); *flags gets
 * enum ember_py_read_flags. For a thread given a peer, the peer's frames
 * copied at the sample (EMBER_PY_PEER, *peer its tid; else *peer is 0).
 * Call right after the sample, before unwinding. */
int ember_py_session_read(struct ember_py_session *s, const struct ember_sample *smp, struct ember_py_frame *out,
			  int max, uint32_t *flags, uint32_t *peer);
/* Thread tid of process pid, a thread pool's worker, takes its dispatcher
 * peer's frames at its samples (ember_python_set_peer). */
void ember_py_session_set_peer(struct ember_py_session *s, uint32_t pid, uint32_t tid, uint32_t peer);
/* Without frames copied at the sample: thread peer's frames read now (just
 * after a worker's sample), flagged EMBER_PY_PEER; 0 when they cannot be
 * read whole. */
int ember_py_session_read_peer(struct ember_py_session *s, uint32_t pid, uint32_t peer, struct ember_py_frame *out,
			       int max, uint32_t *flags);
/* Nanoseconds spent finding runtimes in new processes (inside the reads
 * that found them: the first read of a process takes 0.1-2 ms). */
uint64_t ember_py_session_setup_ns(const struct ember_py_session *s);
/* The sampler's probe hook: is pc an eval-loop activation of a process
 * whose runtime is open? (One compare when pid is the last one asked.) */
bool ember_py_session_is_eval(void *session, uint32_t pid, uint64_t pc);
/* Check frames[0..n) just read against the eval activations the sample
 * probed (ember_python_reconcile); returns the new count.  Counts, for the
 * report, the samples in the eval loop whose read found no frames. */
int ember_py_session_check(struct ember_py_session *s, const struct ember_sample *smp, uint64_t read_lag_ns,
			   struct ember_py_frame *frames, int n, int max, uint32_t *flags);
/* Read the sampled thread's Python name when it is due: its first sample
 * with Python frames, then at most once a second (retried sooner while no
 * name is known). Call after the sample is stored. */
void ember_py_session_names(struct ember_py_session *s, const struct ember_sample *smp);

/* After the run. */
const struct ember_python *ember_py_session_reader(const struct ember_py_session *s, uint32_t pid);
const char *ember_py_session_cmdline(const struct ember_py_session *s, uint32_t pid);   /* "" when unknown */
/* The Python name last read for thread tid of pid, NULL when none. */
const char *ember_py_session_thread_name(const struct ember_py_session *s, uint32_t pid, uint32_t tid);
/* Reads checked against the sample, and those corrected, over all processes. */
void ember_py_session_totals(const struct ember_py_session *s, uint64_t *checked, uint64_t *corrected);
bool ember_py_session_any(const struct ember_py_session *s);   /* some process was Python */
/* Some process was taken for Python but refused, with a line of its own in
 * the report (a version not supported, no access, state it cannot use). */
bool ember_py_session_refused(const struct ember_py_session *s);
/* One line per process: the Python found, or why it is profiled natively
 * (and whether its interpreter state could be read where its eval loop
 * ran); one line for all the processes that ended before they could be
 * looked at. */
void ember_py_session_report(const struct ember_py_session *s, FILE *out);

/* The merge's native classes a reader knows (py_merge.h): */
/* The class bit that marks reader py's eval-loop activations: EMBER_NATIVE_EVAL_EX
 * on 2.7, EMBER_NATIVE_EVAL on 3.x. */
uint8_t ember_py_eval_class(const struct ember_python *py);
/* cls (a frame's class by its name) with the eval-loop bits added when
 * reader py knows ELF address vaddr of the file at path as its eval loop
 * (a part no symbol names: the .cold part of a stripped python3). */
uint8_t ember_py_frame_class(const struct ember_python *py, uint8_t cls, const char *path, uint64_t vaddr);

/* Whether a target is, or starts as, a Python interpreter: pid > 0 by its
 * executable and mappings, else argv[0] by its name or its #! line (found
 * on PATH as execvp finds it), or, when argv[0] is a launcher (chroot,
 * unshare, env, nice, taskset, sudo, ...), a later argument named python*.
 * A guess for the wake-up policy only. */
bool ember_py_target_likely(pid_t pid, char *const *argv);

#endif
