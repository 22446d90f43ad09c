/* ember python-stacks: read the Python frames of a thread of another process.
 *
 * For a target PID, ember_python_open() finds the CPython runtime (libpython
 * or the executable, PIE or not, stripped or not), detects the exact version
 * from the running process, checks the mapped file's build-id and loads the
 * struct offsets of that version (generated tables for 2.7, 3.6-3.12; the
 * runtime's own _Py_DebugOffsets for 3.13).  ember_python_read_thread() then
 * reads one OS thread's current Python stack with process_vm_readv, meant to
 * be called per sample, right after the kernel took the native sample.
 *
 * Hot-path design: every read of a thread remembers which remote addresses it
 * touched (thread state, frames, code-object headers, ...) and the next read
 * of that thread fetches all of them in ONE batched process_vm_readv before
 * walking, falling back to single reads only for what changed.  Code objects
 * are decoded once (names as UTF-8, line table pre-decoded into sorted runs),
 * cached by remote address and re-validated on every use by comparing their
 * header words (type, name/filename/line-table pointers, first line, size),
 * so a freed and reused address gets a new code id.
 *
 * Not thread-safe: one struct ember_python per target, used by one thread.
 * Supported: CPython 2.7, 3.6-3.13 on x86-64 and AArch64 Linux/glibc, release and
 * Py_DEBUG builds of 3.8+ (same layouts).  Refused with a message:
 * Py_TRACE_REFS builds (incl. every debug build of 2.7-3.7), free-threaded
 * 3.13t, 3.14+, other major versions.  See python-stacks/README.md. */
#ifndef EMBER_PYTHON_STACKS_H
#define EMBER_PYTHON_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probe_regs.h"

struct ember_python;  /* one target process */

enum ember_py_status {
	EMBER_PY_OK = 0,
	EMBER_PY_NOT_PYTHON = 1,   /* no CPython runtime in the process */
	EMBER_PY_UNSUPPORTED = 2,  /* CPython, but a version/build we refuse (message says which) */
	EMBER_PY_NO_ACCESS = 3,    /* not permitted to read its memory */
	EMBER_PY_ERROR = 4,        /* other failure (message says what) */
	EMBER_PY_GONE = 5,         /* no such process: it ended (or never was) */
};

struct ember_python_opts {
	uint32_t max_depth;      /* frames walked per read before EMBER_PY_TRUNCATED; 0 = 131072 */
	bool verify;             /* after a walk that needed more than the one batched prefetch
	                          * (objects the previous read did not use), re-read the
	                          * top-frame pointer (one extra small read) and flag
	                          * EMBER_PY_TORN when it changed */
	bool no_build_id_check;  /* skip comparing the file's build-id with the mapped one */
	bool no_gil_check;       /* do not find out who holds the GIL (EMBER_PY_GIL_KNOWN never
	                          * set): saves reading the GIL's state on every read */
	uint32_t code_recheck_ms; /* 0 (default): re-validate every cached code object on every
	                          * read (its header words are part of the batched read);
	                          * N: at most every N ms per code object, which drops those
	                          * reads from most samples (a freed and reused code address is
	                          * then noticed within N ms) */
	bool no_debug_info;      /* do not read the interpreter's DWARF for where the eval loop
	                          * keeps its instruction pointer: learn it from samples only */
	bool defer_debug_info;   /* the caller reads with frames copied at the sample
	                          * (ember_python_read_sample), which need no help from the
	                          * DWARF: read it (up to ~200 ms of CPU) only once reads
	                          * keep coming without a copy; until then only the eval
	                          * loop's .cold part is looked for (cheap) */
};
#define EMBER_PYTHON_OPTS_DEFAULT { .max_depth = 131072, .verify = true, .no_build_id_check = false, \
                                    .no_gil_check = false, \
                                    .code_recheck_ms = 0, .no_debug_info = false, \
                                    .defer_debug_info = false }

/* Attach to process pid (it keeps running; nothing is stopped or ptraced).
 * opts may be NULL (defaults).  On success returns EMBER_PY_OK and *out; on
 * failure returns another status and writes a one-line reason to msg (e.g.
 * "pid 42: /bin/sleep: no CPython runtime (no libpython mapped, no _PyRuntime
 * or interp_head symbol)" or "CPython 3.13.0 free-threaded build: not
 * supported").  A process whose interpreter is not initialised yet opens fine;
 * its threads read as having no Python state until it is. */
