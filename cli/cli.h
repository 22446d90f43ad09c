/* ember command-line front end: subcommands, options, exit codes, and the
 * glue between capture (sampler/) and the cold path (symbolizer/, profile/,
 * exporters/). */
#ifndef EMBER_CLI_H
#define EMBER_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "exporters.h"
#include "profile.h"
#include "python_stacks.h"
#include "sampler.h"

/* ember's own exit codes (sysexits.h values, so they rarely collide with a
 * launched command's status, which `record` passes through). */
enum ember_exit {
	EMBER_EXIT_OK = 0,
	EMBER_EXIT_USAGE = 64,        /* bad option or value */
	EMBER_EXIT_DATAERR = 65,      /* input file is malformed */
	EMBER_EXIT_NOINPUT = 66,      /* input file missing or unreadable */
	EMBER_EXIT_UNAVAILABLE = 69,  /* no such process, or it exited during attach */
	EMBER_EXIT_INTERNAL = 70,     /* a bug or out of memory */
	EMBER_EXIT_OSERR = 71,        /* perf_event_open, mmap, fork failed otherwise */
	EMBER_EXIT_CANTCREAT = 73,    /* an output file could not be written */
	EMBER_EXIT_NOPERM = 77,       /* permission denied */
	EMBER_EXIT_NOEXEC = 126,      /* command found but not executable */
	EMBER_EXIT_NOTFOUND = 127,    /* command not found */
};

enum output_format {
	FORMAT_FOLDED = 0, FORMAT_SVG, FORMAT_PSTATS, FORMAT_SPEEDSCOPE, FORMAT_PPROF,
	FORMAT_CHROME, FORMAT_EMBER, FORMAT_COUNT
};

struct output_spec {
	const char *path;
	enum output_format format;
	FILE *file;                   /* opened before the run, so a bad path fails first */
};

#define MAX_OUTPUTS 16

/* The outputs of record/convert/diff and how they look. */
struct output_set {
	struct output_spec outputs[MAX_OUTPUTS];
	int noutputs;
	const char *format;           /* --format: applies to every -o */
	struct ember_export_opts export;
};

/* Shared output options: -o, --format, --threads, --icicle, --title.
 * Returns 1 when c was one of them (0 = not ours, or an exit code < 0 ... see
 * options.c), after validating it. */
enum { OPT_FORMAT = 300, OPT_THREADS, OPT_ICICLE, OPT_TITLE };
#define OUTPUT_LONGOPTS \
	{ "output", required_argument, NULL, 'o' }, \
	{ "format", required_argument, NULL, OPT_FORMAT }, \
	{ "threads", no_argument, NULL, OPT_THREADS }, \
	{ "icicle", no_argument, NULL, OPT_ICICLE }, \
	{ "title", required_argument, NULL, OPT_TITLE }
/* Handle option c of the shared set: 1 handled, 0 not an output option,
 * or an exit code (> 1) after printing the error. */
int options_output(struct output_set *set, int c, const char *arg, const char *cmd);
/* Resolve every output's format (from --format or the extension).  0 or an
 * exit code after printing the error. */
int options_output_finish(struct output_set *set, const char *cmd);
/* One-line error for `ember CMD` with the usage hint; returns EMBER_EXIT_USAGE. */
int options_bad(const char *cmd, const char *fmt, const char *arg);
const char *format_name(enum output_format f);

/* outputs.c: open every output (to fail before a long run, not after), then
 * write the profile to each.  Both return 0 or an exit code. */
int outputs_open(struct output_set *set);
int outputs_write(struct output_set *set, const struct ember_profile *p, bool quiet);
void outputs_close(struct output_set *set);

/* How Python frames join native ones (merge_python.c). */
struct merge_opts {
	bool python_only;          /* Python frames only (py-spy's default view) */
	bool native_unfiltered;    /* keep interpreter-internal frames */
	bool subprocesses;         /* a root frame "process PID: cmdline" per process */
	bool full_filenames;       /* absolute Python file names */
};

