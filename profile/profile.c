/* The profile model: interning of frames, stacks and threads, sample rows
 * aggregated per (stack, thread, flags), the timeline, and a profile's rows
 * copied into another through id maps.  Items live in plain arrays indexed
 * by id; an id table per kind finds the id of an item in O(1). */
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "profile_internal.h"

/* ---- lifetime ---- */

int ember_profile_init(struct ember_profile *p)
{
	struct ember_idtab *tabs;

	memset(p, 0, sizeof(*p));
	p->strings = ember_strtab_new();
	/* One allocation for the four indexes; frame_index owns it. */
	tabs = calloc(4, sizeof(*tabs));
	if (!p->strings || !tabs)
		goto fail;
	p->frame_index = &tabs[0];
	p->stack_index = &tabs[1];
	p->thread_index = &tabs[2];
	p->row_index = &tabs[3];
	for (int i = 0; i < 4; i++)
		if (ember_idtab_init(&tabs[i]) < 0)
			goto fail;
	p->meta.command = ember_profile_cstr(p, "");
	if (!p->meta.command)
		goto fail;
	p->count_max = EMBER_COUNT_MAX;
	return 0;
fail:
	if (!p->frame_index)
		free(tabs);
	ember_profile_free(p);
	return -1;
}

void ember_profile_free(struct ember_profile *p)
{
	struct ember_idtab *tabs = p->frame_index;

	if (tabs) {
		for (int i = 0; i < 4; i++)
			ember_idtab_free(&tabs[i]);
		free(tabs);
	}
	ember_strtab_free(p->strings);
	free(p->frames);
	free(p->stack_frames);
	free(p->stack_off);
	free(p->stack_len);
	free(p->threads);
	free(p->rows);
	free(p->timeline);
	memset(p, 0, sizeof(*p));
}

/* ---- strings ---- */

const char *ember_profile_str(struct ember_profile *p, const char *s, size_t len)
{
	return ember_strtab_intern(p->strings, s, len);
}

const char *ember_profile_cstr(struct ember_profile *p, const char *s)
{
	return ember_strtab_intern(p->strings, s ? s : "", s ? strlen(s) : 0);
}

/* ---- frames ---- */

/* Strings are interned before hashing, so the hash and the comparison work
 * on pointers: no string is compared or hashed twice. */
static uint64_t frame_hash(const struct ember_frame *f)
{
	uint64_t h = ember_hash_mix(((uint64_t)f->flags << 8 | (uint64_t)f->kind << 1 | (f->inlined ? 1 : 0)) ^
				    ((uint64_t)f->line << 32 | f->first_line));
	h = ember_hash_mix(h ^ ember_hash_ptr(f->name));
	h = ember_hash_mix(h ^ ember_hash_ptr(f->file) * 3);
	h = ember_hash_mix(h ^ ember_hash_ptr(f->build_id) * 7);
	return ember_hash_mix(h ^ ember_hash_ptr(f->module) * 5);
}

static bool frame_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ember_frame *a = &((const struct ember_profile *)ctx)->frames[id];
	const struct ember_frame *b = key;

	return a->kind == b->kind && a->name == b->name && a->file == b->file &&
	       a->line == b->line && a->first_line == b->first_line &&
	       a->module == b->module && a->build_id == b->build_id && a->inlined == b->inlined &&
	       a->flags == b->flags;
}

uint32_t profile_frame_find(const struct ember_profile *p, const struct ember_frame *f)
{
	return ember_idtab_find(p->frame_index, frame_hash(f), frame_eq, p, f);
}

