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
 * This header is the whole contract: building a profile (the record side,
 * the readers of files, diff's copies), reading one ("Reading a profile":
 * every consumer reads through those functions), and the files.  Reports
 * over a profile are report.h's.  Not thread-safe: one profile belongs to
 * one thread of the cold path. */
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

/* Frames of kind EMBER_FRAME_SPECIAL that ember writes, by name: each says
 * something about the frames next to it (docs/formats-ember.md). */
#define EMBER_MARK_TRUNCATED "[truncated]"              /* the stack copy ended before the root */
#define EMBER_MARK_INCOMPLETE "[native stack incomplete]" /* the unwind stopped short of the root */
#define EMBER_MARK_UNCERTAIN "[python frames uncertain]" /* Python frames below it are not sure */
#define EMBER_MARK_NO_DISPATCHER "[dispatcher unknown]" /* a pool thread's work no dispatcher was
                                                         * found for (docs/pools.md) */
/* And, from docs/pools.md: "[OpenMP wait]" (a pool's threads waiting for
 * work: "[POOL wait]"), "[OpenMP dispatch]" (the native path from a Python
 * line to the pool is not known: "[POOL dispatch]"), "[native thread
 * NAME]" (--python-only: a thread with no Python frames).  Whether the
 * len bytes at name are one of the marks: how a folded reader tells them
 * from names such as "[libz.so.1+0x4a26]" (code without a symbol). */
bool ember_mark_name(const char *name, size_t len);
/* Whether a mark's name is a pool's wait mark ("[OpenMP wait]"). */
bool ember_mark_wait(const char *name);

struct ember_thread {
	uint32_t pid, tid;
	const char *name;      /* comm, interned; "" when never seen */
};

/* ---- Sample counts ----
 *
 * The row counts of a profile add up to at most its count_max, which is
 * EMBER_COUNT_MAX (2^63 - 1) unless set otherwise
 * (ember_profile_set_count_max).  So no sum over rows wraps (a frame's
 * total, a thread's, the profile's), every count fits the signed 64-bit
 * integers of pprof and of most consumers, and every percentage is of the
 * true total.  ember_profile_add holds the line: what
 * would take the total past count_max is cut off (the count saturates) and
 * ember_profile_saturated says so, for the caller to reject the input or
 * warn. */
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

/* Room for any count with thousands separators: 20 digits, 6 commas, NUL. */
#define EMBER_COUNT_TEXT_MAX 32

/* v as "1,234,567" (flamegraph.pl's tooltips, the diff's totals), at the
 * end of buf; returns where it starts. */
