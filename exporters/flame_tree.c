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
#include "grow.h"

/* One entry as the partitioning moves it: everything a level needs, so
 * that reading the next label costs one load (prefetched) per entry. */
struct item {
	const uint32_t *ids;
	uint32_t n;            /* length of ids */
	uint32_t head;         /* label before ids, or FG_NONE */
	uint64_t width;        /* values[width_value] */
	uint32_t key;          /* label at the current level, or end_key */
	uint32_t idx;          /* entry index, for the other values */
};

struct builder {
	const struct fg_input *in;
	struct fg_tree *t;
	struct item *a;
	struct item *tmp;      /* radix scratch, nentries long */
	size_t *count;         /* radix buckets: 2^16 */
	size_t nodes_cap, values_cap, self_cap;   /* of t->nodes / values / self, in nodes */
	uint32_t end_key;      /* key of entries whose path ends: after every label */
};

static inline uint32_t key_at(const struct fg_input *in, const struct item *e, uint32_t pos, uint32_t end_key)
{
	if (e->head != FG_NONE) {
		if (pos == 0)
			return e->head;
		pos--;
	}
	return pos < e->n ? in->map[e->ids[pos]] : end_key;
}

/* Sort a[0..n) by key, all keys in [lo, hi].  Equal keys may come in any
 * order: they are one node either way.  LSD radix on key - lo, with digits
 * as wide as suits n (each pass costs 2^digit + 2n). */
