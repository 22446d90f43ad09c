/* Shared by the files of dump/ (dump.h is the contract). */
#ifndef EMBER_DUMP_INTERNAL_H
#define EMBER_DUMP_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>

#include "dump.h"
#include "dump_stop.h"
#include "process_model.h"
#include "profile.h"
#include "python_stacks.h"
#include "resolve.h"
#include "sampler.h"
#include "strtab.h"
#include "unwinder.h"

#define MAX_PY 512
#define MAX_LOCALS 64

/* What the dump owns beyond its public part. */
struct dump_owned {
	struct ember_dump pub;
	struct ember_strtab *st;
	struct ember_dump_thread *threads;
	size_t cap;
};

/* One thread while it is taken: what was read while it was stopped. */
struct work {
	struct ember_py_frame py[MAX_PY];
	int npy;
	uint32_t pyflags;
	struct ember_dump_local *locals[MAX_PY];   /* by Python frame, innermost first */
	uint32_t nlocals[MAX_PY];
	struct ember_frame_addr nat[EMBER_MAX_FRAMES];
	uint32_t nnat, uflags;
};

struct dumper {
	pid_t pid;
	const struct ember_dump_opts *o;
	struct dump_owned *d;
	struct ember_python *py;
	bool locals;                 /* opts.locals and the reader can read them */
	bool native_ready;           /* pm and uw made */
	bool frames_ready;           /* frames made */
	struct process_model pm;
	struct process *proc;
	struct unwinder uw;
	struct ember_profile frames;  /* what the threads' stacks resolve to */
	struct ember_resolver *rv;    /* NULL until the process model is made */
	struct dump_regs regs;
	struct work *w;
};

/* An interned copy of s (NULL reads as ""), valid as long as the dump. */
const char *dump_keep(struct dumper *dp, const char *s);
/* Resolve w's stack (symbolize its native frames, merge its Python frames
 * over them) and set t's frames (innermost first); their count.  Takes w's
 * locals. */
uint32_t dump_resolve(struct dumper *dp, struct work *w, struct ember_dump_thread *t);


/* What /proc says about one thread (dump_proc.c). */
struct thread_proc {
	char state;
	const char *state_text;      /* static */
	long syscall;                /* -1: not in a system call */
	const char *syscall_name;    /* static; "" when not in the table */
	char wchan[64];
	char comm[32];
};
void dump_thread_proc(pid_t pid, uint32_t tid, struct thread_proc *out);

#endif
