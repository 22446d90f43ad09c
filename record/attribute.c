/* Dispatch attribution: the plan (attribute.h has the contract).
 *
 * The plan groups the dispatching stacks by pool: for a library's pool by
 * (process, kind, library), each stack with how many of its frames come
 * before the pool's work; for a program's own threads by (process, region
 * function), each stack that calls that function itself, up to its caller.
 * It keeps every thread's samples in time order for bracketing. */
#include <stdlib.h>
#include <string.h>

#include "attribute.h"
#include "grow.h"
#include "hash.h"
#include "idtab.h"
#include "pools.h"
#include "sorted.h"

#define NO_FRAME UINT32_MAX

/* A stack that dispatches to a pool: entry e, its first len frames. */
struct dispatch {
	uint32_t e, len;
};

/* The dispatches to one pool of one process. */
struct pool_group {
	uint32_t pid;
	uint8_t kind;
	const void *pool;            /* the library; EMBER_POOL_THREADS: none */
	uint32_t region;             /* EMBER_POOL_THREADS: the region function; else NO_FRAME */
	struct dispatch *d;
	size_t nd, d_cap;
	uint32_t tids[4];            /* the dispatching threads (the first few) */
	uint32_t ntids;              /* how many there are (may exceed the array) */
	uint32_t *regions;           /* the region functions its workers were seen running (fn ids) */
	size_t nregions, regions_cap;
};

/* One thread's samples, in time order. */
struct timed {
	uint64_t time;
	uint32_t entry;
};
struct thread_times {
	uint32_t pid, tid;
	struct timed *s;
	size_t n, cap;
};

/* A decision by the peer read or by the one path depends on the stack
 * alone, not on the sample's time: it is made once per entry. */
enum { MEMO_UNTRIED = 0, MEMO_NONE, MEMO_DECIDED };
struct memo {
	uint8_t peer, one_path;       /* MEMO_* */
	struct attr_decision by_peer, by_one_path;
};

struct attr_plan {
	const struct attr_stack *st;
	size_t nst;
	struct pool_group *groups;
	size_t ngroups, groups_cap;
	struct ember_idtab group_index;
	struct thread_times *threads;
	size_t nthreads, threads_cap;
	struct ember_idtab thread_index;
	uint32_t *py_last;           /* per entry: index of its last Python frame in ids, NO_FRAME */
	struct memo *memo;           /* per entry: the decisions that do not depend on the time */
	const uint32_t *fn;          /* frame id -> its function */
	uint32_t nfn;
};

/* Whether frames a and b are of one function (at any line). */
static bool same_fn(const struct attr_plan *pl, uint32_t a, uint32_t b)
{
	return a == b || (a < pl->nfn && b < pl->nfn && pl->fn[a] == pl->fn[b]);
}

struct group_key {
	uint32_t pid;
	uint8_t kind;
	const void *pool;
	uint32_t region;
};

static uint64_t group_hash(const struct group_key *k)
{
	return ember_hash_pair(ember_hash_pair(((uint64_t)k->pid << 8) | k->kind, (uintptr_t)k->pool), k->region);
}

static bool group_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct pool_group *g = &((const struct attr_plan *)ctx)->groups[id];
	const struct group_key *k = key;
	return g->pid == k->pid && g->kind == k->kind && g->pool == k->pool && g->region == k->region;
}

static struct pool_group *find_group(struct attr_plan *pl, const struct group_key *k)
{
	uint32_t id = ember_idtab_find(&pl->group_index, group_hash(k), group_eq, pl, k);
	return id == UINT32_MAX ? NULL : &pl->groups[id];
}

/* The group of k, made when new; NULL on OOM. */
static struct pool_group *group_of(struct attr_plan *pl, const struct group_key *k)
{
	struct pool_group *g = find_group(pl, k);
	if (g)
		return g;
	if (EMBER_GROW(pl->groups, pl->groups_cap, pl->ngroups + 1) != 0 ||
	    ember_idtab_insert(&pl->group_index, group_hash(k), (uint32_t)pl->ngroups) != 0)
		return NULL;
	g = &pl->groups[pl->ngroups++];
	*g = (struct pool_group){ .pid = k->pid, .kind = k->kind, .pool = k->pool, .region = k->region };
	return g;
}

