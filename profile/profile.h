/* ember profile model: the one in-memory shape every cold-path stage shares.
 *
 * Capture produces address stacks; the symbolizer turns them into frames; the
 * exporters, `report` and `diff` read only this model.  Everything here is
 * interned: a string, a frame and a stack each exist once, and are referred to
 * by a small integer id.  Samples are aggregated per (stack, thread).
 *
 * Stacks are stored root first (index 0 is the outermost frame), which is the
 * order of folded output and of flame graphs.
 *
 * Not thread-safe: one profile belongs to one thread of the cold path. */
#ifndef EMBER_PROFILE_H
#define EMBER_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ember_frame_kind {
	EMBER_FRAME_NATIVE = 0,   /* user-space machine code */
	EMBER_FRAME_PYTHON,       /* a Python function */
	EMBER_FRAME_KERNEL,       /* kernel code (--kernel) */
	EMBER_FRAME_INTERP,       /* interpreter internals (eval loop, call machinery) */
	EMBER_FRAME_SPECIAL,      /* synthetic: [truncated], [unknown], thread/process roots */
	EMBER_FRAME_KIND_COUNT
};

/* A symbolic frame.  Strings are interned in the profile (never NULL once
 * interned; "" when unknown; NULL in a frame passed in is read as "").  Two
 * frames are the same frame when every field is equal. */
struct ember_frame {
	enum ember_frame_kind kind;
	const char *name;      /* function, demangled; or synthetic label */
	const char *file;      /* source file, "" when unknown */
	uint32_t line;         /* line executing in this frame, 0 when unknown */
	uint32_t first_line;   /* first line of the function (Python), 0 when unknown */
	const char *module;    /* ELF module basename for native/kernel frames, "" otherwise */
	const char *build_id;  /* module's GNU build-id in hex, "" when unknown (NULL is read as "") */
	bool inlined;          /* native frame inlined into its caller */
	uint8_t flags;         /* enum ember_frame_flags */
};

enum ember_frame_flags {
	/* No unwind info at this frame (hand-written assembly, JIT code): its
	 * caller, the frame above it in the stack, was found by scanning the
	 * stack for a return address that unwinding goes on from. */
	EMBER_FRAME_CALLER_SCANNED = 1u << 0,
	/* The symbolizer could not name this code (no symbol covers the
	 * address, or the module could not be read): the name is a stand-in,
	 * "[module+0xADDR]", "[unknown]" or the JIT mapping's. */
	EMBER_FRAME_NO_SYMBOL = 1u << 1,
	EMBER_FRAME_FLAGS_KNOWN = EMBER_FRAME_CALLER_SCANNED | EMBER_FRAME_NO_SYMBOL,
};

struct ember_thread {
	uint32_t pid, tid;
	const char *name;      /* comm, interned; "" when never seen */
};

/* ---- Sample counts ----
 *
 * The row counts of a profile add up to at most p->count_max, which is
 * EMBER_COUNT_MAX (2^63 - 1) unless the profile says otherwise.  So no sum
 * over rows wraps (a frame's total, a thread's, the profile's), every count
 * fits the signed 64-bit integers of pprof and of most consumers, and every
 * percentage is of the true total.  ember_profile_add holds the line: what
 * would take the total past count_max is cut off (the count saturates) and
 * p->saturated says so, for the caller to reject the input or warn. */
#define EMBER_COUNT_MAX ((uint64_t)INT64_MAX)

/* a + b and a x b, or UINT64_MAX where they would wrap: for weights (counts
 * x an interval) and for sums that are not over one profile's rows. */
