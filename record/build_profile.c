/* The cold path from captured addresses to a symbolic profile: every raw
 * stack resolved (resolve.h: symbolized, its Python frames merged), the
 * samples of pool threads put under the stacks that dispatched their work
 * (attribute.h), counted per thread, and the samples' timeline laid out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute.h"
#include "build_profile.h"
#include "grow.h"
#include "hash.h"
#include "idtab.h"
#include "resolve.h"

/* What the builder keeps of a raw entry. */
struct entry_state {
	uint32_t pid, tid;
	uint32_t stack;            /* its resolved stack */
	uint32_t thread;           /* its thread's index in the profile */
	uint32_t flags;            /* its rows' flags */
	uint64_t count;            /* weight added to the profile so far */
	uint64_t samples;          /* ... and samples */
	uint32_t py_off, npy;      /* Python frame ids (its own, or a worker's peer's) in pyids */
	uint32_t peer_tid;
	bool incomplete;           /* its unwind stopped short: it starts with that mark */
	struct ember_pool_role role;
	uint32_t attributed;       /* live: the stack its samples went to, UINT32_MAX: not decided */
	uint32_t attr_depth;       /* ... how many of its frames are a dispatcher's */
};

struct profile_builder {
	struct ember_resolver *rv;
	uint32_t modules;          /* the sampler's modules declared to rv */
	struct entry_state *e;
	size_t ne, e_cap;
	uint32_t *pyids;
	size_t npyids, pyids_cap;
	uint32_t *scratch;         /* an attributed stack being put together */
	size_t scratch_cap;
	struct build_attr_stats stats;
};

/* Declare the sampler's modules not declared yet (a run loads more as it
 * goes: a live profile is resolved many times). 0, or -1 on OOM. */
static int sync_modules(struct profile_builder *bd, const struct build_in *in)
{
	uint32_t nmods = ember_sampler_module_count(in->sampler);
	for (; bd->modules < nmods; bd->modules++) {
		struct ember_module_info mi;
		ember_sampler_module(in->sampler, bd->modules, &mi);
		if (ember_resolver_add_module(bd->rv, bd->modules, &mi, in->jit) != 0)
			return -1;
	}
	return 0;
}

/* The profile row flags of raw entry v's samples. */
static uint32_t row_flags(const struct raw_stack_view *v)
{
	return v->flags & EMBER_SAMPLE_OFF_CPU ? EMBER_ROW_OFF_CPU : 0;
}

static uint32_t special(struct ember_profile *p, const char *name)
{
	struct ember_frame f = { .kind = EMBER_FRAME_SPECIAL, .name = name, .file = "", .module = "" };
	return ember_profile_frame(p, &f);
}

/* Keep ids[0..n) in bd->pyids; their offset, UINT32_MAX on OOM. */
static uint32_t keep_ids(struct profile_builder *bd, const uint32_t *ids, uint32_t n)
{
	if (EMBER_GROW(bd->pyids, bd->pyids_cap, bd->npyids + n + 1) != 0)
		return UINT32_MAX;
	uint32_t off = (uint32_t)bd->npyids;
	memcpy(bd->pyids + off, ids, n * sizeof *ids);
	bd->npyids += n;
	return off;
}

