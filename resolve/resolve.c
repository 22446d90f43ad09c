/* One captured stack to named frames (resolve.h has the contract): each
 * unique (module, address, scanned) is symbolized once and its frames
 * interned once; the native frames are classed, the Python frames merged
 * over the eval-loop activations (ember_py_merge), the special frames
 * added. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "idtab.h"
#include "resolve.h"
#include "symbolizer.h"

/* Frames one address may expand to: the function and what was inlined into it. */
#define MAX_INLINE 32

/* (module, addr, frame flags) -> the frame ids it expands to, outermost first. */
struct addr_entry {
	uint32_t module, flags;
	uint64_t addr;
	uint32_t off, n;           /* into ids */
	uint8_t cls;               /* enum ember_native_class */
	struct ember_pool_group pool;   /* what it is to the pools (its module interned in the profile) */
};

/* What the resolver keeps of a declared module. */
struct module_slot {
	char *build_id;            /* hex, for .ember and pprof consumers that fetch debug info by it */
	char *path;                /* as the target mapped it: the reader's eval-loop check takes it */
	bool declared;
};

struct ember_resolver {
	struct ember_resolver_opts o;
	struct ember_symbolizer *sym;
	struct ember_profile *p;
	struct module_slot *mods;
	size_t nmods, mods_cap;
	struct addr_entry *entries;
	size_t nentries, entries_cap;
	struct ember_idtab index;
	uint32_t *ids;             /* every entry's frame ids */
	size_t nids, ids_cap;
	/* Per stack, grown to the largest. */
	struct ember_native_group *groups;
	struct ember_pool_group *pool_groups;
	size_t groups_cap, pool_groups_cap;
	struct ember_merged *merged;
	size_t merged_cap;
	struct item *items;        /* the stack as planned (ember_resolve) */
	uint32_t *stack, *py_index, *peer;
	size_t items_cap, stack_cap, py_index_cap, peer_cap;
};

static bool addr_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct addr_entry *e = &((const struct ember_resolver *)ctx)->entries[id], *k = key;
	return e->module == k->module && e->addr == k->addr && e->flags == k->flags;
}

struct ember_resolver *ember_resolver_new(struct ember_profile *p, const struct ember_resolver_opts *o)
{
	struct ember_resolver *rv = calloc(1, sizeof *rv);
	if (!rv)
		return NULL;
	rv->o = *o;
	rv->p = p;
	rv->sym = ember_symbolizer_new();
	if (!rv->sym || ember_idtab_init(&rv->index) != 0) {
		ember_resolver_free(rv);
		return NULL;
	}
	return rv;
}

void ember_resolver_free(struct ember_resolver *rv)
{
	if (!rv)
		return;
	for (size_t m = 0; m < rv->nmods; m++) {
		free(rv->mods[m].build_id);
		free(rv->mods[m].path);
	}
	free(rv->mods);
	free(rv->entries);
	free(rv->ids);
	ember_idtab_free(&rv->index);
	ember_symbolizer_free(rv->sym);
	free(rv->groups);
	free(rv->pool_groups);
	free(rv->peer);
	free(rv->merged);
	free(rv->items);
	free(rv->stack);
	free(rv->py_index);
	free(rv);
}

