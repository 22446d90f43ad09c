/* Merged call trees for flame graphs (private to the exporters).
 *
 * The input is a list of entries, each a path of labels (root first) with a
 * vector of values; paths that agree on a prefix share the nodes of that
 * prefix, as flamegraph.pl merges sorted stacks.  One value (width_value)
 * sets the widths; the others ride along (a differential graph carries the
 * "before" and "after" counts and colours from their difference).
 *
 * Labels are small integers numbered in display order: siblings are laid out
 * left to right by increasing label, so numbering labels by sorted text gives
 * flamegraph.pl's alphabetical order.  The builder never looks at text.
 *
 * Only visible nodes are kept: a node narrower than min_width (in value
 * units) is dropped with its whole subtree, and nothing below it is ever
 * looked at, so the cost is the visible part of the tree, not the input.
 * A dropped node still counts in its parent's width and its siblings keep
 * their positions (the x axis stays exact). */
#ifndef EMBER_FLAME_TREE_H
#define EMBER_FLAME_TREE_H

#include <stddef.h>
#include <stdint.h>

#define FG_NONE UINT32_MAX   /* no head label; also the root node's label */

struct fg_entry {
	const uint32_t *ids;   /* path after head, mapped to labels by fg_input.map */
	uint32_t n;            /* length of ids */
	uint32_t head;         /* a label before ids (a thread root), or FG_NONE */
};

struct fg_input {
	const struct fg_entry *entries;
	size_t nentries;
	const uint64_t *values;  /* nentries * nvalues, entry-major */
	uint32_t nvalues;        /* 1..FG_MAX_VALUES */
	uint32_t width_value;    /* index of the value that sets widths */
	const uint32_t *map;     /* ids -> label; labels < nlabels */
	uint32_t nlabels;
	double min_width;        /* nodes narrower than this (value units) are dropped; 0-width always */
};

#define FG_MAX_VALUES 4

/* One visible node.  Nodes are stored in pre-order: a node's children follow
 * it, left to right; node 0 is the root (label FG_NONE, depth 0). */
struct fg_node {
	uint32_t label;
	uint32_t depth;
	uint64_t start;        /* left edge, in width units from the root's left edge */
	uint64_t width;        /* = values[width_value] */
};

struct fg_tree {
	struct fg_node *nodes;
	size_t nnodes;
	uint64_t *values;      /* nnodes * nvalues: inclusive (all entries through the node) */
	uint64_t *self;        /* nnodes * nvalues: entries that end at the node */
	uint32_t nvalues;
	uint32_t max_depth;    /* deepest visible node */
	uint64_t total;        /* root width */
};

/* Build the visible tree.  Returns 0, or -1 on OOM (t is then empty). */
int fg_tree_build(struct fg_tree *t, const struct fg_input *in);
void fg_tree_free(struct fg_tree *t);

#endif