int ember_python_open(struct ember_python **out, pid_t pid, const struct ember_python_opts *opts,
                      char *msg, size_t msglen);

/* "3.11.7", "2.7.18": the exact version of the target's runtime. */
const char *ember_python_version(const struct ember_python *py);

/* Description of where the runtime was found, e.g.
 * "/usr/bin/python3.11 (static, non-PIE, .dynsym only, version from Py_Version)". */
const char *ember_python_describe(const struct ember_python *py);

/* Frees everything, including every code id handed out. */
void ember_python_close(struct ember_python *py);

/* One Python frame. */
struct ember_py_frame {
	uint32_t code;             /* code id: ember_python_code(); never 0 */
	uint32_t line;             /* line number as CPython computes it; 0 = no line */
	bool activation_start;     /* this frame is the first one a C-level eval-loop call
	                            * (PyEval_EvalFrameEx / _PyEval_EvalFrameDefault) runs:
	                            * the outermost frame of its run.  Innermost first, the
	                            * frames of one native eval frame are a run ending with
	                            * a frame that has this set.  <=3.10: every frame;
	                            * 3.11: the is_entry frame; 3.12/3.13: the frame just
	                            * above a C-stack shim frame (and the bottom frame). */
	bool cut;                  /* frames were left out between this frame and the next one
	                            * (its caller side): the stack was deeper than the read's max
	                            * (EMBER_PY_CUT); at most one frame of a read has it */
	bool cut_spans;            /* ... and those frames ran in the same eval-loop activation
	                            * as this frame and the next: one native activation holds
	                            * both sides of the cut */
	uint16_t cut_runs;         /* ... else the eval-loop activations the left-out frames ran
	                            * in whole (their native activations lie between) */
};

enum ember_py_read_flags {
	EMBER_PY_TORN       = 1u << 0, /* frames changed under the read (verify mismatch, link cycle,
	                                * instruction pointer outside its code): do not trust the stack */
	EMBER_PY_TRUNCATED  = 1u << 1, /* more frames than max_depth: the outermost are missing */
	EMBER_PY_HOLDS_GIL  = 1u << 2, /* this thread holds its interpreter's GIL (3.13: _status.holds_gil) */
	EMBER_PY_UNREADABLE = 1u << 3, /* a pointer on the chain was invalid or unreadable: the stack
	                                * stops there (outer frames missing) */
	EMBER_PY_GIL_KNOWN  = 1u << 4, /* GIL ownership could be determined (HOLDS_GIL meaningful) */
	EMBER_PY_CHECKED    = 1u << 5, /* ember_python_reconcile: every activation's running code was
	                                * checked against what the native sample held */
	EMBER_PY_CORRECTED  = 1u << 6, /* ember_python_reconcile: frames the thread had left by the
	                                * time of the read were replaced by the sample's */
	EMBER_PY_AT_SAMPLE  = 1u << 7, /* ember_python_read_sample: the frames are the ones the
	                                * kernel copied at the sample (not read after it) */
	EMBER_PY_BEFORE_COPIER = 1u << 8, /* ember_python_read_sample: no copy, as the sample came
	                                * before ember had told the copier where the thread's
	                                * frames are (its first samples; more when ember is late) */
	EMBER_PY_PEER       = 1u << 9, /* the frames are another thread's (the one that may have
	                                * dispatched the sampled thread's work), read at the
	                                * sample of a thread with no Python frames of its own */
	EMBER_PY_CUT        = 1u << 10, /* more frames than max: the innermost max/2 and the
	                                * outermost rest are kept, and the frame where the middle
	                                * was left out has cut set */
};

/* Frames of OS thread tid, innermost first, at most max of them.
 * Returns the count (>= 0; 0 when the thread has no Python state or no
 * Python frames), or a negative errno: -ESRCH the process is gone, -EPERM
 * no access.  *flags (may be NULL) gets enum ember_py_read_flags. */
int ember_python_read_thread(struct ember_python *py, uint32_t tid, struct ember_py_frame *out,
                             int max, uint32_t *flags);