int ember_resolver_add_module(struct ember_resolver *rv, uint32_t id, const struct ember_module_info *mi,
			      struct ember_jit_map *jit)
{
	if (id < rv->nmods && rv->mods[id].declared)
		return 0;
	if (EMBER_GROW(rv->mods, rv->mods_cap, (size_t)id + 1) != 0)
		return -1;
	for (; rv->nmods <= id; rv->nmods++)
		rv->mods[rv->nmods] = (struct module_slot){ 0 };
	struct module_slot *m = &rv->mods[id];
	if (mi->jit_pid)
		ember_symbolizer_add_jit_module(rv->sym, id, mi->path, mi->jit_pid, jit);
	else
		ember_symbolizer_add_module_in_root(rv->sym, id, mi->open_path, mi->path, mi->root, mi->build_id,
						    mi->build_id_len);
	if (!(m->build_id = calloc(mi->build_id_len * 2 + 1, 1)) || !(m->path = strdup(mi->path ? mi->path : "")))
		return -1;
	for (size_t i = 0; i < mi->build_id_len; i++)
		sprintf(m->build_id + 2 * i, "%02x", mi->build_id[i]);
	m->declared = true;
	return 0;
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
static int symbolize(struct ember_resolver *rv, struct addr_entry *k, bool kernel)
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
	if (n && !kernel) {
		const struct ember_sym_frame *fn = &sf[n - 1];   /* the containing function */
		uint8_t kind = (uint8_t)ember_pool_of_module(fn->module);
		k->pool = (struct ember_pool_group){ .kind = kind, .fn = ember_pool_fn(kind, fn->function, fn->module),
						     .module = ember_profile_cstr(rv->p, fn->module) };
		if (!k->pool.module)
			return -1;
	}
	/* The interpreter's machinery is its kind (what Python frames stand
	 * for); the rest of its code is native code like any other's. */
	bool machinery = (k->cls & (EMBER_NATIVE_MACHINERY | EMBER_NATIVE_EVAL | EMBER_NATIVE_EVAL_EX)) ||
			 ((k->cls & EMBER_NATIVE_INTERP) && (k->cls & EMBER_NATIVE_ROOT));
	enum ember_frame_kind kind = kernel ? EMBER_FRAME_KERNEL : machinery ? EMBER_FRAME_INTERP : EMBER_FRAME_NATIVE;
	const char *bid = !kernel && k->module < rv->nmods && rv->mods[k->module].build_id ?
				  rv->mods[k->module].build_id : "";
	size_t kept = 0;   /* ids[MAX_INLINE - kept ..] hold the frames kept, outermost first */
	for (size_t j = 0; j < n; j++) {
		/* The machinery inlined into a function of the interpreter's that
		 * is shown (builtin_sorted's call of its key) is hidden with the
		 * rest of it. */
		if (j < n - 1 && !rv->o.merge.native_unfiltered && (k->cls & EMBER_NATIVE_INTERP) &&
		    sf[j].has_symbol && ember_py_machinery(sf[j].function))
			continue;
		/* A frame whose caller was found by a stack scan marks its
		 * containing function, the one that links to that caller. */
		uint8_t ff = j == n - 1 && k->flags ? EMBER_FRAME_CALLER_SCANNED : 0;
		/* Code no symbol names ("[module+0x...]", "[unknown]"), for the
		 * count of samples that end there. */
		if (!sf[j].has_symbol)
			ff |= EMBER_FRAME_NO_SYMBOL;
		if ((ids[MAX_INLINE - 1 - kept++] = intern_sym(rv->p, &sf[j], kind, bid, ff)) == UINT32_MAX)
			return -1;
	}
	n = kept;
	if (EMBER_GROW(rv->ids, rv->ids_cap, rv->nids + n) != 0)
		return -1;
	memcpy(rv->ids + rv->nids, ids + MAX_INLINE - n, n * sizeof *ids);
	k->off = (uint32_t)rv->nids;
	k->n = (uint32_t)n;
	rv->nids += n;
	return 0;
}

/* The entry of one address (outermost frame first: the containing
 * function, then what was inlined into it); NULL on OOM. */
static const struct addr_entry *resolve_addr(struct ember_resolver *rv, const struct ember_frame_addr *fa,
					     bool kernel)
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

/* Native groups of in, root first (captured leaf first). The class of an
 * eval-loop part no symbol names (the .cold part of a stripped python3,
 * found by its jumps) is set from the reader. 0, or -1 on OOM. */
static int native_groups(struct ember_resolver *rv, const struct ember_resolve_in *in)
{
	if (in->nframes > EMBER_MAX_FRAMES || EMBER_GROW(rv->groups, rv->groups_cap, in->nframes) != 0 ||
	    EMBER_GROW(rv->pool_groups, rv->pool_groups_cap, in->nframes) != 0)
		return -1;
	/* Offsets first: the id array may move while it grows. */
	uint32_t off[EMBER_MAX_FRAMES];
	for (uint32_t g = 0, i = in->nframes; i-- > 0; g++) {
		const struct addr_entry *e = resolve_addr(rv, &in->frames[i], false);
		if (!e)
			return -1;
		off[g] = e->off;
		rv->groups[g] = (struct ember_native_group){ .n = e->n, .cls = e->cls };
		rv->pool_groups[g] = e->pool;
	}
	ember_py_root_groups(rv->groups, in->nframes,
			     !(in->sample_flags & (EMBER_SAMPLE_TRUNCATED | EMBER_SAMPLE_UNWIND_ERROR)));
	for (uint32_t g = 0; g < in->nframes; g++)
		rv->pool_groups[g].root = (rv->groups[g].cls & EMBER_NATIVE_ROOT) != 0;
	const struct ember_python *reader = in->reader;
	for (uint32_t g = 0, i = in->nframes; g < in->nframes; g++) {
		const struct ember_frame_addr *fa = &in->frames[--i];
		rv->groups[g].ids = rv->ids + off[g];
		if (!reader || (rv->groups[g].cls & (EMBER_NATIVE_EVAL | EMBER_NATIVE_EVAL_EX)) ||
		    fa->module >= rv->nmods)
			continue;
		rv->groups[g].cls = ember_py_frame_class(reader, rv->groups[g].cls, rv->mods[fa->module].path, fa->addr);
	}
	return 0;
}