static int group_add(struct pool_group *g, const struct attr_stack *s, uint32_t e, uint32_t len)
{
	if (EMBER_GROW(g->d, g->d_cap, g->nd + 1) != 0)
		return -1;
	g->d[g->nd++] = (struct dispatch){ .e = e, .len = len };
	for (uint32_t i = 0; i < g->ntids && i < 4; i++)
		if (g->tids[i] == s->tid)
			return 0;
	if (g->ntids < 4)
		g->tids[g->ntids] = s->tid;
	g->ntids++;
	return 0;
}

static bool thread_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct thread_times *t = &((const struct attr_plan *)ctx)->threads[id];
	const uint32_t *k = key;
	return t->pid == k[0] && t->tid == k[1];
}

static struct thread_times *find_thread(const struct attr_plan *pl, uint32_t pid, uint32_t tid)
{
	uint32_t k[2] = { pid, tid };
	uint32_t id = ember_idtab_find(&pl->thread_index, ember_hash_pair(pid, tid), thread_eq, pl, k);
	return id == UINT32_MAX ? NULL : &pl->threads[id];
}

/* Whether dispatch d runs function f past its dispatch call (the
 * dispatcher's own share of a region, as OpenMP's and OpenBLAS's callers
 * run it, under the pool's frames for TBB). */
static bool runs(const struct attr_plan *pl, const struct dispatch *d, uint32_t f)
{
	const struct attr_stack *s = &pl->st[d->e];
	for (uint32_t i = d->len; i < s->n; i++)
		if (same_fn(pl, s->ids[i], f))
			return true;
	return false;
}

/* The region function of worker s: its first own frame, when it works. */
static uint32_t region_of(const struct attr_stack *s)
{
	return s->worker && !s->wait && !s->incomplete && s->at < s->n ? s->ids[s->at] : NO_FRAME;
}

/* Where each stack's last Python frame is (for a peer's layout). */
static void find_python(struct attr_plan *pl, uint32_t e)
{
	const struct attr_stack *s = &pl->st[e];
	pl->py_last[e] = NO_FRAME;
	if (!s->npy || s->peer_tid)
		return;
	uint32_t last = s->py[s->npy - 1];
	for (uint32_t i = s->n; i-- > 0;)
		if (s->ids[i] == last) {
			pl->py_last[e] = i;
			return;
		}
}

/* A program's own threads: the stacks of the process's other threads that
 * call worker w's region function themselves, up to its caller. */
static int index_thread_region(struct attr_plan *pl, uint32_t w)
{
	const struct attr_stack *ws = &pl->st[w];
	uint32_t f = region_of(ws);
	struct group_key k = { .pid = ws->pid, .kind = EMBER_POOL_THREADS, .region = f };
	if (f == NO_FRAME || find_group(pl, &k))
		return 0;
	struct pool_group *g = group_of(pl, &k);
	if (!g)
		return -1;
	for (uint32_t e = 0; e < pl->nst; e++) {
		const struct attr_stack *s = &pl->st[e];
		if (s->pid != ws->pid || s->tid == ws->tid || s->worker)
			continue;
		for (uint32_t i = 1; i < s->n; i++)
			if (same_fn(pl, s->ids[i], f)) {
				if (group_add(g, s, e, i) != 0)
					return -1;
				break;
			}
	}
	return 0;
}

/* Worker e's region function among those of its pool's group (a library's
 * pool: a dispatcher running another of them is not running e's). */
static int add_region(struct attr_plan *pl, uint32_t e)
{
	const struct attr_stack *s = &pl->st[e];
	uint32_t f = region_of(s);
	struct group_key k = { .pid = s->pid, .kind = s->kind, .pool = s->pool, .region = NO_FRAME };
	struct pool_group *g = find_group(pl, &k);
	if (f == NO_FRAME || !g)
		return 0;
	uint32_t fn = f < pl->nfn ? pl->fn[f] : f;
	for (size_t i = 0; i < g->nregions; i++)
		if (g->regions[i] == fn)
			return 0;
	if (EMBER_GROW(g->regions, g->regions_cap, g->nregions + 1) != 0)
		return -1;
	g->regions[g->nregions++] = fn;
	return 0;
}

void attr_plan_free(struct attr_plan *pl)
{
	if (!pl)
		return;
	for (size_t i = 0; i < pl->ngroups; i++) {
		free(pl->groups[i].d);
		free(pl->groups[i].regions);
	}
	free(pl->groups);
	for (size_t i = 0; i < pl->nthreads; i++)
		free(pl->threads[i].s);
	free(pl->threads);
	ember_idtab_free(&pl->group_index);
	ember_idtab_free(&pl->thread_index);
	free(pl->py_last);
	free(pl->memo);
	free(pl);
}