static inline char *ember_count_commas(char buf[EMBER_COUNT_TEXT_MAX], uint64_t v)
{
	char *p = buf + EMBER_COUNT_TEXT_MAX - 1;
	int digits = 0;

	*p = '\0';
	do {
		if (digits++ && digits % 3 == 1)
			*--p = ',';
		*--p = (char)('0' + v % 10);
	} while (v /= 10);
	return p;
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

/* A profile.  Its layout is here so that a profile can live on the stack or
 * inside another struct (a diff holds two), and so that the reading
 * functions below are inline; its fields are the model's own (profile/),
 * except meta, which whoever builds a profile fills.  Everyone else reads
 * through "Reading a profile" below. */
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

/* ---- Building a profile ----
 *
 * ember_profile_init, then frames, stacks and threads interned, rows and
 * timed samples added; whoever builds the profile fills p->meta (strings
 * interned with ember_profile_cstr).  ember_profile_free frees it all. */

/* 0, or -1 on OOM (p is then free). */
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

/* Index of thread (pid, tid), adding it if new; a non-empty name replaces the
 * old one (threads are named by their last comm).  UINT32_MAX on OOM. */
uint32_t ember_profile_thread(struct ember_profile *p, uint32_t pid, uint32_t tid,
			      const char *name);

/* Add count samples of stack on thread.  When the profile's total would
 * pass its count_max, only what fits is added and the profile is saturated
 * (see "Sample counts" above).  Returns 0, or -1 on OOM or when stack or
 * thread is not an id of p. */
int ember_profile_add(struct ember_profile *p, uint32_t stack, uint32_t thread, uint64_t count);
/* The same into the row of stack, thread and flags (enum ember_row_flags;
 * -1 for an unknown flag). */
int ember_profile_add_row(struct ember_profile *p, uint32_t stack, uint32_t thread, uint32_t flags,
			  uint64_t count);
/* The same for attributed samples: into the row of stack, thread, flags
 * (with EMBER_ROW_ATTRIBUTED when depth > 0) and depth. */
int ember_profile_add_row_depth(struct ember_profile *p, uint32_t stack, uint32_t thread, uint32_t flags,
				uint32_t depth, uint64_t count);

/* Append one timed sample (does not touch rows: call ember_profile_add too).
 * Returns 0, or -1 on OOM or a bad id. */
int ember_profile_add_timed(struct ember_profile *p, uint64_t time_ns, uint32_t stack, uint32_t thread);
/* Sort the timeline by time (stable).  Call once after adding out of order. */
void ember_profile_sort_timeline(struct ember_profile *p);

/* p->meta = *m, with m's strings (command, source) interned in p.  0, or
 * -1 on OOM. */
int ember_profile_set_meta(struct ember_profile *p, const struct ember_run_meta *m);

/* The most p's rows may add up to ("Sample counts"): for a profile that holds
 * several runs, each at most EMBER_COUNT_MAX.  Before any row is added. */
void ember_profile_set_count_max(struct ember_profile *p, uint64_t max);

/* How the rows of one profile map into another (ember_profile_add_rows_of). */
struct ember_profile_map {
	const uint32_t *frame;       /* by frame id of the source: a frame id of the destination */
	const bool *merge_runs;      /* NULL, or by frame id of the source: consecutive frames of a stack
	                              * that are marked and map to one frame become that frame once */
	const uint32_t *thread;      /* by thread index of the source: a thread of the destination;
	                              * NULL: every row goes to one_thread */
	uint32_t one_thread;
	uint32_t row_flags;          /* the row flags kept (enum ember_row_flags; 0: none) */
};

/* Add every row of src with samples to p, its stack's frames and its thread
 * mapped by m, with ember_profile_add_row (so rows that map alike add up).
 * 0, or -1 on OOM or when m maps to an id p does not have. */
int ember_profile_add_rows_of(struct ember_profile *p, const struct ember_profile *src,
			      const struct ember_profile_map *m);

/* ---- Reading a profile ----
 *
 * Ids are dense: frames 0 .. nframes - 1, stacks 0 .. nstacks - 1, threads
 * 0 .. nthreads - 1, rows 0 .. nrows - 1, timed samples 0 .. ntimed - 1; an
 * id is valid when below its count.  A profile only grows: an item never
 * changes once added (a row's count may rise, a thread's name change), so
 * ids read before stay valid.  The pointers returned are valid until the
 * next call that adds to p.  Inline: every writer calls them per frame. */

static inline uint32_t ember_profile_nframes(const struct ember_profile *p)
{
	return p->nframes;
}

/* Frame id: its strings are p's interned ones, never NULL. */
static inline const struct ember_frame *ember_profile_frame_at(const struct ember_profile *p, uint32_t id)
{
	return &p->frames[id];
}

static inline uint32_t ember_profile_nstacks(const struct ember_profile *p)
{
	return p->nstacks;
}

/* The frame ids of stack, root first: *n of them (0 for an empty stack). */
static inline const uint32_t *ember_profile_stack_frames(const struct ember_profile *p, uint32_t stack,
							 uint32_t *n)
{
	*n = p->stack_len[stack];
	return p->stack_frames + p->stack_off[stack];
}

/* The number of frames of stack. */
static inline uint32_t ember_profile_stack_depth(const struct ember_profile *p, uint32_t stack)
{
	return p->stack_len[stack];
}

static inline uint32_t ember_profile_nthreads(const struct ember_profile *p)
{
	return p->nthreads;
}

static inline const struct ember_thread *ember_profile_thread_at(const struct ember_profile *p, uint32_t i)
{
	return &p->threads[i];
}

/* Rows come in the order they were first added; one per (stack, thread,
 * flags).  A row's count may be 0 (a stack of a live profile that has not
 * run since, or a row of a file written so). */
static inline uint32_t ember_profile_nrows(const struct ember_profile *p)
{
	return p->nrows;
}

static inline const struct ember_sample_row *ember_profile_row_at(const struct ember_profile *p, uint32_t r)
{
	return &p->rows[r];
}

/* The timeline, in time order (ember_profile_sort_timeline); empty for a
 * profile read from folded stacks.  It may hold fewer samples than the rows
 * count (a capped recording): json_out.h's writers check. */
static inline size_t ember_profile_ntimed(const struct ember_profile *p)
{
	return p->ntimeline;
}

static inline const struct ember_timed_sample *ember_profile_timed_at(const struct ember_profile *p, size_t i)
{
	return &p->timeline[i];
}

/* What the run was: command, rate, counters (strings interned, never NULL
 * once set; command is "" from ember_profile_init on). */
static inline const struct ember_run_meta *ember_profile_meta(const struct ember_profile *p)
{
	return &p->meta;
}

/* Sum of all row counts (never above the profile's count_max). */
static inline uint64_t ember_profile_total(const struct ember_profile *p)
{
	return p->total;
}

/* ... of the rows flagged EMBER_ROW_OFF_CPU. */
static inline uint64_t ember_profile_off_cpu_total(const struct ember_profile *p)
{
	return p->off_cpu_total;
}

/* ... of the rows flagged EMBER_ROW_ATTRIBUTED: pool threads' samples put
 * under the stack that dispatched their work (docs/pools.md). */
uint64_t ember_profile_attributed_total(const struct ember_profile *p);

/* An add was cut at count_max: the counts are lower bounds. */
static inline bool ember_profile_saturated(const struct ember_profile *p)
{
	return p->saturated;
}

/* Seconds one sample stands for (meta.interval_ns, else 1/freq_hz, else 0.01). */
double ember_profile_interval_s(const struct ember_profile *p);

/* ---- Files: the lossless .ember format and folded stacks from any tool ---- */

enum ember_load_status {
	EMBER_LOAD_OK = 0,
	EMBER_LOAD_NOINPUT = 1,    /* missing or unreadable file */
	EMBER_LOAD_BADDATA = 2,    /* malformed, truncated, newer version, or no samples */
	EMBER_LOAD_NOMEM = 3,      /* out of memory while reading */
};

/* What tolerant folded reading had to accept; `ember convert` prints it. */
struct ember_load_warnings {
	uint64_t lines;            /* lines read */
	uint64_t skipped;          /* lines without a usable count (blank lines not counted) */
	uint64_t crlf;             /* lines ending in CR LF */
	uint64_t cr_only;          /* lines ending in a CR alone (classic Mac OS), each a line of its own */
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

#endif