/* Resolve raw entry v (new) into bd's entries. 0, or -1 on OOM. */
static int add_entry(struct profile_builder *bd, const struct build_in *in, struct ember_profile *p,
		     const struct raw_stack_view *v, uint64_t *mismatched)
{
	char label[320];
	bool peer = (v->pyflags & EMBER_PY_PEER) != 0;
	struct ember_resolve_in ri = {
		.frames = v->frames, .nframes = v->nframes, .kernel_ips = v->kernel_ips, .nkernel = v->nkernel,
		.sample_flags = v->flags, .py = peer ? NULL : v->py, .npy = peer ? 0 : v->npy,
		.pyflags = peer ? 0 : v->pyflags, .main_thread = v->pid == v->tid,
		.peer_py = peer ? v->py : NULL, .npeer = peer ? v->npy : 0,
		.reader = in->python ? ember_py_session_reader(in->python, v->pid) : NULL,
	};
	if (in->opts->subprocesses) {
		const char *cmd = in->python ? ember_py_session_cmdline(in->python, v->pid) : "";
		snprintf(label, sizeof label, "process %u: %s", v->pid, cmd[0] ? cmd : "?");
		ri.root_label = label;
	}
	struct ember_resolved rs;
	if (ember_resolve(bd->rv, &ri, &rs) != 0 || EMBER_GROW(bd->e, bd->e_cap, bd->ne + 1) != 0)
		return -1;
	if (rs.uncertain)
		*mismatched += v->samples;
	/* A Python thread is named as Python names it ("MainThread",
	 * "Thread-3 (worker)"); others (BLAS, OpenMP workers) by their comm. */
	const char *tname = in->python ? ember_py_session_thread_name(in->python, v->pid, v->tid) : NULL;
	if (!tname)
		tname = ember_sampler_thread_name(in->sampler, v->pid, v->tid);
	struct entry_state *e = &bd->e[bd->ne];
	*e = (struct entry_state){ .pid = v->pid, .tid = v->tid, .flags = row_flags(v), .role = rs.role,
				   .peer_tid = peer ? v->peer_tid : 0, .incomplete = rs.incomplete,
				   .attributed = UINT32_MAX };
	/* The Python frames a dispatcher's stack is matched by. */
	uint32_t py[EMBER_MAX_FRAMES + 1024], npy = 0;
	for (uint32_t i = 0; i < rs.n && !peer && npy < sizeof py / sizeof py[0]; i++)
		if (rs.py_index[i] != UINT32_MAX)
			py[npy++] = rs.ids[i];
	const uint32_t *kept = peer ? rs.peer : py;
	e->npy = peer ? rs.npeer : npy;
	e->py_off = keep_ids(bd, kept, e->npy);
	uint32_t named;
	if (!rs.n && in->opts->merge.python_only) {
		/* Python frames only, and none: a native thread, named, never [unknown] */
		char mark[96];
		snprintf(mark, sizeof mark, "[native thread %s]", tname);
		named = special(p, mark);
		e->stack = ember_profile_stack(p, &named, 1);
	} else {
		e->stack = ember_profile_stack(p, rs.ids, rs.n);
	}
	e->thread = ember_profile_thread(p, v->pid, v->tid, tname);
	if (e->py_off == UINT32_MAX || e->stack == UINT32_MAX || e->thread == UINT32_MAX)
		return -1;
	bd->ne++;
	return 0;
}

/* A stack of a pool's thread whose unwind stopped short (an assembly
 * kernel's caller not found) has no root to tell the pool by: its
 * thread's other stacks do. It is that pool's work, the frames known
 * being its own, under the mark that says they are not all. */
static void incomplete_workers(struct profile_builder *bd, size_t from)
{
	for (size_t k = from; k < bd->ne; k++) {
		struct entry_state *e = &bd->e[k];
		if (!e->incomplete || e->role.kind || (e->npy && !e->peer_tid) || e->pid == e->tid)
			continue;
		for (size_t j = 0; j < bd->ne; j++) {
			const struct entry_state *o = &bd->e[j];
			if (o->tid == e->tid && o->pid == e->pid && o->role.worker && o->role.kind != EMBER_POOL_THREADS) {
				e->role = (struct ember_pool_role){ .kind = o->role.kind, .worker = true,
								    .pool = o->role.pool, .at = e->role.at };
				break;
			}
		}
	}
}

/* Resolve the raw entries new since the last call. 0, or -1 on OOM. */
static int resolve_new(struct profile_builder *bd, const struct build_in *in, struct ember_profile *p,
		       uint64_t *mismatched)
{
	size_t cursor = bd->ne, from = bd->ne;
	struct raw_stack_view v;
	if (sync_modules(bd, in) != 0)
		return -1;
	while (raw_stacks_next(in->raw, &cursor, &v))
		if (add_entry(bd, in, p, &v, mismatched) != 0)
			return -1;
	incomplete_workers(bd, from);
	return 0;
}