struct attr_plan *attr_plan_new(const struct attr_stack *st, size_t n, const uint32_t *fn, uint32_t nfn)
{
	struct attr_plan *pl = calloc(1, sizeof *pl);
	if (!pl || ember_idtab_init(&pl->group_index) != 0 || ember_idtab_init(&pl->thread_index) != 0 ||
	    !(pl->py_last = calloc(n ? n : 1, sizeof *pl->py_last)) ||
	    !(pl->memo = calloc(n ? n : 1, sizeof *pl->memo))) {
		attr_plan_free(pl);
		return NULL;
	}
	pl->st = st;
	pl->nst = n;
	pl->fn = fn;
	pl->nfn = nfn;
	for (uint32_t e = 0; e < n; e++) {
		const struct attr_stack *s = &st[e];
		find_python(pl, e);
		if (s->kind == EMBER_POOL_NONE || s->kind == EMBER_POOL_THREADS || s->worker)
			continue;
		struct group_key k = { .pid = s->pid, .kind = s->kind, .pool = s->pool, .region = NO_FRAME };
		struct pool_group *g = group_of(pl, &k);
		if (!g || group_add(g, s, e, s->at) != 0) {
			attr_plan_free(pl);
			return NULL;
		}
	}
	for (uint32_t e = 0; e < n; e++)
		if (st[e].worker && (st[e].kind == EMBER_POOL_THREADS ? index_thread_region(pl, e) : add_region(pl, e)) != 0) {
			attr_plan_free(pl);
			return NULL;
		}
	return pl;
}

int attr_plan_sample(struct attr_plan *pl, uint64_t time_ns, uint32_t entry)
{
	if (entry >= pl->nst)
		return 0;
	const struct attr_stack *s = &pl->st[entry];
	struct thread_times *t = find_thread(pl, s->pid, s->tid);
	if (!t) {
		if (EMBER_GROW(pl->threads, pl->threads_cap, pl->nthreads + 1) != 0 ||
		    ember_idtab_insert(&pl->thread_index, ember_hash_pair(s->pid, s->tid), (uint32_t)pl->nthreads) != 0)
			return -1;
		t = &pl->threads[pl->nthreads++];
		*t = (struct thread_times){ .pid = s->pid, .tid = s->tid };
	}
	if (EMBER_GROW(t->s, t->cap, t->n + 1) != 0)
		return -1;
	t->s[t->n++] = (struct timed){ .time = time_ns, .entry = entry };
	return 0;
}

static bool same_ids(const uint32_t *a, const uint32_t *b, uint32_t n)
{
	return memcmp(a, b, n * sizeof *a) == 0;
}

static bool same_prefix(const struct attr_plan *pl, const struct dispatch *x, const struct dispatch *y)
{
	return x->len == y->len && same_ids(pl->st[x->e].ids, pl->st[y->e].ids, x->len);
}

/* The dispatch of g that stack entry e is, NULL when it is none (g->d is
 * in entry order: the plan adds the entries in order). */
static const struct dispatch *dispatch_of(const struct pool_group *g, uint32_t e)
{
	size_t lo = ember_lower_bound(g->d, g->nd, sizeof *g->d, sizeof g->d->e, e);
	return lo < g->nd && g->d[lo].e == e ? &g->d[lo] : NULL;
}

static void take(struct attr_decision *out, const struct attr_plan *pl, enum attr_how how, const struct dispatch *d)
{
	*out = (struct attr_decision){ .how = how, .prefix = pl->st[d->e].ids, .nprefix = d->len, .then = NO_FRAME };
}

/* The peer's Python frames laid out as its own stacks have them (the
 * native frames between them included), up to its innermost Python
 * frame; or, when none of its stacks has them, the Python frames alone. */
