/* ember python-stacks, the merge: a sample's Python frames laid over the
 * eval-loop activations of its native stack, given each native frame's
 * class (ember_py_native_class; the interpreter's call machinery by name,
 * machinery.c).  Pure: it reads its input and writes its output, nothing
 * else (merge.c). */
#ifndef EMBER_PY_MERGE_H
#define EMBER_PY_MERGE_H

#include <stdbool.h>
#include <stdint.h>

#include "python_stacks.h"

/* What a native frame is to the merge (bits). */
enum ember_native_class {
	EMBER_NATIVE_EVAL = 1,        /* an eval-loop activation (3.x _PyEval_EvalFrameDefault) */
	EMBER_NATIVE_EVAL_EX = 2,     /* PyEval_EvalFrameEx: 2.7's eval loop, a wrapper on 3.x */
	EMBER_NATIVE_INTERP = 4,      /* the interpreter's own machinery */
	EMBER_NATIVE_TAKE_GIL = 8,    /* waiting for the GIL: always shown */
	EMBER_NATIVE_ROOT = 16,       /* _start, __libc_start_main, clone3, start_thread... */
	EMBER_NATIVE_LIBC_ANON = 32,  /* an address of libc that no symbol names */
	EMBER_NATIVE_MACHINERY = 64,  /* the interpreter's call machinery (ember_py_machinery): hidden
	                               * where Python frames stand for it */
	EMBER_NATIVE_ANON = 128,      /* an address no symbol names */
};
/* Whether function (a symbolized name; a GCC clone suffix such as
 * ".lto_priv.0" is ignored) is the interpreter's call machinery: a
 * function every call goes through from a Python frame to what it calls,
 * the eval loop's frame setup, the interpreter's start or a thread's
 * bootstrap (machinery.c).  The rest of the interpreter (its collector,
 * allocator, compiler, built-in types and modules) is shown. */
bool ember_py_machinery(const char *function);
/* The class of a symbolized native function (module: its file's base
 * name, "[jit]" for JIT code; NULL reads as ""; named: a symbol named it,
 * false when the name was made from the module and offset). */
uint8_t ember_py_native_class(const char *function, const char *module, bool named);
struct ember_merge_opts {
	bool python_only;          /* Python frames only (py-spy's default view) */
	bool native_unfiltered;    /* keep interpreter-internal frames */
};

/* One native frame of the stack with what it expanded to. */
struct ember_native_group {
	const uint32_t *ids;       /* the caller's frame ids, outermost first */
	uint32_t n;
	uint8_t cls;               /* enum ember_native_class bits */
};
/* Root-first groups g[0..n): an unnamed libc group called by a root group
 * is the rest of the root (__libc_start_call_main in a libc without a
 * symbol table, as Debian sid's glibc 2.43), and gets EMBER_NATIVE_ROOT.
 * whole: the unwind reached the outermost frame; then an unnamed libc group
 * there is a root too (a thread's clone3 and start_thread where libc has
 * no symbol table, as Debian's without libc6-dbg). */
void ember_py_root_groups(struct ember_native_group *g, uint32_t n, bool whole);

enum ember_merged_kind {
	EMBER_MERGED_NATIVE,       /* value: one of a group's ids */
	EMBER_MERGED_PYTHON,       /* value: the index of a frame in py[] */
	EMBER_MERGED_UNCERTAIN,    /* "[python frames uncertain]": trust ends here */
	EMBER_MERGED_CUT,          /* "[truncated]": the Python frames left out of a read deeper
	                            * than its max (EMBER_PY_CUT), between the root side kept
	                            * and the leaf side */
};
struct ember_merged {
	uint32_t kind;             /* enum ember_merged_kind */
	uint32_t value;
	uint32_t group;            /* the native group it stands at: a native frame's own, the
	                            * eval-loop activation a Python run or mark replaces;
	                            * EMBER_MERGED_BEFORE for the runs a cut-off native stack
	                            * lost (they come first), ember_merge_in.ngroups for what
	                            * follows every group. Items come in this order. */
};
#define EMBER_MERGED_BEFORE UINT32_MAX

#define EMBER_MERGE_MAX_GROUPS 512              /* native groups a merge takes (EMBER_MAX_FRAMES) */
struct ember_merge_in {
	const struct ember_native_group *groups;   /* root first, at most EMBER_MERGE_MAX_GROUPS */
	uint32_t ngroups;
	const struct ember_py_frame *py;           /* innermost first */
	uint32_t npy, pyflags;                     /* enum ember_py_read_flags */
	uint8_t eval_class;                        /* ember_py_eval_class; 0: not a Python process */
	bool native_truncated;                     /* the native stack lost its root side */
	bool native_incomplete;                    /* ... its unwind stopped short of the root */
};

/* The merged stack, root first, into out (at most cap items; the rest are
 * dropped). Each eval-loop activation is replaced by the run of Python
 * frames it was running (ember_python_runs); when the counts disagree the
 * runs pair from the root, or from the leaf when the native stack lost its
 * root; a torn read keeps all runs but the innermost; an UNCERTAIN item
 * marks where trust ends, and *uncertain says there is one (a stack whose
 * unwind stopped short of the root pairs as a cut-off one: its native
 * frames never come before the Python frames that called them). The
 * interpreter's call machinery (EMBER_NATIVE_MACHINERY, and an unnamed
 * frame of the interpreter whose callee is hidden, the eval loop, or
 * outside the interpreter) and the roots are left out of a Python thread's
 * stack unless o->native_unfiltered, when Python frames stand for them;
 * the interpreter's other functions (the collector, built-in types'
 * methods) are shown. A read with no frame to place (unreadable, garbage,
 * none yet) keeps every native frame but the eval-loop activations, the
 * first of which becomes the UNCERTAIN item. A read cut in the middle
 * (EMBER_PY_CUT) counts the activations its left-out frames ran in: its
 * root side pairs with the root's activations, its leaf side with the
 * leaf's, a CUT item stands where the frames were left out, and the
 * activations of those frames give way to it. Never drops a sample. */
uint32_t ember_py_merge(const struct ember_merge_opts *o, const struct ember_merge_in *in, struct ember_merged *out,
			uint32_t cap, bool *uncertain);

#endif