static int attr_stacks(const struct profile_builder *bd, const struct ember_profile *p, struct attr_stack *st,
		       uint32_t **ids_out);

/* Frames at two lines of one function (same kind, name, file and module:
 * strings the profile interns) share an id in fn[]: attribution compares
 * functions, not call sites. A new array of nframes ids, NULL on OOM. */
struct fn_key {
	const struct ember_frame *f;
};

static bool fn_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ember_frame *a = &((const struct ember_frame *)ctx)[id], *b = key;
	return a->kind == b->kind && a->name == b->name && a->file == b->file && a->module == b->module;
}

static uint32_t *function_ids(const struct ember_profile *p, uint32_t *nfn)
{
	uint32_t n = ember_profile_nframes(p);
	uint32_t *fn = malloc((n ? n : 1) * sizeof *fn);
	struct ember_idtab index;
	if (!fn || ember_idtab_init(&index) != 0) {
		free(fn);
		return NULL;
	}
	const struct ember_frame *frames = ember_profile_frame_at(p, 0);
	for (uint32_t i = 0; i < n; i++) {
		const struct ember_frame *f = &frames[i];
		uint64_t h = ember_hash_pair(ember_hash_pair((uintptr_t)f->name, (uintptr_t)f->file),
					     (uintptr_t)f->module ^ f->kind);
		uint32_t id = ember_idtab_find(&index, h, fn_eq, frames, f);
		if (id == UINT32_MAX && ember_idtab_insert(&index, h, i) != 0) {
			ember_idtab_free(&index);
			free(fn);
			return NULL;
		}
		fn[i] = id == UINT32_MAX ? i : id;
	}
	ember_idtab_free(&index);
	*nfn = n;
	return fn;
}

/* What a plan reads, owned by its maker. */
struct plan_input {
	struct attr_stack *st;
	uint32_t *fn, *ids;
};

static void plan_input_free(struct plan_input *pi)
{
	free(pi->st);
	free(pi->fn);
	free(pi->ids);
}

/* A plan over every entry, NULL on OOM; *pi is its to free (after it). */
static struct attr_plan *make_plan(const struct profile_builder *bd, const struct ember_profile *p,
				   struct plan_input *pi)
{
	uint32_t nfn = 0;
	*pi = (struct plan_input){ .st = calloc(bd->ne ? bd->ne : 1, sizeof *pi->st), .fn = function_ids(p, &nfn) };
	if (!pi->st || !pi->fn || attr_stacks(bd, p, pi->st, &pi->ids) != 0)
		return NULL;
	return attr_plan_new(pi->st, bd->ne, pi->fn, nfn);
}

/* What attribution reads of every entry (st: ne of them), its stacks
 * copied into *ids (the profile's own move as attributed stacks are
 * added). 0, or -1 on OOM. */
static int attr_stacks(const struct profile_builder *bd, const struct ember_profile *p, struct attr_stack *st,
		       uint32_t **ids_out)
{
	size_t total = 1;
	for (size_t k = 0; k < bd->ne; k++)
		total += ember_profile_stack_depth(p, bd->e[k].stack);
	uint32_t *all = malloc(total * sizeof *all);
	*ids_out = all;
	if (!all)
		return -1;
	for (size_t k = 0; k < bd->ne; k++) {
		const struct entry_state *e = &bd->e[k];
		uint32_t n;
		const uint32_t *ids = ember_profile_stack_frames(p, e->stack, &n);
		memcpy(all, ids, n * sizeof *all);
		ids = all;
		all += n;
		st[k] = (struct attr_stack){ .pid = e->pid, .tid = e->tid, .ids = ids, .n = n,
					     .py = bd->pyids + e->py_off, .npy = e->npy, .peer_tid = e->peer_tid,
					     .kind = e->role.kind, .worker = e->role.worker, .wait = e->role.wait,
					     .pool = e->role.pool, .at = e->role.at,
					     .incomplete = e->incomplete };
	}
	return 0;
}

