/* The live table of `ember top` (report.h, ember_top_*): two snapshots of
 * a growing profile's row counts, and per table the functions' own and
 * total samples in the interval between them and since the start, counted
 * with the reports' keys (report_keys.c). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "profile_internal.h"

struct ember_top {
	struct ember_keys *keys;       /* by function, Python ones with their first line */
	uint32_t *frame_key;           /* frame id -> key, UINT32_MAX: none (synthetic) */
	size_t nframe_keys, frame_key_cap;
	uint64_t *now, *prev;          /* row counts at the last update and the one before */
	size_t nnow, nprev, now_cap, prev_cap;
	struct ember_top_row *rows;
	size_t rows_cap;
	enum ember_top_sort sort;      /* of the table being sorted */
};

struct ember_top *ember_top_new(void)
{
	struct ember_top *t = calloc(1, sizeof(*t));

	if (t && !(t->keys = ember_keys_new(EMBER_REPORT_BY_FUNCTION, EMBER_KEYS_EXACT_DEF_LINE))) {
		free(t);
		return NULL;
	}
	return t;
}

void ember_top_free(struct ember_top *t)
{
	if (!t)
		return;
	ember_keys_free(t->keys);
	free(t->frame_key);
	free(t->now);
	free(t->prev);
	free(t->rows);
	free(t);
}

int ember_top_update(struct ember_top *t, const struct ember_profile *p)
{
	uint64_t *swap = t->prev;
	size_t swap_cap = t->prev_cap;

	/* The old "now" becomes "prev"; the old "prev" array is reused. */
	t->prev = t->now;
	t->prev_cap = t->now_cap;
	t->nprev = t->nnow;
	t->now = swap;
	t->now_cap = swap_cap;
	t->nnow = 0;
	if (EMBER_GROW(t->now, t->now_cap, (size_t)p->nrows + 1) < 0)
		return -1;
	for (uint32_t r = 0; r < p->nrows; r++)
		t->now[r] = p->rows[r].count;
	t->nnow = p->nrows;
	return 0;
}

/* Keys of the frames added since the last table. 0, or -1 on OOM. */
static int key_frames(struct ember_top *t, const struct ember_profile *p)
{
	if (EMBER_GROW(t->frame_key, t->frame_key_cap, (size_t)p->nframes + 1) < 0)
		return -1;
	for (size_t i = t->nframe_keys; i < p->nframes; i++) {
		const struct ember_frame *f = &p->frames[i];
		t->frame_key[i] = UINT32_MAX;
		/* (a pool's wait mark is a row of its own: the time spent waiting) */
		if ((f->kind != EMBER_FRAME_SPECIAL || ember_mark_wait(f->name)) &&
		    (t->frame_key[i] = ember_key_of(t->keys, f)) == UINT32_MAX)
			return -1;
	}
	t->nframe_keys = p->nframes;
	return 0;
}

/* Is a frame of this kind out of view? */
static bool kind_skipped(enum ember_top_view view, enum ember_frame_kind kind)
{
	switch (view) {
	case EMBER_TOP_PYTHON:
		return kind != EMBER_FRAME_PYTHON;
	case EMBER_TOP_NATIVE:
		return kind == EMBER_FRAME_PYTHON;
	default:
		return kind == EMBER_FRAME_INTERP;
	}
}

/* Per stack, the samples of the interval and since the start on thread
 * (UINT32_MAX: all); their sums in out. */
static void stack_weights(const struct ember_top *t, const struct ember_profile *p, uint32_t thread,
			  uint64_t *w_now, uint64_t *w_all, struct ember_top_table *out)
{
	for (size_t r = 0; r < t->nnow; r++) {
		const struct ember_sample_row *row = &p->rows[r];
		uint64_t before = r < t->nprev ? t->prev[r] : 0;
		if (thread != UINT32_MAX && row->thread != thread)
			continue;
		w_now[row->stack] += t->now[r] - before;
		w_all[row->stack] += t->now[r];
		out->samples_now += t->now[r] - before;
		out->samples_all += t->now[r];
	}
}

