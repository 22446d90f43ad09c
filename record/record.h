/* ember record/: one record run as a library -- launch or attach, capture
 * (native stacks from sampler/, each sample's Python frames from
 * python-stacks/), and resolve what was captured into a profile
 * (symbolizer/, the merge, profile/).
 *
 * A run goes: ember_record_new -> ember_record_start -> ember_record_capture
 * -> ember_record_profile -> ember_record_finish -> ember_record_free (free
 * is valid at any step). Not thread-safe: one thread drives a run, and the
 * sampler's hooks run on it, inside ember_record_capture. */
#ifndef EMBER_RECORD_H
#define EMBER_RECORD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "pools.h"
#include "profile.h"
#include "python_stacks.h"
#include "sampler.h"
#include "session.h"

/* Knobs for tests and bench that make a run behave as on a loaded or odd
 * machine. ember_record_knobs_from_env reads them, once, from EMBER_TEST_*
 * and EMBER_BPF_* variables; a library caller leaves them zero. */
struct ember_record_knobs {
	bool py_no_copy;           /* EMBER_TEST_PY_NO_COPY: copier loaded, its copies unused */
	bool py_no_dwarf;          /* EMBER_TEST_PY_NO_DWARF: no DWARF for the sample check */
	bool copier_later;         /* EMBER_TEST_COPIER_LATER: load the copier once a Python process
	                            * shows up, as on a kernel that checks it slowly */
	int py_start_stall_ms;     /* EMBER_TEST_START_STALL_MS: sleep once when a runtime is found */
	int py_drain_ms;           /* EMBER_TEST_PY_DRAIN_MS: drain period with the copier
	                            * (0: at every sample; -1: by the sampling rate) */
	uint64_t py_read_delay_ns; /* EMBER_TEST_PY_READ_DELAY_US: every other read this late */
	uint32_t stall_ms;         /* EMBER_TEST_STALL_MS: sleep after each drain (stolen CPU) */
	bool bpf_debug;            /* EMBER_BPF_DEBUG: libbpf's messages (the verifier's log) */
	bool bpf_stats;            /* EMBER_BPF_STATS: the kernel times the copier (bench) */
	bool bpf_unrolled;         /* EMBER_BPF_UNROLLED: the copier's unrolled variant, which
	                            * kernels without bpf_loop run */
};
void ember_record_knobs_from_env(struct ember_record_knobs *k);

struct ember_record_opts {
	struct ember_sampler_opts sampler;
	double duration_s;         /* 0: until the target exits */
	pid_t pid;                 /* attach when > 0 */
	char **argv;               /* else launch this command */
	bool python;               /* read Python frames (--no-python turns it off) */
	bool gil_only;             /* only samples of the thread holding the GIL */
	bool no_copier;            /* read Python frames after the sample only */
	bool no_jit_env;           /* leave the command's JIT profiling settings alone */
	bool as_root;              /* under sudo, launch the command as root, not as the user */
	struct ember_merge_opts merge;
	bool subprocesses;         /* a root frame "process PID: cmdline" per process */
	bool full_filenames;       /* absolute Python file names */
	bool no_attribution;       /* pool threads' samples stay under their own thread's stack
	                            * (--no-attribution) */
	double progress_s;         /* period of the capture's progress callback; 0: 1 s */
	struct ember_record_knobs knobs;
};
void ember_record_opts_default(struct ember_record_opts *o);

/* What became of the samples of thread pools' threads (docs/pools.md), in
 * the profile's units (samples; --idle: microseconds). */
struct ember_record_pools {
	uint64_t worker[EMBER_POOL_KIND_COUNT];     /* samples of each pool's threads (a program's own
	                                             * threads: those attributed only) */
	uint64_t by_peer, by_bracket, by_one_path;  /* put under their dispatcher: by the peer read, by
	                                             * its samples around them, by the one path */
	uint64_t no_dispatcher, several, unsure;    /* not: no thread seen dispatching to the pool;
	                                             * several, none chosen; its samples around
	                                             * them disagree */
	uint64_t wait[EMBER_POOL_KIND_COUNT];       /* samples that wait for a pool (its threads', its
	                                             * dispatchers') */
};

/* The Python frames a sample keeps: a deeper stack keeps its innermost
 * half and its outermost half, the middle left out under [truncated]. */
#define EMBER_RECORD_PY_FRAMES 1024

/* Everything a run measured, for the summary. Times in seconds unless
 * named otherwise. */
