/* The cold path from captured addresses to a symbolic profile: each unique
 * (module, address, flags) is symbolized once and its frames interned once;
 * every raw stack becomes a root-first stack of frame ids, its Python
 * frames merged over the eval-loop activations (ember_py_merge). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "idtab.h"
#include "build_profile.h"
#include "symbolizer.h"

#define MAX_INLINE 32

/* (module, addr, frame flags) -> the frame ids it expands to, outermost first. */
struct addr_entry {
	uint32_t module, flags;
	uint64_t addr;
	uint32_t off, n;           /* into ids */
	uint8_t cls;               /* enum ember_native_class */
};

struct resolver {
	struct ember_symbolizer *sym;
	struct ember_profile *p;
	char **build_ids;          /* hex, by module */
	size_t build_ids_cap;
	uint32_t nmods;            /* modules declared to the symbolizer */
	struct addr_entry *entries;
	size_t nentries, entries_cap;
	struct ember_idtab index;
	uint32_t *ids;
	size_t nids, ids_cap;
};

static bool addr_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct addr_entry *e = &((const struct resolver *)ctx)->entries[id], *k = key;
	return e->module == k->module && e->addr == k->addr && e->flags == k->flags;
}

static uint32_t intern_sym(struct ember_profile *p, const struct ember_sym_frame *sf, enum ember_frame_kind kind,
			   const char *build_id, uint8_t flags)
{
	struct ember_frame f = {
		.kind = kind,
		.name = sf->function,
		.file = sf->file ? sf->file : "",
		.line = sf->line,
		.module = sf->module ? sf->module : "",
		.build_id = build_id,
		.inlined = sf->inlined,
		.flags = flags,
	};
	return ember_profile_frame(p, &f);
}

/* Symbolize one address into a new entry k. 0, or -1 on OOM. */
static int symbolize(struct resolver *rv, struct addr_entry *k, bool kernel)
{
	struct ember_sym_frame sf[MAX_INLINE];
	uint32_t ids[MAX_INLINE];
	size_t n;
	if (kernel) {
		n = ember_symbolize_kernel(rv->sym, k->addr, sf, MAX_INLINE);
	} else if (k->module == EMBER_NO_MODULE) {
		sf[0] = (struct ember_sym_frame){ .function = "[unknown]", .file = "", .module = "" };
		n = 1;
	} else {
		n = ember_symbolize(rv->sym, k->module, k->addr, sf, MAX_INLINE);
	}
	k->cls = n && !kernel ? ember_py_native_class(sf[n - 1].function, sf[n - 1].module, sf[n - 1].has_symbol) : 0;
	enum ember_frame_kind kind = kernel ? EMBER_FRAME_KERNEL :
				     (k->cls & EMBER_NATIVE_INTERP) ? EMBER_FRAME_INTERP : EMBER_FRAME_NATIVE;
	const char *bid = !kernel && k->module < rv->nmods ? rv->build_ids[k->module] : "";
	for (size_t j = 0; j < n; j++) {
		/* A frame whose caller was found by a stack scan marks its
		 * containing function, the one that links to that caller. */
		uint8_t ff = j == n - 1 && k->flags ? EMBER_FRAME_CALLER_SCANNED : 0;
		/* Code no symbol names ("[module+0x...]", "[unknown]"), for the
		 * count of samples that end there. */
		if (!sf[j].has_symbol)
			ff |= EMBER_FRAME_NO_SYMBOL;
		if ((ids[n - 1 - j] = intern_sym(rv->p, &sf[j], kind, bid, ff)) == UINT32_MAX)
			return -1;
	}
	if (EMBER_GROW(rv->ids, rv->ids_cap, rv->nids + n) != 0)
		return -1;
	memcpy(rv->ids + rv->nids, ids, n * sizeof *ids);
	k->off = (uint32_t)rv->nids;
	k->n = (uint32_t)n;
	rv->nids += n;
	return 0;
}

/* The entry of one address (outermost frame first: the containing
 * function, then what was inlined into it); NULL on OOM. */
static const struct addr_entry *resolve(struct resolver *rv, const struct ember_frame_addr *fa, bool kernel)
{
	struct addr_entry k = { .module = fa->module, .flags = fa->flags & EMBER_FRAME_SCANNED, .addr = fa->addr };
	uint64_t h = ember_hash_pair(ember_hash_pair(k.addr, k.module), k.flags);
	uint32_t id = ember_idtab_find(&rv->index, h, addr_eq, rv, &k);
	if (id != UINT32_MAX)
		return &rv->entries[id];
	if (symbolize(rv, &k, kernel) != 0 || EMBER_GROW(rv->entries, rv->entries_cap, rv->nentries + 1) != 0 ||
	    ember_idtab_insert(&rv->index, h, (uint32_t)rv->nentries) != 0)
		return NULL;
	rv->entries[rv->nentries] = k;
	return &rv->entries[rv->nentries++];
}