uint32_t ember_profile_frame(struct ember_profile *p, const struct ember_frame *f)
{
	struct ember_idtab *index = p->frame_index;
	struct ember_frame key = *f;
	uint32_t id;
	uint64_t h;

	key.inlined = f->inlined ? true : false;
	key.name = ember_profile_cstr(p, f->name);
	key.file = ember_profile_cstr(p, f->file);
	key.module = ember_profile_cstr(p, f->module);
	key.build_id = ember_profile_cstr(p, f->build_id);
	if (!key.name || !key.file || !key.module || !key.build_id)
		return UINT32_MAX;

	h = frame_hash(&key);
	id = ember_idtab_find(index, h, frame_eq, p, &key);
	if (id != UINT32_MAX)
		return id;

	if (p->nframes == UINT32_MAX - 1)
		return UINT32_MAX;
	size_t cap = p->frames_cap;
	if (ember_grow((void **)&p->frames, &cap, sizeof(*p->frames), (size_t)p->nframes + 1) < 0)
		return UINT32_MAX;
	p->frames_cap = (uint32_t)(cap < UINT32_MAX ? cap : UINT32_MAX);
	id = p->nframes;
	if (ember_idtab_insert(index, h, id) < 0)
		return UINT32_MAX;
	p->frames[id] = key;
	p->nframes++;
	return id;
}

/* ---- stacks ---- */

struct stack_key {
	const uint32_t *ids;
	uint32_t n;
};

static bool stack_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ember_profile *p = ctx;
	const struct stack_key *k = key;

	/* (an empty stack first: stack_frames may still be NULL) */
	return p->stack_len[id] == k->n &&
	       (k->n == 0 || memcmp(p->stack_frames + p->stack_off[id], k->ids, (size_t)k->n * sizeof(uint32_t)) == 0);
}

uint32_t ember_profile_stack(struct ember_profile *p, const uint32_t *ids, uint32_t n)
{
	struct ember_idtab *index = p->stack_index;
	struct stack_key key = { ids, n };
	uint32_t id;
	uint64_t h;

	for (uint32_t i = 0; i < n; i++)
		if (ids[i] >= p->nframes)
			return UINT32_MAX;

	h = ember_hash_bytes(ids, (size_t)n * sizeof(uint32_t), 0x57ac);
	id = ember_idtab_find(index, h, stack_eq, p, &key);
	if (id != UINT32_MAX)
		return id;

	/* stack_off is 32-bit: the frame array of unique stacks is capped at 4G
	 * entries (16 GiB), far beyond any real profile. */
	if (p->nstacks == UINT32_MAX - 1 || p->stack_frames_len + n > UINT32_MAX)
		return UINT32_MAX;
	size_t cap = p->stacks_cap;
	size_t off_cap = cap, len_cap = cap;
	if (ember_grow((void **)&p->stack_off, &off_cap, sizeof(uint32_t), (size_t)p->nstacks + 1) < 0 ||
	    ember_grow((void **)&p->stack_len, &len_cap, sizeof(uint32_t), (size_t)p->nstacks + 1) < 0)
		return UINT32_MAX;
	/* Both arrays grow in step; record the smaller in case one failed to
	 * grow on an earlier call after the other succeeded. */
	cap = off_cap < len_cap ? off_cap : len_cap;
	p->stacks_cap = (uint32_t)(cap < UINT32_MAX ? cap : UINT32_MAX);
	if (ember_grow((void **)&p->stack_frames, &p->stack_frames_cap, sizeof(uint32_t),
		       p->stack_frames_len + n) < 0)
		return UINT32_MAX;

	id = p->nstacks;
	if (ember_idtab_insert(index, h, id) < 0)
		return UINT32_MAX;
	if (n)
		memcpy(p->stack_frames + p->stack_frames_len, ids, (size_t)n * sizeof(uint32_t));
	p->stack_off[id] = (uint32_t)p->stack_frames_len;
	p->stack_len[id] = n;
	p->stack_frames_len += n;
	p->nstacks++;
	return id;
}

/* ---- threads ---- */

/* Two 32-bit ids as one key of an id table: (pid, tid), (stack, thread).
 * Its hash, and whether an item's two ids equal it. */
struct id_pair {
	uint32_t a, b;
};

static uint64_t id_pair_hash(const struct id_pair *k)
{
	return ember_hash_mix((uint64_t)k->a << 32 | k->b);
}

static bool id_pair_eq(uint32_t a, uint32_t b, const void *key)
{
	const struct id_pair *k = key;

	return a == k->a && b == k->b;
}

static bool thread_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ember_thread *t = &((const struct ember_profile *)ctx)->threads[id];

	return id_pair_eq(t->pid, t->tid, key);
}