static inline uint64_t ember_count_add(uint64_t a, uint64_t b)
{
	uint64_t r;
	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static inline uint64_t ember_count_mul(uint64_t a, uint64_t b)
{
	uint64_t r;
	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* Aggregated count of one stack on one thread (and one kind of time). */
struct ember_sample_row {
	uint32_t stack;        /* stack id */
	uint32_t thread;       /* index into threads */
	uint32_t flags;        /* enum ember_row_flags */
	uint32_t depth;        /* with EMBER_ROW_ATTRIBUTED: how many of the stack's frames, from
	                        * the root, are the dispatching thread's; 0 otherwise */
	uint64_t count;
};

enum ember_row_flags {
	/* Time the thread spent off CPU (blocked, sleeping, runnable but not
	 * running) in this stack, from `record --idle`: the same stack on the
	 * same thread has a row of each kind.  Such a profile counts time, not
	 * samples (docs/offcpu.md, "Weights"). */
	EMBER_ROW_OFF_CPU = 1u << 0,
	/* Samples of a pool's thread (an OpenMP, OpenBLAS, TBB worker) put
	 * under the stack of the thread that dispatched the work it ran
	 * (docs/pools.md): the row's thread ran them; the first `depth`
	 * frames of its stack are the dispatcher's, the rest the worker's. */
	EMBER_ROW_ATTRIBUTED = 1u << 1,
	EMBER_ROW_FLAGS_KNOWN = EMBER_ROW_OFF_CPU | EMBER_ROW_ATTRIBUTED,
};

struct ember_run_meta {
	const char *command;   /* command line as the user gave it, interned */
	uint32_t pid;          /* target pid (first process) */
	uint32_t freq_hz;      /* sampling rate */
	uint64_t start_unix_ns;/* wall clock at start */
	uint64_t duration_ns;  /* wall time of the run */
	uint64_t samples;      /* samples taken (aggregated into rows) */
	uint64_t lost;         /* samples the kernel dropped (PERF_RECORD_LOST) */
	uint64_t truncated;    /* stacks cut off by the stack-copy size */
	uint64_t unwind_errors;/* stacks whose unwinding stopped on an error */
	uint64_t mismatched;   /* Python frames that disagreed with the native stack */
	bool kernel_frames;    /* kernel frames were sampled */
	uint64_t interval_ns;  /* time one sample stands for; 0 = 1e9 / freq_hz (or 10 ms when unknown) */
	const char *source;    /* what the profile came from: "ember record", "folded", ... (interned) */
	bool wall_clock;       /* record --idle: counts are time (interval_ns each), on and off CPU
	                        * (rows flagged EMBER_ROW_OFF_CPU), not samples */
};

/* One sample in time order, for timeline views (Chrome trace, speedscope's
 * "time order").  Optional: profiles read from folded stacks have none. */
struct ember_timed_sample {
	uint64_t time_ns;      /* CLOCK_MONOTONIC; relative order is what matters */
	uint32_t stack;
	uint32_t thread;
};

struct ember_strtab;

struct ember_profile {
	struct ember_strtab *strings;

	struct ember_frame *frames;
	uint32_t nframes, frames_cap;
	void *frame_index;     /* private hash: frame -> id */

	/* stack i is stack_frames[stack_off[i] .. stack_off[i] + stack_len[i]) */
	uint32_t *stack_frames;
	size_t stack_frames_len, stack_frames_cap;
	uint32_t *stack_off, *stack_len;
	uint32_t nstacks, stacks_cap;
	void *stack_index;     /* private hash: frame id sequence -> id */

	struct ember_thread *threads;
	uint32_t nthreads, threads_cap;
	void *thread_index;    /* private hash: (pid, tid) -> index */

	struct ember_sample_row *rows;
	uint32_t nrows, rows_cap;
	void *row_index;       /* private hash: (stack, thread) -> row */
	uint64_t total;        /* sum of the row counts, <= count_max (ember_profile_total) */
	uint64_t off_cpu_total;/* ... of the rows with EMBER_ROW_OFF_CPU */
	uint64_t count_max;    /* EMBER_COUNT_MAX; twice that in a union of two runs, each under it */
	bool saturated;        /* an add was cut at count_max: counts are lower bounds */

	struct ember_timed_sample *timeline;  /* sorted by time_ns, or empty */
	size_t ntimeline, timeline_cap;

	struct ember_run_meta meta;
};

int ember_profile_init(struct ember_profile *p);
void ember_profile_free(struct ember_profile *p);

/* Interned copy of C string s (NULL reads as ""); NULL on OOM. */
const char *ember_profile_cstr(struct ember_profile *p, const char *s);

/* Id of the frame equal to *f, adding it if new.  The strings in *f may be
 * any strings: they are interned here.  Returns UINT32_MAX on OOM. */
uint32_t ember_profile_frame(struct ember_profile *p, const struct ember_frame *f);

/* Id of the stack ids[0..n) (root first), adding it if new.  UINT32_MAX on
 * OOM or when an id is not a frame of p. */
uint32_t ember_profile_stack(struct ember_profile *p, const uint32_t *ids, uint32_t n);

static inline const uint32_t *ember_profile_stack_frames(const struct ember_profile *p,
							  uint32_t stack, uint32_t *n)
{
	*n = p->stack_len[stack];
	return p->stack_frames + p->stack_off[stack];
}

/* Index of thread (pid, tid), adding it if new; a non-empty name replaces the
 * old one (threads are named by their last comm).  UINT32_MAX on OOM. */
uint32_t ember_profile_thread(struct ember_profile *p, uint32_t pid, uint32_t tid,
			      const char *name);

/* Add count samples of stack on thread.  When the profile's total would
 * pass p->count_max, only what fits is added and p->saturated is set (see
 * "Sample counts" above).  Returns 0, or -1 on OOM or when stack or thread
 * is not an id of p. */
int ember_profile_add(struct ember_profile *p, uint32_t stack, uint32_t thread, uint64_t count);
/* The same into the row of stack, thread and flags (enum ember_row_flags;
 * -1 for an unknown flag). */
int ember_profile_add_row(struct ember_profile *p, uint32_t stack, uint32_t thread, uint32_t flags,
			  uint64_t count);
/* The same for attributed samples: into the row of stack, thread, flags
 * (with EMBER_ROW_ATTRIBUTED when depth > 0) and depth. */
int ember_profile_add_row_depth(struct ember_profile *p, uint32_t stack, uint32_t thread, uint32_t flags,
				uint32_t depth, uint64_t count);

/* Sum of all row counts (never above p->count_max). */
uint64_t ember_profile_total(const struct ember_profile *p);

/* Append one timed sample (does not touch rows: call ember_profile_add too).
 * Returns 0, or -1 on OOM or a bad id. */
int ember_profile_add_timed(struct ember_profile *p, uint64_t time_ns, uint32_t stack, uint32_t thread);
/* Sort the timeline by time (stable).  Call once after adding out of order. */
void ember_profile_sort_timeline(struct ember_profile *p);

/* Seconds one sample stands for (meta.interval_ns, else 1/freq_hz, else 0.01). */
double ember_profile_interval_s(const struct ember_profile *p);

/* ---- Files: the lossless .ember format and folded stacks from any tool ---- */

enum ember_load_status {
	EMBER_LOAD_OK = 0,
	EMBER_LOAD_NOINPUT = 1,    /* missing or unreadable file */
	EMBER_LOAD_BADDATA = 2,    /* malformed, truncated, newer version, or no samples */
};

/* What tolerant folded reading had to accept; `ember convert` prints it. */
struct ember_load_warnings {
	uint64_t lines;            /* lines read */
	uint64_t skipped;          /* lines without a usable count (blank lines not counted) */
	uint64_t crlf;             /* lines ending in CR LF */
	uint64_t fractional;       /* fractional counts, rounded to the nearest integer */
	uint64_t two_column;       /* differential lines "stack BASE NEW" */
	uint64_t invalid_utf8;     /* distinct frame names that are not UTF-8 (kept; writers replace the bytes) */
	uint64_t nul_names;        /* distinct frame names with NUL bytes (each NUL read as U+FFFD) */
	uint64_t first_skipped_line;   /* 1-based line number of the first skipped line, 0 if none */
};

/* Write p to path as a gzip-compressed .ember file (docs/ember-format.md).
 * Returns 0, or -1 with a one-line message in err. */
int ember_profile_save(const struct ember_profile *p, const char *path, char *err, size_t errlen);
/* Read an .ember file, or folded stacks ("a;b;c 12" lines from ember,
 * perf + stackcollapse, py-spy, FlameGraph scripts), told apart by their
 * first bytes, into an empty profile.  The input is read once, front to
 * back, so a pipe, a FIFO or /dev/fd/N reads as a file does; path "-" is
 * standard input (left open).  Two-column (differential) folded lines
 * contribute column `column` (0 = the first, BASE; 1 = the last, NEW).
 * Folded frame kinds are inferred: "name (file:line)" is Python, a "_[k]"
 * suffix kernel, "[...]" synthetic, the rest native; w (may be NULL) gets
 * what tolerant reading had to accept.  Input that cannot be a profile
 * (docs/cli.md, "Reading profiles": a folded line over 64 MiB, no sample
 * line in the first 16 MiB, .ember content over 250 times its compressed
 * size past 64 MiB) fails early, with memory bounded. */
int ember_profile_load(struct ember_profile *p, const char *path, int column,
		       struct ember_load_warnings *w, char *err, size_t errlen);
/* The same from an open descriptor (read from where it is, not closed);
 * name is what messages call it. */
int ember_profile_load_fd(struct ember_profile *p, int fd, const char *name, int column,
			  struct ember_load_warnings *w, char *err, size_t errlen);
/* Standard input's path for ember_profile_load, and the name messages give it. */
#define EMBER_STDIN_PATH "-"
#define EMBER_STDIN_NAME "<stdin>"
/* What messages call the input at path: EMBER_STDIN_NAME for "-", else path. */
const char *ember_profile_input_name(const char *path);

/* ---- Reports: top functions, the table `record` and `report` print ---- */

#include <stdio.h>

enum ember_report_key {
	EMBER_REPORT_BY_FUNCTION = 0, /* name + file */
	EMBER_REPORT_BY_LINE,         /* name + file:line */
	EMBER_REPORT_BY_MODULE,       /* ELF module, or Python file */
};

/* Self and total samples per key, a key being what key_of(ctx, frame)
 * returns for a frame: keys are small integers (an id table's ids), or
 * UINT32_MAX on OOM; synthetic frames ([truncated], [unknown], thread roots)
 * are counted under no key.  A key's total counts a sample once however
 * often the key is on its stack (recursion, several lines of one function);
 * its self counts the samples whose leaf frame has it.  *self and *total
 * get nkeys counts each (1 + the largest key; the caller frees both).
 * `report` and `diff` both count with it.  0, or -1 on OOM. */
typedef uint32_t (*ember_report_key_fn)(void *ctx, const struct ember_frame *f);
int ember_report_count(const struct ember_profile *p, ember_report_key_fn key_of, void *ctx, uint32_t *nkeys,
		       uint64_t **self, uint64_t **total);

/* A wall-clock profile (meta.wall_clock): its time on and off CPU, in all
 * and for each of its busiest threads (when it has more than one). */
void ember_report_wall_split(FILE *out, const struct ember_profile *p);

/* Print "top N by self" and "top N by total" tables with percentages of
 * ember_profile_total; top 0 prints every row.  Labels are shortened to 80
 * characters and control characters print as '?'. */
void ember_report_print(FILE *out, const struct ember_profile *p,
			enum ember_report_key key, size_t top);
/* Print label as those tables do: at most max characters (a longer one
 * keeps its first two thirds and its end around an ellipsis), control
 * characters as '?'. */
void ember_report_put_label(FILE *out, const char *label, size_t max);

/* A frame name that stands for code without symbols as ember, perf and
 * others write it, "[MODULE+0xHEX]": the length of MODULE (which starts at
 * name + 1), or 0 when name is not one (report_unsym.c). */
size_t ember_unsymbolized_module(const char *name);

/* Samples that end in code without symbols: those whose innermost native
 * frame (kernel and synthetic frames left out; a Python leaf is named) has
 * EMBER_FRAME_NO_SYMBOL, over the on-CPU rows of p (report_unsym.c). */
struct ember_unsym_module {
	char *label;           /* the module's basename, "[unknown]" for none */
	uint64_t count;        /* samples ending in its code without symbols */
};
struct ember_unsym {
	uint64_t count;        /* such samples */
	uint64_t of;           /* all on-CPU samples */
	struct ember_unsym_module *modules; /* those with a count, most first (ties by label) */
	size_t nmodules;
};
/* Fill *u (free with ember_unsym_free).  0, or -1 on OOM. */
int ember_report_unsymbolized(const struct ember_profile *p, struct ember_unsym *u);
void ember_unsym_free(struct ember_unsym *u);
/* The one line that says so, "ember: 12.3% of samples (456) end in code
 * without symbols: libfoo.so 10.1%, ...", when they are at least 1% of the
 * samples; nothing otherwise. */
void ember_report_unsymbolized_print(FILE *out, const struct ember_profile *p);

/* ---- The live table of `ember top` (top.c) ----
 *
 * Own and total samples per function, over the last interval and since the
 * start, from a profile that only grows while it is sampled (rows and
 * counts are added, ids stay): ember_top_update takes the profile's counts
 * as the end of an interval, and the interval is what was added since the
 * update before.  Tables are computed from those two snapshots, so that a
 * paused view can still be sorted, filtered and switched. */

enum ember_top_view {
	EMBER_TOP_MERGED = 0,  /* Python and native frames, the interpreter's own left out */
	EMBER_TOP_PYTHON,      /* Python frames only: own time is the innermost Python function's */
	EMBER_TOP_NATIVE,      /* native (and kernel) frames only, the interpreter's included */
	EMBER_TOP_VIEW_COUNT
};

enum ember_top_sort {
	EMBER_TOP_BY_OWN = 0,  /* own samples in the interval */
	EMBER_TOP_BY_TOTAL,    /* total samples in the interval */
	EMBER_TOP_BY_OWN_ALL,  /* own samples since the start */
	EMBER_TOP_BY_TOTAL_ALL,/* total samples since the start */
	EMBER_TOP_SORT_COUNT
};

struct ember_top_row {
	const char *label;     /* "name" or, Python, "qualname (file:first line)"; lives as the model */
	uint64_t own_now, total_now;   /* samples in the last interval */
	uint64_t own_all, total_all;   /* samples since the start */
};

struct ember_top_table {
	struct ember_top_row *rows;    /* every function with a sample in the view, sorted */
	size_t nrows;
	uint64_t samples_now, samples_all; /* samples of the thread(s) shown: the 100% */
};

struct ember_top;
/* NULL on OOM. */
struct ember_top *ember_top_new(void);
void ember_top_free(struct ember_top *t);
/* End an interval at p's counts now.  p must be the profile of every
 * earlier call, grown since.  0, or -1 on OOM. */
int ember_top_update(struct ember_top *t, const struct ember_profile *p);
/* The table of view over thread (an index of p->threads; UINT32_MAX: all
 * threads), sorted by sort (ties: the other count of the same span, then,
 * for an interval's sort, its count since the start, then the label).  out's
 * rows belong to t, valid until the next table or ember_top_free.  0, or
 * -1 on OOM. */
int ember_top_table(struct ember_top *t, const struct ember_profile *p, enum ember_top_view view,
		    uint32_t thread, enum ember_top_sort sort, struct ember_top_table *out);

#endif