/* The stack a sample of worker entry k goes to after decision d (and how
 * many of its frames are the dispatcher's); UINT32_MAX on OOM. A worker of
 * a library's pool that no dispatcher was found for keeps its own stack
 * under a mark; a program's own thread keeps it as it is. */
static uint32_t decided_stack(struct profile_builder *bd, struct ember_profile *p, const struct build_in *in,
			      uint32_t k, const struct attr_decision *d, uint32_t *depth)
{
	const struct entry_state *e = &bd->e[k];
	uint32_t n;
	const uint32_t *ids = ember_profile_stack_frames(p, e->stack, &n);
	*depth = 0;
	if (d->how == ATTR_NONE && e->role.kind == EMBER_POOL_THREADS && !in->opts->merge.python_only)
		return e->stack;
	size_t cap = (size_t)d->nprefix + n + 3;
	if (EMBER_GROW(bd->scratch, bd->scratch_cap, cap) != 0)
		return UINT32_MAX;
	uint32_t *s = bd->scratch, len = 0;
	if (d->how != ATTR_NONE) {
		memcpy(s, d->prefix, d->nprefix * sizeof *s);
		len = d->nprefix;
		if (d->then != UINT32_MAX) {
			/* in that function, at a line not known */
			struct ember_frame f = *ember_profile_frame_at(p, d->then);
			f.line = 0;
			s[len++] = ember_profile_frame(p, &f);
		}
		/* (a wait needs no path: its mark says what it is) */
		if (d->path_unknown && !e->role.wait && !in->opts->merge.python_only) {
			char mark[64];
			snprintf(mark, sizeof mark, "[%s dispatch]", ember_pool_name(e->role.kind));
			s[len++] = special(p, mark);
		}
		*depth = len;
		for (uint32_t i = e->role.at; i < n; i++)
			s[len++] = ids[i];
	} else if (in->opts->merge.python_only) {
		/* Python frames only: a native thread is named, never [unknown]. */
		char mark[96];
		snprintf(mark, sizeof mark, "[native thread %s]", ember_sampler_thread_name(in->sampler, e->pid, e->tid));
		s[len++] = special(p, mark);
		for (uint32_t i = e->role.at; i < n; i++)
			s[len++] = ids[i];
	} else {
		s[len++] = special(p, EMBER_MARK_NO_DISPATCHER);
		memcpy(s + len, ids, n * sizeof *s);
		len += n;
	}
	for (uint32_t i = 0; i < len; i++)
		if (s[i] == UINT32_MAX)
			return UINT32_MAX;
	return ember_profile_stack(p, s, len);
}

static void count_decision(struct build_attr_stats *st, const struct entry_state *e, const struct attr_decision *d,
			   uint64_t weight)
{
	if (e->role.kind == EMBER_POOL_THREADS && d->how == ATTR_NONE)
		return;   /* a program's own thread: no pool's, as far as ember can tell */
	st->worker[e->role.kind] += weight;
	if (d->how != ATTR_NONE)
		st->attributed[d->how] += weight;
	else
		st->unattributed[d->why] += weight;
}

/* Weight w of worker entry k's samples to the stack decision d gives. 0,
 * or -1 on OOM. */
static int add_decided(struct profile_builder *bd, struct ember_profile *p, const struct build_in *in, uint32_t k,
		       const struct attr_decision *d, uint64_t w, uint64_t time_ns, bool timed)
{
	const struct entry_state *e = &bd->e[k];
	uint32_t depth, sid = decided_stack(bd, p, in, k, d, &depth);
	if (sid == UINT32_MAX || ember_profile_add_row_depth(p, sid, e->thread, e->flags, depth, w) != 0 ||
	    (timed && ember_profile_add_timed(p, time_ns, sid, e->thread) != 0))
		return -1;
	count_decision(&bd->stats, e, d, w);
	return 0;
}

/* A worker's stack as it is resolved is never its row's, and others' are. */
static bool is_worker(const struct entry_state *e, const struct build_in *in)
{
	return e->role.worker && (!in->opts->no_attribution || in->opts->merge.python_only);
}

