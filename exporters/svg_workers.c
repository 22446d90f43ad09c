/* Which pool threads ran the samples of each frame of a flame graph
 * (svg_internal.h): the rows of samples attributed to a dispatcher
 * (EMBER_ROW_ATTRIBUTED, docs/pools.md) walked down the visible tree from
 * the frame where their worker's own frames begin. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "svg_internal.h"

/* The child of node x labelled label, or SIZE_MAX. */
static size_t child(const struct fg_tree *t, const size_t *next, size_t x, uint32_t label)
{
	for (size_t c = x + 1; c < t->nnodes && t->nodes[c].depth == t->nodes[x].depth + 1; c = next[c])
		if (t->nodes[c].label == label)
			return c;
	return SIZE_MAX;
}

/* next[i]: node i's next sibling (the first node past its subtree). */
static size_t *siblings(const struct fg_tree *t)
{
	size_t *next = malloc((t->nnodes ? t->nnodes : 1) * sizeof *next), *open = malloc((t->max_depth + 2) * sizeof *open);
	if (!next || !open) {
		free(next);
		free(open);
		return NULL;
	}
	/* (pre-order: a node's subtree ends at the next node no deeper than it) */
	size_t nopen = 0;
	for (size_t i = 0; i < t->nnodes; i++) {
		while (nopen && t->nodes[open[nopen - 1]].depth >= t->nodes[i].depth)
			next[open[--nopen]] = i;
		open[nopen++] = i;
	}
	while (nopen)
		next[open[--nopen]] = t->nnodes;
	free(open);
	return next;
}

static void add_thread(struct svg_workers *wk, size_t node, uint32_t thread, uint64_t count)
{
	struct svg_worker_node *n = &wk->node[node];
	n->count += count;
	for (uint32_t i = 0; i < n->nthreads && i < SVG_WORKER_NAMES; i++)
		if (n->thread[i] == thread)
			return;
	if (n->nthreads < SVG_WORKER_NAMES)
		n->thread[n->nthreads] = thread;
	n->nthreads++;
}

int svg_workers_build(struct svg_workers *wk, const struct svg_input *in, const struct ember_profile *p,
		      bool threads)
{
	const struct fg_tree *t = &in->tree;
	memset(wk, 0, sizeof *wk);
	uint32_t nrows = ember_profile_nrows(p);
	bool any = false;
	for (uint32_t r = 0; r < nrows && !any; r++)
		any = ember_profile_row_at(p, r)->depth && ember_profile_row_at(p, r)->count;
	if (!any || !t->nnodes)
		return 0;
	size_t *next = siblings(t);
	wk->node = calloc(t->nnodes, sizeof *wk->node);
	if (!next || !wk->node) {
		free(next);
		svg_workers_free(wk);
		return -1;
	}
	for (uint32_t r = 0; r < nrows; r++) {
		const struct ember_sample_row *row = ember_profile_row_at(p, r);
		if (!row->depth || !row->count)
			continue;
		uint32_t n;
		const uint32_t *ids = ember_profile_stack_frames(p, row->stack, &n);
		size_t x = 0;
		if (threads && (x = child(t, next, 0, in->labels.thread[row->thread])) == SIZE_MAX)
			continue;
		for (uint32_t k = 0; k < n; k++) {
			if ((x = child(t, next, x, in->labels.map[ids[k]])) == SIZE_MAX)
				break;   /* too narrow to draw, and all below it */
			if (k >= row->depth)
				add_thread(wk, x, row->thread, row->count);
		}
	}
	free(next);
	wk->p = p;
	return 0;
}

void svg_workers_free(struct svg_workers *wk)
{
	free(wk->node);
	memset(wk, 0, sizeof *wk);
}

void svg_workers_tooltip(const struct svg_workers *wk, size_t node, uint64_t width, const char *unit,
			 struct svg_writer *w)
{
	const struct svg_worker_node *n = wk && wk->node ? &wk->node[node] : NULL;
	if (!n || !n->count)
		return;
	W_LIT(w, "\n");
	if (n->count < width) {
		w_commas(w, n->count);
		W_LIT(w, " ");
		w_puts(w, unit);
		W_LIT(w, " of it ");
	}
	W_LIT(w, "ran on worker thread");
	if (n->nthreads > 1)
		W_LIT(w, "s");
	for (uint32_t i = 0; i < n->nthreads && i < SVG_WORKER_NAMES; i++) {
		const struct ember_thread *th = ember_profile_thread_at(wk->p, n->thread[i]);
		const char *name = th->name && *th->name ? th->name : "thread";
		w_puts(w, i ? ", " : " ");
		svg_xml(w, name, strlen(name), SIZE_MAX);
		W_LIT(w, " (");
		w_u64(w, th->tid);
		W_LIT(w, ")");
	}
	if (n->nthreads > SVG_WORKER_NAMES) {
		W_LIT(w, " and ");
		w_u64(w, n->nthreads - SVG_WORKER_NAMES);
		W_LIT(w, " more");
	}
	W_LIT(w, ", under the stack that dispatched its work");
}
