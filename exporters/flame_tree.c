/* Merged call trees for flame graphs: see flame_tree.h.
 *
 * No hash table and no full trie: the entries are partitioned level by
 * level (an MSD radix sort on the label at each depth).  Each run of equal
 * labels is one node; its width is the sum of its entries, known before
 * anything below it is looked at, so a node too narrow to draw is dropped
 * without visiting its subtree.  Work and memory grow with the entries and
 * the visible nodes, not with the number of samples or hidden frames. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "flame_tree.h"
#include "profile_internal.h"

struct builder {
	const struct fg_input *in;
	struct fg_tree *t;
	uint64_t *a;           /* per entry: key << 32 | entry index */
	uint64_t *tmp;         /* radix scratch, nentries long */
	size_t cap;            /* capacity of t->nodes / values / self */
	uint32_t end_key;      /* key of entries whose path ends: after every label */
	unsigned key_bits;
};

static inline uint32_t key_at(const struct fg_input *in, const struct fg_entry *e, uint32_t pos,
			      uint32_t end_key)
{
	if (e->head != FG_NONE) {
		if (pos == 0)
			return e->head;
		pos--;
	}
	return pos < e->n ? in->map[e->ids[pos]] : end_key;
}

#define RADIX_BITS 11

/* Sort a[0..n) by key (the high 32 bits).  Equal keys may come in any
 * order: they are one node either way. */
static void sort_keys(struct builder *b, uint64_t *a, size_t n)
{
	if (n < 48) {
		for (size_t i = 1; i < n; i++) {
			uint64_t v = a[i];
			size_t j = i;
			for (; j > 0 && a[j - 1] > v; j--)
				a[j] = a[j - 1];
			a[j] = v;
		}
		return;
	}
	/* LSD radix on the key bits in use */
	uint64_t *src = a, *dst = b->tmp;
	for (unsigned shift = 32; shift < 32 + b->key_bits; shift += RADIX_BITS) {
		size_t count[1u << RADIX_BITS] = { 0 }, sum = 0;
		const unsigned mask = (1u << RADIX_BITS) - 1;

		for (size_t i = 0; i < n; i++)
			count[(src[i] >> shift) & mask]++;
		for (size_t d = 0; d <= mask; d++) {
			size_t c = count[d];
			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & mask]++] = src[i];
		uint64_t *swap = src;
		src = dst;
		dst = swap;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
}

static size_t new_node(struct builder *b, uint32_t label, uint32_t depth, uint64_t start,
		       const uint64_t *v)
{
	struct fg_tree *t = b->t;
	uint32_t nv = t->nvalues;

	if (t->nnodes == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		struct fg_node *nodes = realloc(t->nodes, cap * sizeof(*nodes));
		if (nodes)
			t->nodes = nodes;
		uint64_t *values = realloc(t->values, cap * nv * sizeof(*values));
		if (values)
			t->values = values;
		uint64_t *self = realloc(t->self, cap * nv * sizeof(*self));
		if (self)
			t->self = self;
		if (!nodes || !values || !self)
			return SIZE_MAX;
		b->cap = cap;
	}
	size_t id = t->nnodes++;
	t->nodes[id] = (struct fg_node){ .label = label, .depth = depth, .start = start,
					 .width = v[b->in->width_value] };
	memcpy(t->values + id * nv, v, nv * sizeof(*v));
	memset(t->self + id * nv, 0, nv * sizeof(*v));
	if (depth > t->max_depth)
		t->max_depth = depth;
	return id;
}

/* Entries a[lo..hi) all pass through node, at depth; make its children. */
static int visit(struct builder *b, size_t lo, size_t hi, size_t node, uint32_t depth)
{
	const struct fg_input *in = b->in;
	uint64_t *a = b->a;
	uint32_t nv = in->nvalues, first = 0;
	bool same = true;

	for (size_t i = lo; i < hi; i++) {
		uint32_t idx = (uint32_t)a[i];
		uint32_t k = key_at(in, &in->entries[idx], depth, b->end_key);
		a[i] = (uint64_t)k << 32 | idx;
		if (i == lo)
			first = k;
		else if (k != first)
			same = false;
	}
	if (!same)
		sort_keys(b, a + lo, hi - lo);

	uint64_t start = b->t->nodes[node].start;
	for (size_t i = lo; i < hi;) {
		uint32_t k = (uint32_t)(a[i] >> 32);
		uint64_t v[FG_MAX_VALUES] = { 0 };
		size_t j = i;

		for (; j < hi && (uint32_t)(a[j] >> 32) == k; j++) {
			const uint64_t *ev = in->values + (size_t)(uint32_t)a[j] * nv;
			for (uint32_t c = 0; c < nv; c++)
				v[c] += ev[c];
		}
		if (k == b->end_key) {
			uint64_t *self = b->t->self + node * nv;
			for (uint32_t c = 0; c < nv; c++)
				self[c] += v[c];
		} else {
			uint64_t w = v[in->width_value];
			if (w > 0 && (double)w >= in->min_width) {
				size_t child = new_node(b, k, depth + 1, start, v);
				if (child == SIZE_MAX || visit(b, i, j, child, depth + 1) < 0)
					return -1;
			}
			start += w;
		}
		i = j;
	}
	return 0;
}

void fg_tree_free(struct fg_tree *t)
{
	free(t->nodes);
	free(t->values);
	free(t->self);
	memset(t, 0, sizeof(*t));
}

int fg_tree_build(struct fg_tree *t, const struct fg_input *in)
{
	struct builder b = { .in = in, .t = t, .end_key = in->nlabels };
	uint64_t root[FG_MAX_VALUES] = { 0 };
	int ret = -1;

	memset(t, 0, sizeof(*t));
	t->nvalues = in->nvalues;
	if (in->nvalues < 1 || in->nvalues > FG_MAX_VALUES || in->width_value >= in->nvalues ||
	    in->nlabels == FG_NONE || in->nentries > UINT32_MAX)
		return -1;
	while (b.key_bits < 32 && (in->nlabels >> b.key_bits))
		b.key_bits++;

	for (size_t i = 0; i < in->nentries; i++)
		for (uint32_t c = 0; c < in->nvalues; c++)
			root[c] += in->values[i * in->nvalues + c];
	if (new_node(&b, FG_NONE, 0, 0, root) == SIZE_MAX)
		goto out;
	t->total = root[in->width_value];

	b.a = malloc((in->nentries + 1) * sizeof(*b.a));
	b.tmp = malloc((in->nentries + 1) * sizeof(*b.tmp));
	if (!b.a || !b.tmp)
		goto out;
	for (size_t i = 0; i < in->nentries; i++)
		b.a[i] = i;
	ret = visit(&b, 0, in->nentries, 0, 0);
out:
	free(b.a);
	free(b.tmp);
	if (ret < 0)
		fg_tree_free(t);
	return ret;
}