static void count_wait(struct build_attr_stats *st, const struct entry_state *e, uint64_t w)
{
	if (e->role.wait)
		st->wait[e->role.kind] += w;
}

/* Bring p up to the raw stacks as a live view does: the samples of
 * entries already in it are added as counts to the stack decided when
 * they were new, new entries resolved and decided with what is known so
 * far (no timeline). 0, or -1 on OOM. */
int profile_builder_update(struct profile_builder *bd, const struct build_in *in, struct ember_profile *p,
			   uint64_t *mismatched)
{
	size_t old = bd->ne;
	if (resolve_new(bd, in, p, mismatched) != 0)
		return -1;
	struct plan_input pi = { 0 };
	struct attr_plan *pl = bd->ne > old ? make_plan(bd, p, &pi) : NULL;
	int rc = bd->ne > old && !pl ? -1 : 0;
	size_t cursor = 0;
	struct raw_stack_view v;
	for (uint32_t k = 0; rc == 0 && raw_stacks_next(in->raw, &cursor, &v); k++) {
		struct entry_state *e = &bd->e[k];
		uint64_t w = v.count - e->count;
		if (!w)
			continue;
		e->count = v.count;
		count_wait(&bd->stats, e, w);
		if (!is_worker(e, in)) {
			rc = ember_profile_add_row(p, e->stack, e->thread, e->flags, w);
			continue;
		}
		if (e->attributed == UINT32_MAX) {
			struct attr_decision d = { 0 };
			if (!in->opts->no_attribution)
				attr_decide(pl, k, UINT64_MAX, &d);
			e->attributed = decided_stack(bd, p, in, k, &d, &e->attr_depth);
			count_decision(&bd->stats, e, &d, 0);
			if (e->attributed == UINT32_MAX) {
				rc = -1;
				break;
			}
		}
		rc = ember_profile_add_row_depth(p, e->attributed, e->thread, e->flags, e->attr_depth, w);
	}
	attr_plan_free(pl);
	plan_input_free(&pi);
	return rc;
}

void profile_builder_free(struct profile_builder *bd)
{
	if (!bd)
		return;
	free(bd->e);
	free(bd->pyids);
	free(bd->scratch);
	ember_resolver_free(bd->rv);
	free(bd);
}

struct profile_builder *profile_builder_new(const struct build_in *in, struct ember_profile *p)
{
	struct profile_builder *bd = calloc(1, sizeof *bd);
	if (!bd)
		return NULL;
	struct ember_resolver_opts ro = { .merge = in->opts->merge, .full_filenames = in->opts->full_filenames,
					  .wait_frames = in->wait_frames };
	if (!(bd->rv = ember_resolver_new(p, &ro))) {
		profile_builder_free(bd);
		return NULL;
	}
	return bd;
}

void profile_builder_stats(const struct profile_builder *bd, struct build_attr_stats *out)
{
	*out = bd->stats;
}

/* Every sample of the run in time order, from the raw timeline; NULL (and
 * *n 0) when there is none: a run that outgrew it, or out of memory. */
struct timed_sample {
	uint64_t time;
	uint32_t entry;
};

static int by_time(const void *a, const void *b)
{
	const struct timed_sample *x = a, *y = b;
	return x->time < y->time ? -1 : x->time > y->time;
}

static struct timed_sample *sorted_timeline(const struct raw_stacks *raw, size_t *n)
{
	bool complete;
	size_t total = raw_stacks_timeline_count(raw, &complete), cursor = 0;
	uint64_t time_ns = 0;
	uint32_t entry;
	struct timed_sample *t = complete && total ? malloc(total * sizeof *t) : NULL;
	*n = 0;
	if (!t)
		return NULL;
	while (*n < total && raw_stacks_timeline_next(raw, &cursor, &time_ns, &entry))
		t[(*n)++] = (struct timed_sample){ .time = time_ns, .entry = entry };
	/* Rings of different CPUs interleave: put samples back in time order
	 * (stable for equal times: arrival order). */
	qsort(t, *n, sizeof *t, by_time);
	return t;
}