/* ---- Frames copied at the sample (BPF) ----
 *
 * A read after the sample races the thread.  The frame copier is a BPF
 * program run by the kernel on each perf sample, in the sampled thread's
 * context, before the sample is written: it copies the bytes of the
 * thread's state, of its Python frames (at most 128; a deeper stack's outer
 * frames are read afterwards) and of their code objects' headers into a
 * ring buffer.  Attach its program to the perf events
 * (PERF_EVENT_IOC_SET_BPF), give it to each reader, and read samples with
 * ember_python_read_sample: the frames are then those of the sample's
 * instant, walked exactly like frames read by process_vm_readv, without a
 * system call once their code objects' names and line tables are cached.
 * Needs permission to load BPF (root, or CAP_BPF + CAP_PERFMON). */
struct ember_py_copier;
struct ember_py_copier_opts {
	bool debug;              /* print libbpf's messages (a failed load's verifier log) */
	bool stats;              /* have the kernel time every run of the program
	                          * (ember_py_copier_stats: runs, run_ns): system-wide
	                          * while the copier is open, so only on request */
	bool at_switch;          /* also copy at every context switch of a registered thread,
	                          * as it leaves the CPU (record --idle: the Python frames its
	                          * time off CPU goes to); when that cannot be attached, the
	                          * copier runs without it (ember_py_copier_switch_note) */
	bool unrolled;           /* load the variant whose loops are unrolled, as on a kernel
	                          * without bpf_loop (before 5.17), where it is the one
	                          * loaded (tests: the two copy alike) */
};
/* Load the copier (opts may be NULL: none).  EMBER_PY_OK, or
 * EMBER_PY_NO_ACCESS / EMBER_PY_ERROR with a one-line reason in msg. */
int ember_py_copier_open(struct ember_py_copier **out, const struct ember_py_copier_opts *opts, char *msg,
			 size_t msglen);
/* Whether this kernel checks the copier quickly (it has bpf_loop, 5.17
 * and later: milliseconds; without, the check walks every iteration of
 * the frame loop: 0.2-0.4 s on a laptop, several times that on a board).
 * Asked of the kernel once, in a fraction of a millisecond. */
bool ember_py_copier_quick(void);
/* With opts.at_switch: why the copy at context switches is not made (one
 * line), or NULL when it is. */
const char *ember_py_copier_switch_note(const struct ember_py_copier *st);
/* Whether the unrolled variant was loaded (opts.unrolled, or a kernel
 * without bpf_loop, or one that refused the other): its load costs the
 * kernel's verifier a third of a second or more, the other's milliseconds. */
bool ember_py_copier_unrolled(const struct ember_py_copier *st);
/* The program to attach to every perf event. */
int ember_py_copier_prog_fd(const struct ember_py_copier *st);
/* Readable when a record must be read at once: the copier wakes ember only
 * for a sample whose late read could go wrong (a code object it has not
 * seen, which may be freed soon; a thread not registered yet; a copy cut
 * short; its ring a quarter full); drain the samples then, and on a timer
 * otherwise.  Call
 * ember_py_copier_consume after each drain: it keeps the records no
 * read took yet for later reads, and empties the ring (the fd stays
 * readable while it holds records). */
int ember_py_copier_wake_fd(const struct ember_py_copier *st);
void ember_py_copier_consume(struct ember_py_copier *st);
void ember_py_copier_close(struct ember_py_copier *st);
struct ember_py_copier_stats {
	uint64_t records;        /* records received */
	uint64_t woke;           /* ... that woke ember (the rest waited for its timer) */
	uint64_t learnt;         /* code objects named as the record that woke ember arrived */
	uint64_t read_in_place;  /* ... read where they arrived (their sample's read took them) */
	uint64_t kept, read_kept;/* ... copied for a later read (another thread's, ember behind),
	                          * and those a later read took */
	uint64_t replaced;       /* overwritten before a read took them (ember fell far behind) */
	bool timed;              /* runs/run_ns known: only when opened with opts.stats */
	uint64_t runs, run_ns;   /* the program's runs in the targets, and their total time */
};
void ember_py_copier_stats(const struct ember_py_copier *st, struct ember_py_copier_stats *out);
/* Use st (owned by the caller, shared by readers) for py's threads; close
 * the readers before st (each is listed in st, whose records it names). */