struct ember_record_stats {
	double wall_s;                  /* of the capture */
	double target_user_s, target_sys_s;
	long max_rss_kib;               /* -1 when unknown */
	long vol_ctx, invol_ctx;        /* -1 when unknown */
	struct ember_sampler_stats sampler;
	double profiler_cpu_s;          /* ember's own CPU during capture */
	double symbolize_s;             /* ember's CPU resolving the run into a profile */
	bool python_samples;            /* some process was Python */
	uint64_t mismatched;            /* samples whose Python frames disagreed with the native stack */
	uint64_t py_cut;                /* samples whose Python stack was deeper than ember keeps: the
	                                 * middle left out (in sampler.truncated too) */
	uint64_t gil_dropped;           /* gil_only: samples left out */
	uint64_t gil_unknown;           /* gil_only: Python samples whose GIL holder is not known (kept) */
	double py_read_us;              /* mean elapsed time of a Python stack read */
	double py_read_median_us;
	double py_setup_ms;             /* finding runtimes (not in the reads) */
	double py_lag_us;               /* mean delay from the sample to its Python read */
	uint64_t py_late;               /* Python reads more than 1 ms after their sample */
	uint64_t py_checked, py_corrected; /* reads checked against / corrected from the sample */
	uint64_t py_reads, py_at_sample;   /* Python reads; those from frames copied at the sample */
	uint64_t py_before_copier;         /* samples before ember had registered their thread */
	uint64_t py_before_load;           /* reads before the copier, loaded once a Python process
	                                    * showed up, was ready (made after the sample) */
	double copier_wait_ms;             /* ... from that process's discovery to its being ready */
	bool copier_loading;               /* ... or the run ended before it was */
	bool copier_asked;                 /* frames copied at the sample were asked for */
	const char *copier_note;           /* why they are not, "" when they are */
	bool copier_unrolled;              /* ... by the copier's unrolled variant (a kernel
	                                    * without bpf_loop; slower to load) */
	const char *switch_note;           /* --idle: why they are not copied as threads leave the
	                                    * CPU, NULL when they are */
	struct ember_py_copier_stats copier;
	uint32_t jit_files;                /* perf maps and jitdumps read */
	uint64_t jit_entries;              /* JIT functions they named */
	uint32_t jit_refused;              /* files not trusted, and the first of them */
	char jit_refused_path[256];
	uint64_t jit_skipped;              /* JIT functions over a bound (jit_map.h), not named */
	uint32_t jit_capped;               /* JIT files read only up to their bound */
	uint32_t jit_removed;              /* perf maps ember made the command write, deleted */
	struct ember_record_pools pools;   /* of the last profile made (ember_record_profile) */
};

struct ember_record;

/* NULL on OOM. */
struct ember_record *ember_record_new(const struct ember_record_opts *o);
void ember_record_free(struct ember_record *r);

/* Launch the command or attach to the process. 0, or -EMBER_SERR_*
 * (sampler.h) with ember_record_error saying why; after
 * -EMBER_SERR_NOT_FOUND the launched child has exited with 127 or 126
 * (ember_record_finish returns it). Run by root through sudo (real uid 0,
 * SUDO_UID naming another user), the command runs as that user, with the
 * user's groups and HOME, USER and LOGNAME, unless opts.as_root. */
int ember_record_start(struct ember_record *r);
const char *ember_record_error(const struct ember_record *r);
pid_t ember_record_target(const struct ember_record *r);
/* kernel.perf_event_paranoid left kernel frames out (known after start). */
bool ember_record_kernel_excluded(const struct ember_record *r);
/* --kernel frames are sampled but /proc/kallsyms hides the kernel's
 * addresses from ember: they will stay unnamed (known after start). */
bool ember_record_kernel_unnamed(const struct ember_record *r);
/* --idle: why time off CPU is not traced (one line), or NULL when it is
 * (known after start). */
const char *ember_record_off_cpu_error(const struct ember_record *r);

/* Called about once a second while capturing (every opts.progress_s when set). */
typedef void (*ember_record_progress_fn)(void *arg, double elapsed_s, uint64_t samples);
/* Capture until the target exits, the duration passes or *stop becomes
 * nonzero (a signal handler's flag). A launched command still running when
 * the duration passes gets SIGTERM: it does not outlive its profile. */
void ember_record_capture(struct ember_record *r, volatile sig_atomic_t *stop, ember_record_progress_fn progress,
			  void *arg);

/* Resolve the capture into p (initialized, empty): symbolize, merge Python
 * frames into native stacks, fill p->meta. 0, or -1 on OOM. It reads the
 * capture without consuming it, so it may also be called during
 * ember_record_capture, from its progress callback, for the profile so far
 * (a checkpoint; ember forks and calls it in the copy, which leaves the
 * sampling undisturbed). */
int ember_record_profile(struct ember_record *r, struct ember_profile *p);

/* A live profile of the capture so far, for a view that refreshes while
 * sampling (`ember top`): each update adds the samples taken since the
 * previous one to the same profile and symbolizes only addresses not seen
 * before, so its cost follows what is new, not the length of the run (a
 * full ember_record_profile resolves everything again). Its Python merge
 * is merge, not the run's; it has no timeline. Create it after
 * ember_record_start; update it from the progress callback. NULL on OOM. */
struct ember_record_live;
struct ember_record_live *ember_record_live_new(struct ember_record *r, const struct ember_merge_opts *merge);
/* The profile brought up to date: rows and counts only grow, ids stay. It
 * is valid until ember_record_live_free. NULL on OOM (the live profile is
 * then unusable). */
const struct ember_profile *ember_record_live_update(struct ember_record_live *l);
void ember_record_live_free(struct ember_record_live *l);

/* End the run: wait for a launched command, delete the perf maps ember made
 * it write, fill *st. Returns the command's exit status (128 + signal when
 * killed), 0 in attach mode. */
int ember_record_finish(struct ember_record *r, struct ember_record_stats *st);

/* What the run found about each process (the Python found, or why it is
 * profiled natively), one line each, for the summary. */
void ember_record_report(const struct ember_record *r, FILE *out);

#endif