static void sort_keys(struct builder *b, struct item *a, size_t n, uint32_t lo, uint32_t hi)
{
	if (n < 32) {
		for (size_t i = 1; i < n; i++) {
			struct item v = a[i];
			size_t j = i;
			for (; j > 0 && a[j - 1].key > v.key; j--)
				a[j] = a[j - 1];
			a[j] = v;
		}
		return;
	}
	unsigned bits = 1, passes, digit;
	while (bits < 32 && ((hi - lo) >> bits))
		bits++;
	passes = (bits + 15) / 16;     /* digits of at most 16 bits */
	for (unsigned p = passes + 1; p <= 4; p++) {
		unsigned dp = (bits + p - 1) / p, d1 = (bits + passes - 1) / passes;
		if (p * ((1u << dp) + 2 * n) < passes * ((1u << d1) + 2 * n))
			passes = p;
	}
	digit = (bits + passes - 1) / passes;

	size_t *count = b->count;
	const uint32_t mask = (1u << digit) - 1;
	struct item *src = a, *dst = b->tmp;
	for (unsigned shift = 0; shift < bits; shift += digit) {
		size_t sum = 0;
		memset(count, 0, ((size_t)mask + 1) * sizeof(*count));
		for (size_t i = 0; i < n; i++)
			count[((src[i].key - lo) >> shift) & mask]++;
		for (size_t d = 0; d <= mask; d++) {
			size_t c = count[d];
			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[((src[i].key - lo) >> shift) & mask]++] = src[i];
		struct item *swap = src;
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

	/* values and self hold nv numbers a node */
	if (EMBER_GROW(t->nodes, b->nodes_cap, t->nnodes + 1) < 0 ||
	    ember_grow((void **)&t->values, &b->values_cap, nv * sizeof(*v), t->nnodes + 1) < 0 ||
	    ember_grow((void **)&t->self, &b->self_cap, nv * sizeof(*v), t->nnodes + 1) < 0)
		return SIZE_MAX;
	size_t id = t->nnodes++;
	t->nodes[id] = (struct fg_node){ .label = label, .depth = depth, .start = start,
					 .width = v[b->in->width_value] };
	memcpy(t->values + id * nv, v, nv * sizeof(*v));
	memset(t->self + id * nv, 0, nv * sizeof(*v));
	if (depth > t->max_depth)
		t->max_depth = depth;
	return id;
}

/* The values of a[i..j) added up; the width alone needs no other memory. */
static void sum_values(const struct builder *b, const struct item *a, size_t i, size_t j, uint64_t *v)
{
	const struct fg_input *in = b->in;
	uint32_t nv = in->nvalues;

	if (nv == 1) {
		for (; i < j; i++)
			v[0] += a[i].width;
		return;
	}
	for (; i < j; i++) {
		const uint64_t *ev = in->values + (size_t)a[i].idx * nv;
		for (uint32_t c = 0; c < nv; c++)
			v[c] += ev[c];
	}
}

#define PREFETCH_AHEAD 8

/* A node whose children are being made: entries a[lo..hi) pass through it,
 * a[i..hi) are still to be grouped, and the next child starts at start.
 * The open nodes of the walk are a stack of these, root first, so that the
 * depth of a path costs heap, never C stack. */
struct level {
	size_t lo, hi, i;
	size_t node;
	uint64_t start;
	uint32_t depth;
};

/* Key every entry of a[lo..hi) by its label at depth and sort them, so that
 * each run of equal keys is one child (or, end_key, the node's self). */
static void key_and_sort(struct builder *b, size_t lo, size_t hi, uint32_t depth)
{
	const struct fg_input *in = b->in;
	struct item *a = b->a;
	uint32_t kmin = UINT32_MAX, kmax = 0;

	for (size_t i = lo; i < hi; i++) {
		if (i + PREFETCH_AHEAD < hi) {
			const struct item *ahead = &a[i + PREFETCH_AHEAD];
			__builtin_prefetch(ahead->ids + (depth < ahead->n ? depth : 0));
		}
		uint32_t k = key_at(in, &a[i], depth, b->end_key);
		a[i].key = k;
		kmin = k < kmin ? k : kmin;
		kmax = k > kmax ? k : kmax;
	}
	if (kmin != kmax)
		sort_keys(b, a + lo, hi - lo, kmin, kmax);
}

/* Open node (entries a[lo..hi) at depth) on the stack of levels. */
static int open_level(struct builder *b, struct level **st, size_t *cap, size_t *n,
		      size_t lo, size_t hi, size_t node, uint32_t depth)
{
	if (EMBER_GROW(*st, *cap, *n + 1) < 0)
		return -1;
	key_and_sort(b, lo, hi, depth);
	(*st)[(*n)++] = (struct level){ .lo = lo, .hi = hi, .i = lo, .node = node,
					.start = b->t->nodes[node].start, .depth = depth };
	return 0;
}

/* Make the children of the root, and theirs, in pre-order: a child's whole
 * subtree is made before its next sibling, as flamegraph.pl lays them out. */
static int walk(struct builder *b)
{
	const struct fg_input *in = b->in;
	const struct item *a = b->a;
	uint32_t nv = in->nvalues;
	struct level *st = NULL;
	size_t cap = 0, n = 0;
	int ret = -1;

	if (open_level(b, &st, &cap, &n, 0, in->nentries, 0, 0) < 0)
		goto out;
	while (n) {
		struct level *parent = &st[n - 1];
		if (parent->i >= parent->hi) {
			n--;
			continue;
		}
		size_t i = parent->i, j = i + 1;
		uint32_t k = a[i].key;
		uint64_t v[FG_MAX_VALUES] = { 0 };

		while (j < parent->hi && a[j].key == k)
			j++;
		sum_values(b, a, i, j, v);
		parent->i = j;
		if (k == b->end_key) {
			uint64_t *self = b->t->self + parent->node * nv;
			for (uint32_t c = 0; c < nv; c++)
				self[c] += v[c];
			continue;
		}
		uint64_t w = v[in->width_value], start = parent->start;
		uint32_t depth = parent->depth + 1;
		parent->start += w;
		if (w == 0 || (double)w < in->min_width)
			continue;
		size_t child = new_node(b, k, depth, start, v);
		if (child == SIZE_MAX || open_level(b, &st, &cap, &n, i, j, child, depth) < 0)
			goto out;
	}
	ret = 0;
out:
	free(st);
	return ret;
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

	for (size_t i = 0; i < in->nentries; i++)
		for (uint32_t c = 0; c < in->nvalues; c++)
			root[c] += in->values[i * in->nvalues + c];
	if (new_node(&b, FG_NONE, 0, 0, root) == SIZE_MAX)
		goto out;
	t->total = root[in->width_value];

	b.a = malloc((in->nentries + 1) * sizeof(*b.a));
	b.tmp = malloc((in->nentries + 1) * sizeof(*b.tmp));
	b.count = malloc(sizeof(*b.count) << 16);
	if (!b.a || !b.tmp || !b.count)
		goto out;
	for (size_t i = 0; i < in->nentries; i++) {
		const struct fg_entry *e = &in->entries[i];
		b.a[i] = (struct item){ .ids = e->ids, .n = e->n, .head = e->head,
					.width = in->values[i * in->nvalues + in->width_value], .idx = (uint32_t)i };
	}
	ret = walk(&b);
out:
	free(b.a);
	free(b.tmp);
	free(b.count);
	if (ret < 0)
		fg_tree_free(t);
	return ret;
}