static uint32_t python_frame(struct ember_resolver *rv, const struct ember_python *py, const struct ember_py_frame *pf)
{
	const struct ember_py_code *c = py ? ember_python_code(py, pf->code) : NULL;
	struct ember_frame f = {
		.kind = EMBER_FRAME_PYTHON,
		.name = c ? c->qualname : "?",
		.file = c ? (rv->o.full_filenames ? c->filename : c->short_filename) : "",
		.line = pf->line,
		.first_line = c ? c->first_line : 0,
	};
	return ember_profile_frame(rv->p, &f);
}

static uint32_t special(struct ember_profile *p, const char *name)
{
	struct ember_frame f = { .kind = EMBER_FRAME_SPECIAL, .name = name, .file = "", .module = "" };
	return ember_profile_frame(p, &f);
}

/* The first merged item at or past group g (after: past it). */
static uint32_t merged_at(const struct ember_resolver *rv, uint32_t nm, uint32_t g, bool after)
{
	uint32_t i = 0;
	while (i < nm && (rv->merged[i].group == EMBER_MERGED_BEFORE ||
			  (after ? rv->merged[i].group <= g : rv->merged[i].group < g)))
		i++;
	return i;
}

/* A frame of the stack as planned, before anything is interned: a frame
 * id, a Python frame (its index in py[]), or one of the special frames. */
enum item_kind { ITEM_ID, ITEM_PYTHON, ITEM_MARK };
enum mark { MARK_ROOT_LABEL, MARK_TRUNCATED, MARK_INCOMPLETE, MARK_UNCERTAIN, MARK_WAIT };
struct item {
	uint8_t kind;              /* enum item_kind */
	uint32_t value;            /* a frame id, an index in py[], an enum mark */
};

static void plan(struct ember_resolver *rv, size_t *n, enum item_kind kind, uint32_t value)
{
	rv->items[(*n)++] = (struct item){ .kind = (uint8_t)kind, .value = value };
}

/* The kernel frames of in, root first, as planned items; false on OOM. */
static bool plan_kernel(struct ember_resolver *rv, const struct ember_resolve_in *in, size_t *n, size_t cap)
{
	for (uint32_t i = in->nkernel; i-- > 0;) {
		struct ember_frame_addr kfa = { .module = EMBER_NO_MODULE, .addr = in->kernel_ips[i] };
		const struct addr_entry *e = resolve_addr(rv, &kfa, true);
		if (!e)
			return false;
		for (uint32_t k = 0; k < e->n && *n < cap; k++)
			plan(rv, n, ITEM_ID, rv->ids[e->off + k]);
	}
	return true;
}

/* The planned items as frame ids: the Python frames and the special ones
 * interned in the profile now. 0, or -1 on OOM. */
static int emit(struct ember_resolver *rv, const struct ember_resolve_in *in, uint8_t pool, size_t n)
{
	const char *marks[] = {
		[MARK_ROOT_LABEL] = in->root_label, [MARK_TRUNCATED] = EMBER_MARK_TRUNCATED,
		[MARK_INCOMPLETE] = EMBER_MARK_INCOMPLETE, [MARK_UNCERTAIN] = EMBER_MARK_UNCERTAIN,
		[MARK_WAIT] = ember_pool_wait_marker(pool),
	};
	for (size_t i = 0; i < n; i++) {
		const struct item *it = &rv->items[i];
		rv->py_index[i] = it->kind == ITEM_PYTHON ? it->value : UINT32_MAX;
		rv->stack[i] = it->kind == ITEM_ID ? it->value :
			       it->kind == ITEM_PYTHON ? python_frame(rv, in->reader, &in->py[it->value]) :
							 special(rv->p, marks[it->value]);
		if (rv->stack[i] == UINT32_MAX)
			return -1;
	}
	if (in->npeer && EMBER_GROW(rv->peer, rv->peer_cap, (size_t)in->npeer + 1) != 0)
		return -1;
	/* the peer's Python frames, root first */
	for (uint32_t i = 0; i < in->npeer; i++)
		if ((rv->peer[i] = python_frame(rv, in->reader, &in->peer_py[in->npeer - 1 - i])) == UINT32_MAX)
			return -1;
	return 0;
}