/* Declare the sampler's modules not declared yet (a run loads more as it
 * goes: a live profile is resolved many times). 0, or -1 on OOM. */
static int resolver_sync_modules(struct resolver *rv, const struct build_in *in)
{
	uint32_t nmods = ember_sampler_module_count(in->sampler);
	if (nmods <= rv->nmods)
		return 0;
	if (EMBER_GROW(rv->build_ids, rv->build_ids_cap, (size_t)nmods + 1) != 0)
		return -1;
	for (uint32_t m = rv->nmods; m < nmods; m++) {
		struct ember_module_info mi;
		ember_sampler_module(in->sampler, m, &mi);
		if (mi.jit_pid)
			ember_symbolizer_add_jit_module(rv->sym, m, mi.path, mi.jit_pid, in->jit);
		else
			ember_symbolizer_add_module_in_root(rv->sym, m, mi.open_path, mi.path, mi.root, mi.build_id,
							    mi.build_id_len);
		/* hex, for .ember and pprof consumers that fetch debug info by it */
		if (!(rv->build_ids[m] = calloc(mi.build_id_len * 2 + 1, 1)))
			return -1;
		rv->nmods = m + 1;
		for (size_t i = 0; i < mi.build_id_len; i++)
			sprintf(rv->build_ids[m] + 2 * i, "%02x", mi.build_id[i]);
	}
	return 0;
}

static int resolver_init(struct resolver *rv, const struct build_in *in, struct ember_profile *p)
{
	*rv = (struct resolver){ .p = p };
	rv->sym = ember_symbolizer_new();
	if (!rv->sym || ember_idtab_init(&rv->index) != 0)
		return -1;
	return resolver_sync_modules(rv, in);
}

static void resolver_free(struct resolver *rv)
{
	for (uint32_t m = 0; rv->build_ids && m < rv->nmods; m++)
		free(rv->build_ids[m]);
	free(rv->build_ids);
	free(rv->entries);
	free(rv->ids);
	ember_idtab_free(&rv->index);
	ember_symbolizer_free(rv->sym);
}

/* Per-stack buffers, grown to the largest stack. */
struct stack_bufs {
	struct ember_native_group *groups;
	size_t groups_cap;
	struct ember_merged *merged;
	size_t merged_cap;
	uint32_t *stack;
	size_t stack_cap;
};

/* Native groups of v, root first (captured leaf first). The class of an
 * eval-loop part no symbol names (the .cold part of a stripped python3,
 * found by its jumps) is set from the reader. 0, or -1 on OOM. */
static int native_groups(struct resolver *rv, const struct build_in *in, const struct raw_stack_view *v,
			 const struct ember_python *reader, struct stack_bufs *b)
{
	if (EMBER_GROW(b->groups, b->groups_cap, v->nframes) != 0)
		return -1;
	/* Offsets first: the id array may move while it grows. */
	uint32_t off[EMBER_MAX_FRAMES];
	if (v->nframes > EMBER_MAX_FRAMES)
		return -1;
	for (uint32_t g = 0, i = v->nframes; i-- > 0; g++) {
		const struct addr_entry *e = resolve(rv, &v->frames[i], false);
		if (!e)
			return -1;
		off[g] = e->off;
		b->groups[g] = (struct ember_native_group){ .n = e->n, .cls = e->cls };
	}
	ember_py_root_groups(b->groups, v->nframes);
	for (uint32_t g = 0, i = v->nframes; g < v->nframes; g++) {
		const struct ember_frame_addr *fa = &v->frames[--i];
		b->groups[g].ids = rv->ids + off[g];
		if (!reader || (b->groups[g].cls & (EMBER_NATIVE_EVAL | EMBER_NATIVE_EVAL_EX)) ||
		    fa->module == EMBER_NO_MODULE)
			continue;
		struct ember_module_info mi;
		ember_sampler_module(in->sampler, fa->module, &mi);
		b->groups[g].cls = ember_py_frame_class(reader, b->groups[g].cls, mi.path, fa->addr);
	}
	return 0;
}