static void peer_layout(const struct attr_plan *pl, const struct attr_stack *w, struct attr_decision *out)
{
	/* (a whole stack rather than one whose unwind stopped short) */
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t e = 0; e < pl->nst; e++) {
			const struct attr_stack *s = &pl->st[e];
			if (s->pid == w->pid && s->tid == w->peer_tid && pl->py_last[e] != NO_FRAME &&
			    s->npy == w->npy && s->incomplete == (pass == 1) && same_ids(s->py, w->py, w->npy)) {
				*out = (struct attr_decision){ .how = ATTR_PEER, .prefix = s->ids,
							       .nprefix = pl->py_last[e] + 1, .then = NO_FRAME,
							       .path_unknown = true };
				return;
			}
		}
	*out = (struct attr_decision){ .how = ATTR_PEER, .prefix = w->py, .nprefix = w->npy, .then = NO_FRAME,
				       .path_unknown = true };
}

/* The peer read: the dispatcher's Python frames at the worker's sample.
 * A wait goes under them (the dispatcher may be inside the region or
 * between two: its Python line is the same); work goes under the stack
 * through which the dispatcher's samples at those Python frames entered
 * the pool -- the one that ran the same region function, when they
 * differ -- or, when they never showed it (a short region), under the
 * Python frames with the path marked unknown, the peer being the pool's
 * only dispatcher. */
static bool by_peer(const struct attr_plan *pl, const struct pool_group *g, const struct attr_stack *w,
		    struct attr_decision *out)
{
	bool known = false;
	for (uint32_t i = 0; i < g->ntids && i < 4; i++)
		known |= g->tids[i] == w->peer_tid;
	if (!w->peer_tid || !w->npy || !known)
		return false;
	if (w->wait) {
		peer_layout(pl, w, out);
		return true;
	}
	uint32_t region = region_of(w);
	const struct dispatch *first = NULL;
	uint32_t lcp = 0;
	for (int pass = 0; pass < 2 && !first; pass++) {
		for (size_t i = 0; i < g->nd; i++) {
			const struct dispatch *d = &g->d[i];
			const struct attr_stack *s = &pl->st[d->e];
			if (s->tid != w->peer_tid || s->npy != w->npy || !same_ids(s->py, w->py, w->npy))
				continue;
			/* The first pass takes the dispatches that ran the same
			 * region function. */
			if (pass == 0 && !runs(pl, d, region))
				continue;
			if (!first) {
				first = d;
				lcp = d->len;
				continue;
			}
			uint32_t k = 0;
			while (k < lcp && k < d->len && s->ids[k] == pl->st[first->e].ids[k])
				k++;
			lcp = k;
		}
	}
	if (first && lcp == first->len) {
		take(out, pl, ATTR_PEER, first);
		return true;
	}
	uint32_t py_last = first ? pl->py_last[first->e] : NO_FRAME;
	if (py_last != NO_FRAME && lcp > py_last) {
		*out = (struct attr_decision){ .how = ATTR_PEER, .prefix = pl->st[first->e].ids, .nprefix = lcp,
					       .then = NO_FRAME, .path_unknown = true };
		return true;
	}
	if (g->ntids != 1)
		return false;
	peer_layout(pl, w, out);
	return true;
}

/* The entry of t's sample nearest time_ns on one side: the last at or
 * before it (after: the first at or after it); UINT32_MAX when none. */
static uint32_t nearest(const struct thread_times *t, uint64_t time_ns, bool after)
{
	/* the first sample later than time_ns (after: not earlier) */
	size_t lo = after ? ember_lower_bound(t->s, t->n, sizeof *t->s, sizeof t->s->time, time_ns)
			  : ember_upper_bound(t->s, t->n, sizeof *t->s, sizeof t->s->time, time_ns);
	if (after)
		return lo < t->n ? t->s[lo].entry : UINT32_MAX;
	return lo > 0 ? t->s[lo - 1].entry : UINT32_MAX;
}

/* Whether dispatch d could have run worker w's sample: it runs w's
 * region function, or shows no region of the pool's workers at all (it
 * waits, or is still in the pool's own frames); not when it runs another
 * region its workers were seen running. */
static bool runs_region(const struct attr_plan *pl, const struct pool_group *g, const struct dispatch *d,
			const struct attr_stack *w)
{
	uint32_t region = region_of(w);
	if (region == NO_FRAME || runs(pl, d, region))
		return true;
	for (size_t i = 0; i < g->nregions; i++)
		if (runs(pl, d, g->regions[i]))
			return false;
	return true;
}

/* Bracketing: a dispatching thread inside the same dispatch just before
 * and just after the sample. 1: decided, 0: no thread qualifies, -1: two
 * disagree. A wait outside any dispatch (between two regions) goes where
 * the pool's only dispatching thread was both before and after: the
 * stack its two samples share. */