/* Everything `ember record` accepts, with its defaults (options_record_defaults). */
struct record_opts {
	struct ember_sampler_opts sampler;
	double duration_s;            /* 0 = until the target exits */
	pid_t pid;                    /* attach mode when > 0 */
	char **argv;                  /* launch mode command */
	struct output_set out;
	struct merge_opts merge;      /* how Python frames join native ones */
	bool python;                  /* read Python frames (default on; --no-python) */
	bool gil_only;                /* --gil: only samples of the thread holding the GIL */
	bool no_bpf;                  /* --no-bpf: read Python frames after the sample only */
	bool no_jit_env;              /* --no-jit-env: leave the command's JIT profiling settings alone */
	bool quiet;
};

void options_record_defaults(struct record_opts *o);
/* Parse `record` arguments (argv[0] is "record").  Returns 0, or an exit
 * code after printing one error line (EMBER_EXIT_OK after --help). */
int options_parse_record(int argc, char **argv, struct record_opts *o, bool *help_shown);
void options_record_usage(FILE *out);
/* Format from a file name's extension; -1 when unknown. */
int options_format_from_path(const char *path);

int cmd_record(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/* ---- python_capture.c: Python frames read per sample ---- */

uint64_t cli_monotonic_ns(void);   /* CLOCK_MONOTONIC, as sample times are */

struct ember_py_frame;
struct ember_python;
struct python_capture;
/* gil: --gil needs GIL ownership; sample_time: load the in-kernel frame
 * copier (its failure is not an error: frames are then read after each
 * sample, and python_capture_bpf_note says why). */
struct python_capture *python_capture_new(bool gil, bool sample_time);
/* The copier's program for the sampler's events; 0 when there is none. */
int python_capture_bpf_fd(const struct python_capture *pc);
/* Why frames are not copied at the sample: "" when they are (or --no-bpf). */
const char *python_capture_bpf_note(const struct python_capture *pc);
/* The copier's wake fd (ember_py_sampletime_wake_fd), -1 when frames are not
 * copied at the sample: then every sample must wake ember. */
int python_capture_wake_fd(const struct python_capture *pc);
/* Time spent finding runtimes in new processes (in python_capture_read,
 * which it makes the first read of a process take 0.1-2 ms). */
uint64_t python_capture_setup_ns(const struct python_capture *pc);
/* After each drain of the sampler: keep the records no read took yet. */
void python_capture_consume(struct python_capture *pc);
struct ember_py_sampletime_stats;
void python_capture_bpf_stats(const struct python_capture *pc, struct ember_py_sampletime_stats *out);
void python_capture_free(struct python_capture *pc);
/* The Python frames of the sampled thread, innermost first (0 when its
 * process is not Python or the thread has no Python state). */
int python_capture_read(struct python_capture *pc, const struct ember_sample *s, struct ember_py_frame *out,
			int max, uint32_t *flags);
/* Probe function for the sampler: is pc an eval-loop activation of a
 * Python process already open?  (Cheap: the last process is remembered.) */
bool python_capture_is_eval(void *pc, uint32_t pid, uint64_t pc_addr);
/* Check the frames just read against the sample's probed eval activations
 * (ember_python_reconcile); returns the new count. */
int python_capture_check(struct python_capture *pc, const struct ember_sample *s, uint64_t read_lag_ns,
			 struct ember_py_frame *frames, int n, int max, uint32_t *flags);
/* Totals over every process (ember_python_stats). */
void python_capture_totals(const struct python_capture *pc, uint64_t *checked, uint64_t *corrected);
const struct ember_python *python_capture_get(const struct python_capture *pc, uint32_t pid);
const char *python_capture_cmdline(const struct python_capture *pc, uint32_t pid);
/* The Python name (threading.Thread.name) last read for thread tid of pid
 * while it ran, NULL when none was found (no Python frames, no threading). */
const char *python_capture_thread_name(const struct python_capture *pc, uint32_t pid, uint32_t tid);
/* Read the Python name of the sampled thread when it is due (first sight,
 * then at most once a second); call after a sample with Python frames. */
void python_capture_names(struct python_capture *pc, const struct ember_sample *s);
/* One line per process: the Python found, or why it is native only. */
void python_capture_report(const struct python_capture *pc, FILE *out);
bool python_capture_any(const struct python_capture *pc);

/* ---- raw_stacks.c: capture-side aggregation of address stacks ---- */
struct raw_stacks;
struct raw_stacks *raw_stacks_new(void);
void raw_stacks_free(struct raw_stacks *rs);
/* Count one sample with the Python frames read for it (py may be NULL when
 * npy is 0).  Returns 0, or -1 on OOM. */
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
/* Iterate: returns false after the last stack. *cursor starts at 0. */
bool raw_stacks_next(const struct raw_stacks *rs, size_t *cursor, struct raw_stack_view *v);

/* ---- merge_python.c: Python frames into native stacks (cold path) ---- */
/* What one captured native address is, for merging. */
enum group_class {
	GROUP_EVAL_DEFAULT = 1,    /* _PyEval_EvalFrameDefault (3.x eval loop) */
	GROUP_EVAL_EX = 2,         /* PyEval_EvalFrameEx (2.7 eval loop; a wrapper on 3.x) */
	GROUP_INTERP = 4,          /* inside the interpreter's own module */
	GROUP_TAKE_GIL = 8,        /* waiting for the GIL: always shown */
	GROUP_ROOT = 16,           /* _start, __libc_start_main, clone3, start_thread... */
};
struct native_group {
	const uint32_t *ids;       /* frame ids, outermost first */
	size_t off;                /* where ids sits in the resolver's id array */
	uint32_t n;
	uint8_t cls;               /* enum group_class bits */
};
/* Root-first frame ids of one merged stack into out (at most cap). */
uint32_t merge_stack(struct ember_profile *p, const struct merge_opts *o, const struct native_group *g,
		     uint32_t ng, const struct ember_py_frame *py, uint32_t npy, uint32_t pyflags,
		     const struct ember_python *handle, bool native_truncated, uint32_t *out, uint32_t cap,
		     bool *uncertain);

/* ---- build_profile.c: the cold path from addresses to a profile ---- */
/* Symbolize every raw stack with the sampler's modules, merge the Python
 * frames read with it, and add it to p.  *mismatched counts the samples
 * whose Python frames disagreed with their native stack. */
struct ember_jit_map;
int build_profile(const struct raw_stacks *rs, const struct ember_sampler *sampler,
		  const struct python_capture *pc, struct ember_jit_map *jit, const struct merge_opts *mo,
		  struct ember_profile *p, double *symbolize_s, uint64_t *mismatched);

/* ---- summary.c ---- */
struct run_summary {
	uint32_t stack_size;            /* --stack-size */
	double wall_s;
	double target_user_s, target_sys_s;
	long max_rss_kib;               /* -1 when unknown */
	long vol_ctx, invol_ctx;        /* -1 when unknown */
	struct ember_sampler_stats stats;
	double profiler_cpu_s;          /* ember's own CPU during capture */
	double symbolize_s;
	bool python_samples;            /* some process was Python */
	uint64_t mismatched;            /* samples whose Python frames disagreed with the native stack */
	uint64_t gil_dropped;           /* --gil: samples left out */
	double py_read_us;              /* mean elapsed time of a Python stack read */
	double py_read_median_us;       /* ... and its median */
	double py_setup_ms;             /* finding runtimes (not in the reads) */
	double py_lag_us;               /* mean delay from the sample to its Python read */
	uint64_t py_late;               /* Python reads more than 1 ms after their sample */
	uint64_t py_checked, py_corrected; /* reads checked against / corrected from the sample */
	uint64_t py_reads, py_at_sample;   /* Python reads; those from frames copied at the sample */
	uint64_t py_before_copier;         /* samples before ember had registered their thread with it */
	bool py_bpf_asked;                 /* the frame copier was asked for (no --no-bpf) */
	uint32_t bpf_failed;               /* events the copier could not be attached to */
	const char *py_bpf_note;           /* why it is not used, "" if it is */
	struct ember_py_sampletime_stats bpf;   /* its records; runs and their time (EMBER_BPF_STATS) */
	uint32_t jit_files;                /* perf maps and jitdumps read */
	uint64_t jit_entries;              /* JIT functions they named */
	uint32_t jit_refused;              /* files not trusted, and the first of them */
	const char *jit_refused_path;
	uint32_t jit_removed;              /* perf maps ember made the command write, deleted */
};
void summary_print(FILE *out, const struct run_summary *sum, const struct ember_profile *p);

#endif