static uint32_t python_frame(struct ember_profile *p, const struct ember_python *py, const struct ember_py_frame *pf,
			     bool full_filenames)
{
	const struct ember_py_code *c = py ? ember_python_code(py, pf->code) : NULL;
	struct ember_frame f = {
		.kind = EMBER_FRAME_PYTHON,
		.name = c ? c->qualname : "?",
		.file = c ? (full_filenames ? c->filename : c->short_filename) : "",
		.line = pf->line,
		.first_line = c ? c->first_line : 0,
	};
	return ember_profile_frame(p, &f);
}

static uint32_t special(struct ember_profile *p, const char *name)
{
	struct ember_frame f = { .kind = EMBER_FRAME_SPECIAL, .name = name, .file = "", .module = "" };
	return ember_profile_frame(p, &f);
}

/* The root-first frame ids of one raw stack into b->stack; its length,
 * or -1 on OOM. */
static long build_stack(struct resolver *rv, const struct build_in *in, const struct raw_stack_view *v,
			struct stack_bufs *b, bool *uncertain)
{
	const struct ember_record_opts *o = in->opts;
	const struct ember_python *reader = in->python ? ember_py_session_reader(in->python, v->pid) : NULL;
	size_t cap = 3 + (size_t)(v->nframes + v->nkernel) * MAX_INLINE + v->npy;
	if (EMBER_GROW(b->stack, b->stack_cap, cap) != 0 || EMBER_GROW(b->merged, b->merged_cap, cap) != 0 ||
	    native_groups(rv, in, v, reader, b) != 0)
		return -1;
	size_t n = 0;
	if (o->subprocesses) {
		char label[320];
		const char *cmd = in->python ? ember_py_session_cmdline(in->python, v->pid) : "";
		snprintf(label, sizeof label, "process %u: %s", v->pid, cmd[0] ? cmd : "?");
		b->stack[n++] = special(rv->p, label);
	}
	bool truncated = (v->flags & EMBER_SAMPLE_TRUNCATED) != 0;
	if (truncated)
		b->stack[n++] = special(rv->p, "[truncated]");
	struct ember_merge_in mi = { .groups = b->groups, .ngroups = v->nframes, .py = v->py, .npy = v->npy,
				     .pyflags = v->pyflags, .eval_class = reader ? ember_py_eval_class(reader) : 0,
				     .native_truncated = truncated };
	uint32_t nm = ember_py_merge(&o->merge, &mi, b->merged, (uint32_t)(cap - n), uncertain);
	for (uint32_t i = 0; i < nm; i++) {
		const struct ember_merged *m = &b->merged[i];
		b->stack[n++] = m->kind == EMBER_MERGED_NATIVE ? m->value :
				m->kind == EMBER_MERGED_PYTHON ?
					python_frame(rv->p, reader, &v->py[m->value], o->full_filenames) :
					special(rv->p, "[python frames uncertain]");
	}
	for (uint32_t i = v->nkernel; i-- > 0 && !o->merge.python_only;) {
		struct ember_frame_addr kfa = { .module = EMBER_NO_MODULE, .addr = v->kernel_ips[i] };
		const struct addr_entry *e = resolve(rv, &kfa, true);
		if (!e)
			return -1;
		if (n + e->n <= b->stack_cap)
			memcpy(b->stack + n, rv->ids + e->off, e->n * sizeof *b->stack), n += e->n;
	}
	for (size_t i = 0; i < n; i++)
		if (b->stack[i] == UINT32_MAX)
			return -1;
	return (long)n;
}

/* Lay out the timeline: raw entry k became profile stack entry_stack[k]
 * of thread entry_thread[k]. A timeline cut short would show only the
 * start of the run: none is better than a misleading one (the counts are
 * complete either way). */
static int add_timeline(const struct raw_stacks *raw, struct ember_profile *p, const uint32_t *entry_stack,
			const uint32_t *entry_thread, size_t nentries)
{
	bool complete;
	size_t cursor = 0;
	uint64_t time_ns = 0;
	uint32_t entry;

	raw_stacks_timeline_count(raw, &complete);
	while (complete && raw_stacks_timeline_next(raw, &cursor, &time_ns, &entry))
		if (entry < nentries && ember_profile_add_timed(p, time_ns, entry_stack[entry], entry_thread[entry]) != 0)
			return -1;
	/* Rings of different CPUs interleave: put samples back in time order. */
	ember_profile_sort_timeline(p);
	return 0;
}

/* A profile being built from the raw stacks, once or (live) again and
 * again: raw entry k became stack entry_stack[k] of thread entry_thread[k]
 * with entry_count[k] samples so far. */
