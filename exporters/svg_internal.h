/* The renderer of the SVG flame graphs (svg.c), for the graph kinds drawn
 * with it (svg.c's plain graph, svg_diff.c's differential one): layout
 * constants, the input of a graph (labels, entries and the visible tree)
 * and the render entry point with its per-mode style callbacks.  Below it
 * stand the labels (svg_labels.h) and the writer (svg_writer.h).  Private
 * to exporters/. */
#ifndef EMBER_SVG_INTERNAL_H
#define EMBER_SVG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "flame_tree.h"
#include "profile.h"
#include "svg_labels.h"
#include "svg_writer.h"

/* Layout, in pixels unless said otherwise. */
#define FONT_SIZE 12
#define GLYPH_W_RATIO 0.59           /* average glyph width over the font size, as flamegraph.pl */
#define CHAR_W (FONT_SIZE * GLYPH_W_RATIO)
#define FRAME_H 16                   /* a frame's row; its rectangle is FRAME_H - FRAME_PAD high */
#define FRAME_PAD 1
#define XPAD 10                      /* left and right margins */
#define YPAD_TOP (FONT_SIZE * 7)     /* title, subtitle, legend rows */
#define YPAD_BOTTOM (FONT_SIZE * 2 + 10)
#define TITLE_SIZE 17
#define TITLE_Y (FONT_SIZE * 2)      /* baseline of the title and the buttons */
#define SUBTITLE_Y (FONT_SIZE * 4)   /* baseline of a one-line subtitle, the middle of a two-line one */
#define LEGEND_Y (FONT_SIZE * 6)     /* baseline of the legend row */
#define SWATCH 10                    /* a legend swatch's height (and a kind swatch's width) */
#define SWATCH_TEXT_X 14             /* from a kind swatch's left edge to its text */
#define SEARCH_COLOUR "rgb(230,0,230)"

/* ---- a graph's input ---- */

/* What a graph is drawn from: labels, one flame-tree entry per row with
 * samples, and the visible tree. */
struct svg_input {
	struct svg_labels labels;
	struct fg_entry *entries;
	uint64_t *values;      /* nvalues per entry */
	size_t n;
	uint64_t total[2];     /* samples by value column */
	struct fg_tree tree;
	char *title, *subtitle;    /* the caller's, freed with the rest */
};

/* Width of the image in pixels: width_px, 1200 when 0, never too narrow
 * for the buttons. */
unsigned svg_width(unsigned width_px);
/* Labels, entries and the visible tree of p's rows (threads: a root per
 * thread).  With nvalues 2 a row's thread index is its value column (a
 * union of two runs, diff_union.h); widths come from column width_value,
 * and frames narrower than min_width_px (0: 0.1) on an image width px wide
 * are pruned.  0, or -1 on OOM; free in is either case. */
int svg_input_build(struct svg_input *in, const struct ember_profile *p, bool threads, uint32_t nvalues,
		    uint32_t width_value, unsigned width, double min_width_px);
void svg_input_free(struct svg_input *in);

/* ---- samples that ran on pool threads (svg_workers.c) ---- */

/* Per visible node, the samples of attributed rows (docs/pools.md) in the
 * worker's part of their stack, and the worker threads that ran them. */
#define SVG_WORKER_NAMES 3
struct svg_worker_node {
	uint64_t count;
	uint32_t thread[SVG_WORKER_NAMES];   /* the first threads, as thread indexes of p */
	uint32_t nthreads;                   /* how many threads in all */
};
struct svg_workers {
	struct svg_worker_node *node;        /* by node; NULL when p has no attributed row */
	const struct ember_profile *p;
};
/* For in's tree, drawn from p (threads: a root per thread).  0, or -1 on
 * OOM (wk is then empty). */
int svg_workers_build(struct svg_workers *wk, const struct svg_input *in, const struct ember_profile *p,
		      bool threads);
void svg_workers_free(struct svg_workers *wk);
/* The tooltip's line for node (its width in unit): "ran on worker thread
 * OMP (1235), under the stack that dispatched its work", or how much of
 * it did; nothing for a node no worker's sample reached. */
void svg_workers_tooltip(const struct svg_workers *wk, size_t node, uint64_t width, const char *unit,
			 struct svg_writer *w);

/* ---- rendering ---- */

struct svg_graph;

/* What differs between graph kinds: the fill of a node, the numbers of its
 * tooltip (after the name; the script cuts the name at the last " (" of
 * the tooltip's first line), and
 * an optional extra legend drawn right-aligned on the legend row.  A
 * differential graph supplies its own. */
struct svg_style {
	void (*colour)(const struct svg_graph *g, size_t node, char out[8]);
	void (*tooltip)(const struct svg_graph *g, size_t node, struct svg_writer *w);
	void (*legend)(const struct svg_graph *g, struct svg_writer *w);   /* NULL: none */
	const void *ctx;
};

struct svg_graph {
	const struct svg_labels *labels;
	const struct fg_tree *tree;
	const struct svg_style *style;
	const char *title, *subtitle;  /* raw text, escaped on output */
	const char *unit;              /* "samples" */
	unsigned width;
	bool icicle;
	const struct svg_workers *workers;   /* NULL: none (every sample ran on its own thread's stack) */
};

/* Render g to out (buffered, under one stdio lock).  0, or -1 with errno. */
int svg_write_graph(FILE *out, const struct svg_graph *g);

#endif