static uint64_t sort_value(const struct ember_top_row *r, enum ember_top_sort s)
{
	switch (s) {
	case EMBER_TOP_BY_TOTAL: return r->total_now;
	case EMBER_TOP_BY_OWN_ALL: return r->own_all;
	case EMBER_TOP_BY_TOTAL_ALL: return r->total_all;
	default: return r->own_now;
	}
}

/* The other count of a sort: total for own, own for total. */
static enum ember_top_sort sort_other(enum ember_top_sort s)
{
	return (enum ember_top_sort)(s ^ 1);
}

/* The since-the-start count of an interval's sort (itself otherwise). */
static enum ember_top_sort sort_since_start(enum ember_top_sort s)
{
	return (enum ember_top_sort)(s | 2);
}

static int cmp_rows(const void *a, const void *b, void *ctx)
{
	const struct ember_top_row *x = a, *y = b;
	enum ember_top_sort s = *(const enum ember_top_sort *)ctx;
	uint64_t vx = sort_value(x, s), vy = sort_value(y, s);

	if (vx != vy)
		return vx > vy ? -1 : 1;
	vx = sort_value(x, sort_other(s));
	vy = sort_value(y, sort_other(s));
	if (vx != vy)
		return vx > vy ? -1 : 1;
	/* an interval's ties (an empty one: all) by the same since the start */
	vx = sort_value(x, sort_since_start(s));
	vy = sort_value(y, sort_since_start(s));
	if (vx != vy)
		return vx > vy ? -1 : 1;
	return strcmp(x->label, y->label);
}

/* The rows of every key with a sample since the start, sorted. */
static int make_rows(struct ember_top *t, enum ember_top_sort sort, uint32_t nkeys, const uint64_t *c,
		     struct ember_top_table *out)
{
	const uint64_t *own_now = c, *total_now = c + nkeys, *own_all = c + 2 * (size_t)nkeys,
		       *total_all = c + 3 * (size_t)nkeys;
	size_t n = 0;

	if (EMBER_GROW(t->rows, t->rows_cap, (size_t)nkeys + 1) < 0)
		return -1;
	for (uint32_t k = 0; k < nkeys; k++) {
		if (!total_all[k])
			continue;
		t->rows[n++] = (struct ember_top_row){ .label = ember_key_label(t->keys, k),
						       .own_now = own_now[k], .total_now = total_now[k],
						       .own_all = own_all[k], .total_all = total_all[k] };
	}
	t->sort = sort;
	qsort_r(t->rows, n, sizeof(*t->rows), cmp_rows, &t->sort);
	out->rows = t->rows;
	out->nrows = n;
	return 0;
}

int ember_top_table(struct ember_top *t, const struct ember_profile *p, enum ember_top_view view,
		    uint32_t thread, enum ember_top_sort sort, struct ember_top_table *out)
{
	uint64_t *w = NULL, *c = NULL;
	bool *skip = NULL;
	uint32_t nkeys;
	int ret = -1;

	memset(out, 0, sizeof(*out));
	if (key_frames(t, p) < 0)
		return -1;
	nkeys = ember_keys_count(t->keys);
	w = calloc(2 * ((size_t)p->nstacks + 1), sizeof(*w));
	c = calloc(4 * ((size_t)nkeys + 1), sizeof(*c));
	skip = calloc((size_t)p->nframes + 1, sizeof(*skip));
	if (!w || !c || !skip)
		goto out;
	for (uint32_t i = 0; i < p->nframes; i++)   /* (a wait mark is in every view) */
		skip[i] = kind_skipped(view, p->frames[i].kind) &&
			  !(p->frames[i].kind == EMBER_FRAME_SPECIAL && ember_mark_wait(p->frames[i].name));
	stack_weights(t, p, thread, w, w + p->nstacks + 1, out);
	/* c: own and total in the interval, then own and total since the start */
	if (report_count_weighted(p, t->frame_key, skip, w, nkeys, c, c + nkeys) < 0 ||
	    report_count_weighted(p, t->frame_key, skip, w + p->nstacks + 1, nkeys, c + 2 * (size_t)nkeys,
				  c + 3 * (size_t)nkeys) < 0)
		goto out;
	ret = make_rows(t, sort, nkeys, c, out);
out:
	free(w);
	free(c);
	free(skip);
	return ret;
}