struct profile_builder {
	struct resolver rv;
	struct stack_bufs b;
	uint32_t *entry_stack, *entry_thread;
	uint64_t *entry_count;
	size_t nentries, es_cap, et_cap, ec_cap;
};

/* The profile row flags of raw entry v's samples. */
static uint32_t row_flags(const struct raw_stack_view *v)
{
	return v->flags & EMBER_SAMPLE_OFF_CPU ? EMBER_ROW_OFF_CPU : 0;
}

/* Raw entry v, new, into p. 0, or -1 on OOM. */
static int builder_add_entry(struct profile_builder *bd, const struct build_in *in, struct ember_profile *p,
			     const struct raw_stack_view *v, uint64_t *mismatched)
{
	bool uncertain;
	long n = build_stack(&bd->rv, in, v, &bd->b, &uncertain);
	if (n < 0 || EMBER_GROW(bd->entry_stack, bd->es_cap, bd->nentries + 1) != 0 ||
	    EMBER_GROW(bd->entry_thread, bd->et_cap, bd->nentries + 1) != 0 ||
	    EMBER_GROW(bd->entry_count, bd->ec_cap, bd->nentries + 1) != 0)
		return -1;
	if (uncertain)
		*mismatched += v->samples;
	uint32_t sid = ember_profile_stack(p, bd->b.stack, (uint32_t)n);
	/* A Python thread is named as Python names it ("MainThread",
	 * "Thread-3 (worker)"); others (BLAS, OpenMP workers) by their comm. */
	const char *tname = in->python ? ember_py_session_thread_name(in->python, v->pid, v->tid) : NULL;
	if (!tname)
		tname = ember_sampler_thread_name(in->sampler, v->pid, v->tid);
	uint32_t tix = ember_profile_thread(p, v->pid, v->tid, tname);
	if (sid == UINT32_MAX || tix == UINT32_MAX || ember_profile_add_row(p, sid, tix, row_flags(v), v->count) != 0)
		return -1;
	bd->entry_stack[bd->nentries] = sid;
	bd->entry_thread[bd->nentries] = tix;
	bd->entry_count[bd->nentries++] = v->count;
	return 0;
}

/* Bring p up to the raw stacks: the samples of entries already in it are
 * added as counts, and only new entries are resolved. 0, or -1 on OOM. */
int profile_builder_update(struct profile_builder *bd, const struct build_in *in, struct ember_profile *p,
			  uint64_t *mismatched)
{
	size_t cursor = 0;
	struct raw_stack_view v;
	if (resolver_sync_modules(&bd->rv, in) != 0)
		return -1;
	while (raw_stacks_next(in->raw, &cursor, &v)) {
		size_t k = cursor - 1;
		if (k >= bd->nentries) {
			if (builder_add_entry(bd, in, p, &v, mismatched) != 0)
				return -1;
			continue;
		}
		if (v.count > bd->entry_count[k] &&
		    ember_profile_add_row(p, bd->entry_stack[k], bd->entry_thread[k], row_flags(&v),
					  v.count - bd->entry_count[k]) != 0)
			return -1;
		bd->entry_count[k] = v.count;
	}
	return 0;
}

void profile_builder_free(struct profile_builder *bd)
{
	if (!bd)
		return;
	free(bd->entry_stack);
	free(bd->entry_thread);
	free(bd->entry_count);
	free(bd->b.groups);
	free(bd->b.merged);
	free(bd->b.stack);
	resolver_free(&bd->rv);
	free(bd);
}

struct profile_builder *profile_builder_new(const struct build_in *in, struct ember_profile *p)
{
	struct profile_builder *bd = calloc(1, sizeof *bd);
	if (!bd)
		return NULL;
	if (resolver_init(&bd->rv, in, p) != 0) {
		profile_builder_free(bd);
		return NULL;
	}
	return bd;
}

int build_profile(const struct build_in *in, struct ember_profile *p, uint64_t *mismatched)
{
	*mismatched = 0;
	struct profile_builder *bd = profile_builder_new(in, p);
	int rc = bd ? profile_builder_update(bd, in, p, mismatched) : -1;
	/* A wall-clock profile (--idle) has none: its timeline's samples would
	 * each stand for the profile's interval, a microsecond, not a period. */
	if (rc == 0 && !in->opts->sampler.off_cpu)
		rc = add_timeline(in->raw, p, bd->entry_stack, bd->entry_thread, bd->nentries);
	profile_builder_free(bd);
	return rc;
}