int ember_resolve(struct ember_resolver *rv, const struct ember_resolve_in *in, struct ember_resolved *out)
{
	const struct ember_merge_opts *mo = &rv->o.merge;
	size_t cap = 4 + (size_t)(in->nframes + in->nkernel) * MAX_INLINE + in->npy;
	if (EMBER_GROW(rv->stack, rv->stack_cap, cap) != 0 || EMBER_GROW(rv->py_index, rv->py_index_cap, cap) != 0 ||
	    EMBER_GROW(rv->items, rv->items_cap, cap) != 0 || EMBER_GROW(rv->merged, rv->merged_cap, cap) != 0 ||
	    native_groups(rv, in) != 0)
		return -1;
	*out = (struct ember_resolved){ 0 };
	/* The plan: the special frames at the root, the merge of the Python
	 * frames over the native groups, what the stack is to a pool. */
	size_t n = 0;
	if (in->root_label)
		plan(rv, &n, ITEM_MARK, MARK_ROOT_LABEL);
	bool truncated = (in->sample_flags & EMBER_SAMPLE_TRUNCATED) != 0;
	/* An unwind that stopped short of the root: reported so by the
	 * unwinder, or, on a Python thread, ending anywhere but at a thread's
	 * or the program's first function (so that the Python frames read at
	 * the sample still come first, as the callers they are). */
	bool incomplete = !truncated && ((in->sample_flags & EMBER_SAMPLE_UNWIND_ERROR) ||
					 (in->npy && in->nframes && !(rv->groups[0].cls & EMBER_NATIVE_ROOT)));
	if (truncated)
		plan(rv, &n, ITEM_MARK, MARK_TRUNCATED);
	if (incomplete)
		plan(rv, &n, ITEM_MARK, MARK_INCOMPLETE);
	out->incomplete = incomplete;
	uint8_t eval = in->reader ? ember_py_eval_class(in->reader) : 0;
	struct ember_merge_in mi = { .groups = rv->groups, .ngroups = in->nframes, .py = in->py, .npy = in->npy,
				     .pyflags = in->pyflags, .eval_class = eval, .native_truncated = truncated,
				     .native_incomplete = incomplete };
	uint32_t nm = ember_py_merge(mo, &mi, rv->merged, (uint32_t)(cap - n - 2), &out->uncertain);
	bool has_python = in->npy > 0;
	for (uint32_t g = 0; g < in->nframes && !has_python && eval; g++)
		has_python = (rv->groups[g].cls & eval) != 0;
	struct ember_pool_plan pp = ember_pool_plan(rv->pool_groups, in->nframes, in->main_thread, has_python);
	/* The waiting frames give way to the pool's wait mark (kept under it
	 * when unfiltered). */
	uint32_t wait_at = pp.wait ? merged_at(rv, nm, pp.wait_from, false) : UINT32_MAX;
	size_t base = n;
	for (uint32_t i = 0; i < nm; i++) {
		const struct ember_merged *m = &rv->merged[i];
		if (i == wait_at)
			plan(rv, &n, ITEM_MARK, MARK_WAIT);
		if (i >= wait_at && !rv->o.wait_frames)
			continue;
		if (m->kind == EMBER_MERGED_NATIVE)
			plan(rv, &n, ITEM_ID, m->value);
		else if (m->kind == EMBER_MERGED_PYTHON)
			plan(rv, &n, ITEM_PYTHON, m->value);
		else if (m->kind == EMBER_MERGED_CUT)
			plan(rv, &n, ITEM_MARK, MARK_TRUNCATED);
		else
			plan(rv, &n, ITEM_MARK, MARK_UNCERTAIN);
	}
	if (pp.wait && wait_at == nm)
		plan(rv, &n, ITEM_MARK, MARK_WAIT);
	if (!mo->python_only && (!pp.wait || rv->o.wait_frames) && !plan_kernel(rv, in, &n, cap))
		return -1;
	if (pp.kind) {
		/* A worker's own frames start at the wait mark when it waits (the
		 * mark stands for its pool's frames); a dispatcher's work comes
		 * after its dispatch call, and its wait mark after that. */
		out->role = (struct ember_pool_role){ .kind = pp.kind, .worker = pp.worker, .wait = pp.wait,
						      .pool = pp.pool };
		out->role.at = (uint32_t)base + (!pp.worker ? merged_at(rv, nm, pp.at, true) :
						 pp.wait ? wait_at : merged_at(rv, nm, pp.at, false));
	}
	/* The emission: the plan's frames interned. */
	if (emit(rv, in, pp.kind, n) != 0)
		return -1;
	out->ids = rv->stack;
	out->py_index = rv->py_index;
	out->n = (uint32_t)n;
	out->peer = in->npeer ? rv->peer : NULL;
	out->npeer = in->npeer;
	return 0;
}
