/* Dispatch attribution (docs/pools.md): a sample of a pool's thread put
 * under the stack of the thread that handed it the work, for
 * build_profile.c. Pure: it reads resolved stacks and sample times and
 * decides, it writes nothing.
 *
 * A worker's sample goes under a dispatcher's stack when one of these says
 * which, tried in this order:
 * - the peer read: the Python frames of the dispatching thread, copied at
 *   the worker's sample, and that thread's own stacks with the same Python
 *   frames that dispatch to the pool (the native path from the Python line
 *   to the pool's entry);
 * - bracketing: the dispatching thread's samples just before and just
 *   after the worker's are both inside a dispatch to the pool, with the
 *   same stack down to it;
 * - one path: every dispatch to the pool that ran the worker's region
 *   function did so from the same stack.
 * Otherwise it is not attributed, and why is counted. */
#ifndef EMBER_RECORD_ATTRIBUTE_H
#define EMBER_RECORD_ATTRIBUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What attribution knows of one resolved stack (a raw entry). */
struct attr_stack {
	uint32_t pid, tid;
	const uint32_t *ids;          /* its frames, root first */
	uint32_t n;
	const uint32_t *py;           /* Python frame ids, root first: its own (a dispatcher's), or,
	                               * with peer_tid, those of thread peer_tid at its sample */
	uint32_t npy;
	uint32_t peer_tid;            /* 0: no peer read */
	uint8_t kind;                 /* enum ember_pool_kind it works for or dispatches to; NONE */
	bool worker;                  /* a thread of that pool */
	bool wait;                    /* it waits (for work, or for the region's end) */
	bool incomplete;              /* its unwind stopped short of the root: a worker's first own
	                               * frames are missing (which region it ran is not known), a
	                               * dispatcher's stack starts with a mark */
	const void *pool;             /* which pool of that kind (its library's name, interned) */
	uint32_t at;                  /* worker: index of its first own frame; dispatcher: how many
	                               * of its frames come before the pool's work (through the
	                               * dispatch call) */
};

enum attr_how {
	ATTR_NONE = 0,                /* not attributed (attr_decision.why says why) */
	ATTR_PEER,                    /* by the peer read */
	ATTR_BRACKET,                 /* by the dispatcher's samples around it */
	ATTR_ONE_PATH,                /* by the only path that dispatched its region */
	ATTR_HOW_COUNT
};

enum attr_why {
	ATTR_WHY_NONE = 0,
	ATTR_WHY_NO_DISPATCHER,       /* no thread of the process was seen dispatching to the pool */
	ATTR_WHY_SEVERAL,             /* several threads dispatch to it and nothing told which */
	ATTR_WHY_UNSURE,              /* the dispatcher's samples around it disagree */
	ATTR_WHY_COUNT
};

struct attr_decision {
	enum attr_how how;
	enum attr_why why;
	const uint32_t *prefix;       /* the dispatcher's frames, root first (valid while the plan is) */
	uint32_t nprefix;
	uint32_t then;                /* a frame whose function the dispatcher was in next, at a line
	                               * not known (its two samples were at two lines of it), or
	                               * UINT32_MAX */
	bool path_unknown;            /* the native path from the prefix to the pool is not known: a
	                               * marker goes between */
};

struct attr_plan;
/* A plan over stacks st[0..n) (kept, not copied: they must outlive it).
 * fn[id] (nfn of them) is the function of frame id: frames at two lines
 * of one function share it. NULL on OOM. */
struct attr_plan *attr_plan_new(const struct attr_stack *st, size_t n, const uint32_t *fn, uint32_t nfn);
void attr_plan_free(struct attr_plan *pl);
/* One sample of stack entry at time_ns: call for every sample, in time
 * order, before any decision (without a timeline, none: bracketing is then
 * never tried). 0, or -1 on OOM. */
int attr_plan_sample(struct attr_plan *pl, uint64_t time_ns, uint32_t entry);
/* Decide for a sample of worker entry w taken at time_ns (UINT64_MAX: time
 * unknown). */
void attr_decide(struct attr_plan *pl, uint32_t w, uint64_t time_ns, struct attr_decision *out);

#endif