void ember_python_set_copier(struct ember_python *py, struct ember_py_copier *st);
/* As ember_python_read_thread, for the sample of tid taken at time_ns
 * (CLOCK_MONOTONIC): from the frames the copier took at that sample when
 * it has them (EMBER_PY_AT_SAMPLE set), else read now.  A thread's samples
 * before the reader found it in a scan of the thread states are read now:
 * the copier learns of threads from those scans.  For a thread given a
 * peer (ember_python_set_peer), the peer's frames copied at the sample
 * (EMBER_PY_AT_SAMPLE | EMBER_PY_PEER, *peer set; peer may be NULL), or
 * none. */
int ember_python_read_sample(struct ember_python *py, uint32_t tid, uint64_t time_ns, struct ember_py_frame *out,
                             int max, uint32_t *flags, uint32_t *peer);
/* Thread tid has no Python state of its own (a thread pool's worker): at
 * its samples, copy the frames of Python thread peer instead (the thread
 * that dispatches its work; 0: none), read back with
 * ember_python_read_sample.  Without the copier, nothing. */
void ember_python_set_peer(struct ember_python *py, uint32_t tid, uint32_t peer);

/* Split frames[0..n) (innermost first) into runs, one per eval activation,
 * root first: run r is frames[lo[r] .. hi[r]], lo[r] its innermost frame.
 * A cut frame ends a run too (the two sides of a cut are runs of their own).
 * Returns the number of runs (at most max). */
uint32_t ember_python_runs(const struct ember_py_frame *frames, uint32_t n, uint32_t *lo, uint32_t *hi,
                           uint32_t max);

/* ---- Checking a read against the native sample ----
 *
 * A read happens after the sample (tens of microseconds, milliseconds on a
 * busy machine), and the thread may have moved to another function by then.
 * The native sample itself knows better: each eval-loop activation keeps its
 * instruction pointer in a register or a stack slot, and the sampler records
 * those (callee-saved registers as the unwinder restored them, and the words
 * of the activation's own stack frame).  Which candidate holds it depends on
 * the compiler and the pc: the interpreter's DWARF says so where it has some
 * (read in a thread of its own after ember_python_open; opts.no_debug_info
 * turns it off), otherwise the reader learns it per call site, from samples
 * whose read agreed.  It maps the sampled instruction pointer back to its
 * code object (by bytecode address, among the code objects it has read) and
 * line.  That confirms each activation's running function, corrects the
 * ones the thread had already left, and gives the line at the sample. */

/* Whether pc lies in the eval-loop function (_PyEval_EvalFrameDefault;
 * PyEval_EvalFrameEx on 2.7; the hot part and its .cold part, named by the
 * symbol table, by DWARF, or found from the hot part's jumps): the native
 * frames that are Python activations. */
bool ember_python_is_eval(const struct ember_python *py, uint64_t pc);
/* The same for an address in a file's own virtual addresses (as the
 * symbolizer sees frames): whether vaddr of the mapped file `path` lies in
 * the eval loop.  For the .cold part found without a symbol, which no name
 * gives away. */
bool ember_python_is_eval_vaddr(const struct ember_python *py, const char *path, uint64_t vaddr);

/* What the native sample held for one eval activation: candidate words with
 * a fixed meaning per index across samples.  Learning works with any fixed
 * layout; the interpreter's DWARF (when it has some) is used only with this
 * one, the sampler's: vals[0..EMBER_PROBE_REGS) the registers of
 * probe_regs.h (0 = unknown), vals[EMBER_PROBE_REGS + k] the word at
 * CFA - 8 * (k + 1). */
#define EMBER_PY_EVIDENCE_MAX 128
#define EMBER_PY_EVIDENCE_REGS EMBER_PROBE_REGS
struct ember_py_evidence {
	uint64_t pc;             /* where the activation is: the call site, or the sampled pc */
	bool leaf;               /* the activation is the sampled frame itself */
	uint32_t n;              /* <= EMBER_PY_EVIDENCE_MAX */
	const uint64_t *vals;    /* 0 = unknown */
};