/* The whole run: every entry resolved, each worker sample decided at its
 * time when the timeline has it. A timeline cut short would show only
 * the start of the run: none is better than a misleading one (the counts
 * are complete either way); a wall-clock profile (--idle) has none in the
 * profile, its samples standing for microseconds, not a period. */
static int build_all(struct profile_builder *bd, const struct build_in *in, struct ember_profile *p,
		     uint64_t *mismatched)
{
	if (resolve_new(bd, in, p, mismatched) != 0)
		return -1;
	size_t nt = 0;
	struct timed_sample *t = sorted_timeline(in->raw, &nt);
	struct plan_input pi;
	struct attr_plan *pl = make_plan(bd, p, &pi);
	uint64_t *left = calloc(bd->ne ? bd->ne : 1, sizeof *left);   /* per entry: samples not yet placed */
	int rc = pl && left ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < nt; i++)
		if (t[i].entry < bd->ne)
			rc = attr_plan_sample(pl, t[i].time, t[i].entry);
	/* Every stack of its own thread first, in the order the run met
	 * them, with all its samples. */
	size_t cursor = 0;
	struct raw_stack_view v;
	for (uint32_t k = 0; rc == 0 && raw_stacks_next(in->raw, &cursor, &v); k++) {
		struct entry_state *e = &bd->e[k];
		e->count = v.count;
		e->samples = left[k] = v.samples;
		count_wait(&bd->stats, e, v.count);
		if (!is_worker(e, in))
			rc = ember_profile_add_row(p, e->stack, e->thread, e->flags, e->count);
	}
	bool timed = !in->opts->sampler.off_cpu;
	/* The samples of the timeline, each of a worker decided at its time;
	 * a weight per sample (--idle: its period) spread evenly. */
	for (size_t i = 0; rc == 0 && i < nt; i++) {
		uint32_t k = t[i].entry;
		if (k >= bd->ne || !left[k])
			continue;
		struct entry_state *e = &bd->e[k];
		uint64_t w = e->count / e->samples + (left[k] <= e->count % e->samples);
		left[k]--;
		struct attr_decision d = { 0 };
		if (!is_worker(e, in)) {
			if (timed)
				rc = ember_profile_add_timed(p, t[i].time, e->stack, e->thread);
			continue;
		}
		if (!in->opts->no_attribution)
			attr_decide(pl, k, t[i].time, &d);
		rc = add_decided(bd, p, in, k, &d, w, t[i].time, timed);
	}
	/* What the timeline does not have (off-CPU intervals, a run past
	 * its cap): whole entries, decided without a time. */
	for (uint32_t k = 0; rc == 0 && k < bd->ne; k++) {
		struct entry_state *e = &bd->e[k];
		if (!left[k] || left[k] != e->samples)
			continue;
		struct attr_decision d = { 0 };
		if (!is_worker(e, in))
			continue;
		/* Off CPU, a worker sleeps while its dispatcher runs through many
		 * stacks: it keeps its own, its waiting marked. */
		if ((e->flags & EMBER_ROW_OFF_CPU) && !in->opts->merge.python_only) {
			rc = ember_profile_add_row(p, e->stack, e->thread, e->flags, e->count);
			continue;
		}
		if (!in->opts->no_attribution)
			attr_decide(pl, k, UINT64_MAX, &d);
		rc = add_decided(bd, p, in, k, &d, e->count, 0, false);
	}
	if (rc == 0 && timed)
		ember_profile_sort_timeline(p);
	attr_plan_free(pl);
	plan_input_free(&pi);
	free(left);
	free(t);
	return rc;
}

int build_profile(const struct build_in *in, struct ember_profile *p, uint64_t *mismatched,
		  struct build_attr_stats *stats)
{
	*mismatched = 0;
	struct profile_builder *bd = profile_builder_new(in, p);
	int rc = bd ? build_all(bd, in, p, mismatched) : -1;
	if (bd && stats)
		*stats = bd->stats;
	profile_builder_free(bd);
	return rc;
}