static int by_bracket(const struct attr_plan *pl, const struct pool_group *g, const struct attr_stack *w,
		      uint64_t time_ns, struct attr_decision *out)
{
	const struct dispatch *chosen = NULL;
	uint32_t shared = 0, a = UINT32_MAX, then = NO_FRAME;
	for (uint32_t i = 0; i < g->ntids && i < 4; i++) {
		const struct thread_times *t = find_thread(pl, w->pid, g->tids[i]);
		if (!t || g->tids[i] == w->tid)
			continue;
		uint32_t b;
		a = nearest(t, time_ns, false);
		b = nearest(t, time_ns, true);
		if (a == UINT32_MAX || b == UINT32_MAX)
			continue;
		const struct dispatch *da = dispatch_of(g, a), *db = dispatch_of(g, b);
		if (!da || !db || !same_prefix(pl, da, db) || !runs_region(pl, g, da, w) || !runs_region(pl, g, db, w)) {
			const struct attr_stack *sa = &pl->st[a], *sb = &pl->st[b];
			for (shared = 0; shared < sa->n && shared < sb->n && sa->ids[shared] == sb->ids[shared];)
				shared++;
			then = shared < sa->n && shared < sb->n && same_fn(pl, sa->ids[shared], sb->ids[shared]) ?
				       sa->ids[shared] : NO_FRAME;
			continue;
		}
		if (chosen && !same_prefix(pl, chosen, da))
			return -1;
		chosen = da;
	}
	if (chosen) {
		take(out, pl, ATTR_BRACKET, chosen);
		return 1;
	}
	if (w->wait && g->ntids == 1 && (shared > 0 || then != NO_FRAME)) {
		*out = (struct attr_decision){ .how = ATTR_BRACKET, .prefix = pl->st[a].ids, .nprefix = shared,
					       .then = then, .path_unknown = true };
		return 1;
	}
	return 0;
}

/* One path: every dispatch that ran the worker's region did so from the
 * same stack. */
static bool by_one_path(const struct attr_plan *pl, const struct pool_group *g, const struct attr_stack *w,
			struct attr_decision *out)
{
	uint32_t region = region_of(w);
	if (region == NO_FRAME)
		return false;
	const struct dispatch *first = NULL;
	for (size_t i = 0; i < g->nd; i++) {
		const struct dispatch *d = &g->d[i];
		if (!runs(pl, d, region))
			continue;
		if (first && !same_prefix(pl, first, d))
			return false;
		first = first ? first : d;
	}
	if (!first)
		return false;
	take(out, pl, ATTR_ONE_PATH, first);
	return true;
}

void attr_decide(struct attr_plan *pl, uint32_t w, uint64_t time_ns, struct attr_decision *out)
{
	*out = (struct attr_decision){ .why = ATTR_WHY_NO_DISPATCHER };
	if (w >= pl->nst || !pl->st[w].worker)
		return;
	const struct attr_stack *ws = &pl->st[w];
	struct group_key k = { .pid = ws->pid, .kind = ws->kind, .pool = ws->pool, .region = NO_FRAME };
	if (ws->kind == EMBER_POOL_THREADS) {
		k.pool = NULL;
		k.region = region_of(ws);
	}
	const struct pool_group *g = find_group(pl, &k);
	struct memo *m = &pl->memo[w];
	if (!g || !g->nd)
		return;
	if (m->peer == MEMO_UNTRIED)
		m->peer = by_peer(pl, g, ws, &m->by_peer) ? MEMO_DECIDED : MEMO_NONE;
	if (m->peer == MEMO_DECIDED) {
		*out = m->by_peer;
		return;
	}
	int br = time_ns != UINT64_MAX ? by_bracket(pl, g, ws, time_ns, out) : 0;
	if (br > 0)
		return;
	if (m->one_path == MEMO_UNTRIED)
		m->one_path = by_one_path(pl, g, ws, &m->by_one_path) ? MEMO_DECIDED : MEMO_NONE;
	if (m->one_path == MEMO_DECIDED) {
		*out = m->by_one_path;
		return;
	}
	/* Two dispatching threads disagree, or several dispatch and none
	 * was inside a dispatch around the sample, or the only one was not. */
	*out = (struct attr_decision){ .why = br < 0 || g->ntids > 1 ? ATTR_WHY_SEVERAL : ATTR_WHY_UNSURE };
}
