/* ember dump: every thread's current stack of a running process, once.
 *
 * For each thread of the target, one at a time: its state as /proc shows
 * it (run state, the system call it is in, wchan) read first, then the
 * thread is stopped with PTRACE_SEIZE + PTRACE_INTERRUPT, its user
 * registers taken (PTRACE_GETREGSET, NT_PRSTATUS), up to 64 KB of its
 * stack copied from SP (process_vm_readv), its Python frames read (while
 * it is stopped, so they match the native stack exactly; with the GIL's
 * holder and, on request, the frames' local variables), and it is
 * detached.  Unwinding (unwind/unwinder.h), symbolization (symbolizer/)
 * and the merge of Python frames over the eval-loop activations
 * (python-stacks/session/session.h) run after every thread is running again.
 *
 * A thread is stopped for as long as its registers, its stack copy and
 * its Python frames take (tens to hundreds of microseconds); each pause is
 * measured.  Every path detaches; when ember itself dies mid-dump, the
 * kernel releases its tracees (a seized thread is never left stopped: the
 * interrupt's stop ends with the tracer).  A thread that does not stop
 * within a second (uninterruptible sleep) gets no stack and stays seized,
 * running, until it stops (it is then stopped until the caller exits) or
 * the caller exits: meant for a short-lived caller such as `ember dump`.
 *
 * Not thread-safe; one dump at a time per caller. */
#ifndef EMBER_DUMP_H
#define EMBER_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum ember_dump_status {
	EMBER_DUMP_OK = 0,
	EMBER_DUMP_GONE = 1,         /* no such process (or it ended during the dump, or a kernel thread) */
	EMBER_DUMP_NO_ACCESS = 2,    /* not permitted to trace or read it */
	EMBER_DUMP_ERROR = 3,        /* out of memory, or another system failure */
};

struct ember_dump_opts {
	bool locals;                 /* read each Python frame's local variables */
	bool native_unfiltered;      /* keep the interpreter's own native frames */
	/* Test knob: sleep this long while each thread is stopped (to check
	 * that a killed ember leaves its target running). */
	uint32_t stopped_sleep_ms;
};

enum ember_dump_frame_kind {
	EMBER_DUMP_NATIVE,
	EMBER_DUMP_PYTHON,
	EMBER_DUMP_SPECIAL,          /* "[truncated]", "[python frames uncertain]" */
};

/* One local variable: its name and a short repr ("42", "'abc'", "b'xy'",
 * "None", "3.5") or its type's name in angle brackets ("<dict>"). */
struct ember_dump_local {
	const char *name;
	const char *value;
};

struct ember_dump_frame {
	enum ember_dump_frame_kind kind;
	const char *name;            /* function (qualname for Python) */
	const char *file;            /* "" when unknown */
	uint32_t line;               /* 0 when unknown */
	const char *module;          /* native: module base name; Python: "" */
	bool inlined;                /* native: inlined into the next (outer) frame */
	const struct ember_dump_local *locals;
	uint32_t nlocals;
};

struct ember_dump_thread {
	uint32_t tid;
	const char *name;            /* threading.Thread.name, else the comm */
	const char *comm;
	char state;                  /* /proc's letter: R, S, D, ... */
	const char *state_text;      /* "running", "sleeping", "disk sleep", ... */
	long syscall;                /* the system call it is blocked in; -1: none (running in user space) */
	const char *syscall_name;    /* "futex", "clock_nanosleep", ...; "" when not known */
	const char *wchan;           /* where the kernel has it waiting; "" when none */
	bool python;                 /* it has Python frames */
	bool gil_known, holds_gil;
	bool stopped;                /* its registers were taken: false when it ended or could not be stopped */
	const char *error;           /* why it has no stack, or NULL */
	uint64_t pause_ns;           /* how long it was kept stopped: from the stop seen to the detach */
	uint64_t stop_wait_ns;       /* from the interrupt until the stop was seen (a sleeping
	                              * thread must be woken and scheduled to stop) */
	const struct ember_dump_frame *frames;   /* innermost first */
	uint32_t nframes;
};

struct ember_dump {
	pid_t pid;
	const char *exe;
	const char *cmdline;         /* arguments joined by spaces */
	const char *python;          /* "CPython 3.12.1", or "" when not Python */
	const char *python_note;     /* why Python frames are missing (a refused build), or "" */
	const char *locals_note;     /* with opts.locals: why locals are not shown, or "" */
	const struct ember_dump_thread *threads;
	uint32_t nthreads;
	uint64_t pause_max_ns, pause_total_ns;
	uint64_t stop_wait_max_ns;
};

/* Dump pid.  On EMBER_DUMP_OK *out is the dump (ember_dump_free); otherwise
 * msg has a one-line reason. */
int ember_dump_take(pid_t pid, const struct ember_dump_opts *opts, struct ember_dump **out, char *msg,
		    size_t msglen);
void ember_dump_free(struct ember_dump *d);

#endif