/* Check (and correct) frames[0..n) of one read (innermost first, max
 * capacity) against the sample's activations ev[0..nev) (root first).
 * read_lag_ns: how long after the sample the read started; only prompt
 * reads (< 1 ms) teach which candidate holds the instruction pointer.
 * Returns the new frame count and updates *flags (EMBER_PY_CHECKED,
 * EMBER_PY_CORRECTED; TORN/UNREADABLE cleared when the stack could be
 * rebuilt from the sample alone, as on <= 3.10 where each activation runs
 * one frame).  Frames are left alone when nothing is known yet. */
int ember_python_reconcile(struct ember_python *py, const struct ember_py_evidence *ev, uint32_t nev,
                           bool native_truncated, uint64_t read_lag_ns, struct ember_py_frame *frames,
                           int n, int max, uint32_t *flags);

/* What a code id stands for.  Strings are UTF-8, owned by py, valid until
 * ember_python_close().  qualname: co_qualname from 3.11; before, the
 * class guessed from a first argument named self or cls ("Model.forward",
 * a code id of its own per class), else the name.  short_filename is the package-relative path like
 * py-spy ("numpy/core/numeric.py", "script.py"); filename is co_filename as
 * the compiler got it.  Unreadable strings are "?". */
struct ember_py_code {
	const char *name;
	const char *qualname;
	const char *filename;
	const char *short_filename;
	uint32_t first_line;
};
const struct ember_py_code *ember_python_code(const struct ember_python *py, uint32_t code);

/* Counters for tests and the summary. */
struct ember_python_stats {
	uint64_t reads;          /* ember_python_read_thread calls */
	uint64_t syscalls;       /* process_vm_readv calls, all paths */
	uint64_t prefetch_hits;  /* remote objects served from the batched prefetch */
	uint64_t single_reads;   /* remote objects read one by one */
	uint64_t codes;          /* code ids created */
	uint64_t code_revalidations_failed; /* cached address now holds another code object */
	uint64_t thread_scans;   /* walks of the interpreter/thread lists */
	uint64_t torn, unreadable;       /* reads that stayed torn / unreadable after retries */
	uint64_t torn_retries;           /* re-reads after a torn read */
	uint64_t checked, corrected;     /* ember_python_reconcile results */
	uint64_t evidence_sites;         /* eval-loop sites whose instruction-pointer holder is learnt */
	uint64_t at_sample;              /* reads that walked frames copied at the sample */
};
void ember_python_stats(const struct ember_python *py, struct ember_python_stats *out);

/* ---- Local variables (locals.c) ----
 *
 * The local variables of a frame of the last ember_python_read_thread:
 * read from the target after the read, so meant for a thread that is
 * stopped (ember dump).  Supported: 2.7 and 3.6-3.15 (3.14+ keep tagged
 * references in the frame's slots: the tag is taken off, and a small int
 * held in the reference's own bits is shown as that int). */
struct ember_py_local {
	char name[64];
	char value[96];   /* "42", "-7", "3.5", "'text'", "b'\\x00'", "None", "True",
	                   * "<int>" (more than two digits), "<dict>" (any other type) */
};
/* Whether py's version has them; else a one-line reason in why. */
bool ember_python_locals_supported(const struct ember_python *py, char *why, size_t len);
/* The bound locals of frames[depth] of the last read (depth 0: the
 * innermost), at most max (and 64) of them, in the code object's order.
 * Returns their count, or -1 when they cannot be read. */
int ember_python_frame_locals(struct ember_python *py, uint32_t depth, const struct ember_py_frame *frame,
                              struct ember_py_local *out, int max);

/* The Python name of OS thread tid, threading.Thread.name ("MainThread",
 * "Thread-3 (worker)", Dummy-N for foreign threads that called
 * threading.current_thread()), as UTF-8 into buf (NUL-terminated, cut at a
 * character boundary to fit len).  Returns its length, or 0 when unknown:
 * no Python state, threading not imported (yet), the thread not (yet) in
 * threading._active, a name that is not a str, or anything unreadable.
 * Found through sys.modules["threading"]._active[ident] (ident =
 * pthread_self, the thread state's thread_id), then the Thread's _name
 * attribute (2.7: _Thread__name).  Cold path: about 15 small reads once
 * the threading module is known (the first call scans sys.modules);
 * callers cache names and re-read them rarely (ember record: at most once
 * a second per thread).  Never used by ember_python_read_thread. */
int ember_python_thread_name(struct ember_python *py, uint32_t tid, char *buf, size_t len);

#endif
