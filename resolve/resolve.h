/* ember resolve/: one captured stack to named frames, the step that every
 * command showing stacks shares (record and the live profile of top through
 * record/, dump through dump/).
 *
 * A stack comes in as captured: native frames as (module, ELF address) pairs
 * leaf first (sampler.h), kernel addresses leaf first, and the Python frames
 * read with it innermost first (python_stacks.h). It goes out as frame ids
 * of a profile, root first: each native address symbolized once with its
 * inline chain (symbolizer/), each native frame classed for the merge, the
 * Python frames laid over the eval-loop activations (ember_py_merge), then
 * the special frames: a root label, "[truncated]", "[native stack
 * incomplete]", "[python frames uncertain]", a pool's wait mark. Frames are interned into the profile the resolver was made
 * for (profile.h), so a frame met again costs a lookup.
 *
 * Not thread-safe: one resolver per thread of the cold path. */
#ifndef EMBER_RESOLVE_H
#define EMBER_RESOLVE_H

#include <stdbool.h>
#include <stdint.h>

#include "pools.h"
#include "profile.h"
#include "python_stacks.h"
#include "sampler.h"
#include "session.h"

struct ember_jit_map;

struct ember_resolver_opts {
	struct ember_merge_opts merge;   /* Python frames only; the interpreter's own frames kept */
	bool full_filenames;             /* Python frames name their file as co_filename has it,
	                                  * not package-relative */
	bool wait_frames;                /* a pool's waiting frames stay under its wait mark (else the
	                                  * mark stands for them) */
};

struct ember_resolver;
/* A resolver interning into p, which must outlive it. NULL on OOM. */
struct ember_resolver *ember_resolver_new(struct ember_profile *p, const struct ember_resolver_opts *o);
void ember_resolver_free(struct ember_resolver *rv);

/* Declare module id (as the captured frames name it): a file, or, with
 * mi->jit_pid, the JIT code of a process, named from jit (may be NULL).
 * Declaring an id again replaces nothing: the first declaration stands.
 * 0, or -1 on OOM. */
int ember_resolver_add_module(struct ember_resolver *rv, uint32_t id, const struct ember_module_info *mi,
			      struct ember_jit_map *jit);

struct ember_resolve_in {
	const struct ember_frame_addr *frames;   /* native frames, leaf first */
	uint32_t nframes;
	const uint64_t *kernel_ips;              /* kernel frames, leaf first */
	uint32_t nkernel;
	uint32_t sample_flags;                   /* enum ember_sample_flags */
	const struct ember_py_frame *py;         /* Python frames, innermost first */
	uint32_t npy, pyflags;                   /* enum ember_py_read_flags */
	const struct ember_python *reader;       /* the process's Python reader; NULL: none */
	const char *root_label;                  /* a frame to put at the root ("process 12: cmd"), or NULL */
	bool main_thread;                        /* the process's first thread (its tid is its pid) */
	const struct ember_py_frame *peer_py;    /* a worker's sample: the Python frames of the thread
	                                          * that may have dispatched its work, read at the
	                                          * sample (innermost first); resolved apart */
	uint32_t npeer;
};

/* What a stack is to a thread pool (pools.h): one of its threads, or a
 * thread that hands it work. */
struct ember_pool_role {
	uint8_t kind;              /* enum ember_pool_kind; EMBER_POOL_NONE: neither */
	bool worker;               /* a thread of the pool (a thread's own root, no Python frames,
	                            * its first function in the pool's library; EMBER_POOL_THREADS:
	                            * in the program's own code) */
	bool wait;                 /* the pool's frames at its leaf only wait (for work, or for
	                            * the region's end): marked with the pool's wait frame */
	const char *pool;          /* the pool's library (the module name, interned in the profile) */
	uint32_t at;               /* worker: the index of its first own frame (past its root and
	                            * the pool's loop); a dispatcher: how many frames come before
	                            * the pool's work, through the dispatch call */
};

/* A resolved stack: ids of the profile's frames, root first; py_index[i]
 * is the index in the input's py[] of frame i when it is a Python frame,
 * UINT32_MAX otherwise; the ids of the peer's Python frames, root first.
 * The arrays belong to the resolver, valid until its next call. */
struct ember_resolved {
	const uint32_t *ids;
	const uint32_t *py_index;
	uint32_t n;
	bool uncertain;                          /* the Python frames disagreed with the native stack */
	bool incomplete;                         /* its unwind stopped short of the root: it starts with
	                                          * the frame "[native stack incomplete]" */
	struct ember_pool_role role;
	const uint32_t *peer;
	uint32_t npeer;
};
/* Resolve one stack. 0, or -1 on OOM. */
int ember_resolve(struct ember_resolver *rv, const struct ember_resolve_in *in, struct ember_resolved *out);

#endif