uint32_t ember_profile_thread(struct ember_profile *p, uint32_t pid, uint32_t tid,
			      const char *name)
{
	struct ember_idtab *index = p->thread_index;
	struct id_pair key = { pid, tid };
	const char *iname = NULL;
	uint64_t h = id_pair_hash(&key);
	uint32_t id;

	if (name && *name) {
		iname = ember_profile_cstr(p, name);
		if (!iname)
			return UINT32_MAX;
	}
	id = ember_idtab_find(index, h, thread_eq, p, &key);
	if (id != UINT32_MAX) {
		if (iname)
			p->threads[id].name = iname;
		return id;
	}

	if (!iname) {
		iname = ember_profile_cstr(p, "");
		if (!iname)
			return UINT32_MAX;
	}
	if (p->nthreads == UINT32_MAX - 1)
		return UINT32_MAX;
	size_t cap = p->threads_cap;
	if (ember_grow((void **)&p->threads, &cap, sizeof(*p->threads), (size_t)p->nthreads + 1) < 0)
		return UINT32_MAX;
	p->threads_cap = (uint32_t)(cap < UINT32_MAX ? cap : UINT32_MAX);
	id = p->nthreads;
	if (ember_idtab_insert(index, h, id) < 0)
		return UINT32_MAX;
	p->threads[id] = (struct ember_thread){ .pid = pid, .tid = tid, .name = iname };
	p->nthreads++;
	return id;
}

/* ---- rows ---- */

/* A row's key: (stack, thread), its flags and its depth. */
struct row_key {
	struct id_pair ids;
	uint32_t flags, depth;
};

static bool row_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ember_sample_row *r = &((const struct ember_profile *)ctx)->rows[id];
	const struct row_key *k = key;

	return r->flags == k->flags && r->depth == k->depth && id_pair_eq(r->stack, r->thread, &k->ids);
}

int ember_profile_add(struct ember_profile *p, uint32_t stack, uint32_t thread, uint64_t count)
{
	return ember_profile_add_row(p, stack, thread, 0, count);
}

int ember_profile_add_row(struct ember_profile *p, uint32_t stack, uint32_t thread, uint32_t flags,
			  uint64_t count)
{
	return ember_profile_add_row_depth(p, stack, thread, flags & ~EMBER_ROW_ATTRIBUTED, 0, count);
}

int ember_profile_add_row_depth(struct ember_profile *p, uint32_t stack, uint32_t thread, uint32_t flags,
				uint32_t depth, uint64_t count)
{
	struct ember_idtab *index = p->row_index;
	flags = depth ? flags | EMBER_ROW_ATTRIBUTED : flags & ~EMBER_ROW_ATTRIBUTED;
	struct row_key key = { { stack, thread }, flags, depth };
	uint64_t h = id_pair_hash(&key.ids) ^ (((uint64_t)depth << 32 | flags) * 0x9E3779B97F4A7C15ull);
	uint32_t id;

	if (stack >= p->nstacks || thread >= p->nthreads || (flags & ~EMBER_ROW_FLAGS_KNOWN) ||
	    (depth && depth > p->stack_len[stack]))
		return -1;
	/* The total stays at most count_max, so no sum of rows can wrap. */
	if (p->total > p->count_max || count > p->count_max - p->total) {
		count = p->total < p->count_max ? p->count_max - p->total : 0;
		p->saturated = true;
	}
	id = ember_idtab_find(index, h, row_eq, p, &key);
	if (id != UINT32_MAX) {
		p->rows[id].count += count;
		p->total += count;
		if (flags & EMBER_ROW_OFF_CPU)
			p->off_cpu_total += count;
		return 0;
	}

	if (p->nrows == UINT32_MAX - 1)
		return -1;
	size_t cap = p->rows_cap;
	if (ember_grow((void **)&p->rows, &cap, sizeof(*p->rows), (size_t)p->nrows + 1) < 0)
		return -1;
	p->rows_cap = (uint32_t)(cap < UINT32_MAX ? cap : UINT32_MAX);
	id = p->nrows;
	if (ember_idtab_insert(index, h, id) < 0)
		return -1;
	p->rows[id] = (struct ember_sample_row){ .stack = stack, .thread = thread, .flags = flags, .depth = depth,
						 .count = count };
	p->nrows++;
	p->total += count;
	if (flags & EMBER_ROW_OFF_CPU)
		p->off_cpu_total += count;
	return 0;
}

/* ---- a profile from another ---- */

int ember_profile_set_meta(struct ember_profile *p, const struct ember_run_meta *m)
{
	p->meta = *m;
	p->meta.command = ember_profile_cstr(p, m->command);
	p->meta.source = ember_profile_cstr(p, m->source);
	return p->meta.command && p->meta.source ? 0 : -1;
}

void ember_profile_set_count_max(struct ember_profile *p, uint64_t max)
{
	p->count_max = max;
}

int ember_profile_add_rows_of(struct ember_profile *p, const struct ember_profile *src,
			      const struct ember_profile_map *m)
{
	uint32_t *ids = NULL;
	size_t cap = 0;
	int ret = -1;

	for (uint32_t r = 0; r < src->nrows; r++) {
		const struct ember_sample_row *row = &src->rows[r];
		uint32_t n, k, depth = 0, attr = 0;
		const uint32_t *sf = ember_profile_stack_frames(src, row->stack, &n);
		if (!row->count)
			continue;
		if (EMBER_GROW(ids, cap, (size_t)n + 1) < 0)
			goto out;
		for (k = 0; k < n; k++) {
			if (k == row->depth)
				attr = depth;   /* the dispatcher's frames, as mapped */
			if (!(depth && m->merge_runs && m->merge_runs[sf[k]] && ids[depth - 1] == m->frame[sf[k]]))
				ids[depth++] = m->frame[sf[k]];
		}
		uint32_t stack = ember_profile_stack(p, ids, depth);
		uint32_t thread = m->thread ? m->thread[row->thread] : m->one_thread;
		uint32_t flags = row->flags & m->row_flags;
		if (stack == UINT32_MAX ||
		    ember_profile_add_row_depth(p, stack, thread, flags, flags & EMBER_ROW_ATTRIBUTED ? attr : 0,
						row->count) < 0)
			goto out;
	}
	ret = 0;
out:
	free(ids);
	return ret;
}

/* ---- timeline ---- */

int ember_profile_add_timed(struct ember_profile *p, uint64_t time_ns, uint32_t stack, uint32_t thread)
{
	if (stack >= p->nstacks || thread >= p->nthreads)
		return -1;
	if (ember_grow((void **)&p->timeline, &p->timeline_cap, sizeof(*p->timeline), p->ntimeline + 1) < 0)
		return -1;
	p->timeline[p->ntimeline++] = (struct ember_timed_sample){ time_ns, stack, thread };
	return 0;
}

struct timed_key {
	uint64_t time_ns;
	size_t seq;            /* insertion order: makes the sort stable */
	struct ember_timed_sample sample;
};

static int cmp_timed(const void *a, const void *b)
{
	const struct timed_key *x = a, *y = b;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void ember_profile_sort_timeline(struct ember_profile *p)
{
	size_t i, n = p->ntimeline;
	/* Already sorted is the common case (one ring, one thread). */
	for (i = 1; i < n; i++)
		if (p->timeline[i].time_ns < p->timeline[i - 1].time_ns)
			break;
	if (i >= n)
		return;
	struct timed_key *keys = malloc(n * sizeof(*keys));
	if (!keys)
		return;   /* stays in capture order: still usable, only less tidy */
	for (i = 0; i < n; i++)
		keys[i] = (struct timed_key){ p->timeline[i].time_ns, i, p->timeline[i] };
	qsort(keys, n, sizeof(*keys), cmp_timed);
	for (i = 0; i < n; i++)
		p->timeline[i] = keys[i].sample;
	free(keys);
}

uint64_t ember_profile_attributed_total(const struct ember_profile *p)
{
	uint64_t n = 0;
	for (size_t r = 0; r < p->nrows; r++)
		if (p->rows[r].flags & EMBER_ROW_ATTRIBUTED)
			n += p->rows[r].count;
	return n;
}

double ember_profile_interval_s(const struct ember_profile *p)
{
	if (p->meta.interval_ns)
		return (double)p->meta.interval_ns / 1e9;
	if (p->meta.freq_hz)
		return 1.0 / (double)p->meta.freq_hz;
	return 0.01;
}
