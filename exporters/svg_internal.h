/* What the SVG flame-graph writers share (svg_labels.c: the labels; svg.c:
 * the renderer and the plain graph; svg_diff.c: the differential graph):
 * layout constants, the buffered writer, the label table, the input of a
 * graph and the render entry point with its per-mode style callbacks.
 * Private to exporters/. */
#ifndef EMBER_SVG_INTERNAL_H
#define EMBER_SVG_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "flame_tree.h"
#include "profile.h"

#define FONT_SIZE 12
#define CHAR_W (FONT_SIZE * 0.59)   /* average glyph width, as flamegraph.pl */
#define FRAME_H 16
#define FRAME_PAD 1
#define XPAD 10
#define YPAD_TOP (FONT_SIZE * 7)     /* title, subtitle, legend rows */
#define YPAD_BOTTOM (FONT_SIZE * 2 + 10)
#define TITLE_SIZE 17
#define SEARCH_COLOUR "rgb(230,0,230)"

/* ---- buffered output ---- */

struct w {
	FILE *f;
	size_t n;
	size_t written;        /* bytes put so far */
	bool err;
	char buf[1 << 16];
};

static inline void w_flush(struct w *w)
{
	if (w->n && fwrite_unlocked(w->buf, 1, w->n, w->f) != w->n)
		w->err = true;
	w->n = 0;
}

static inline void w_put(struct w *w, const void *s, size_t n)
{
	w->written += n;
	if (n > sizeof(w->buf) - w->n) {
		w_flush(w);
		if (n > sizeof(w->buf)) {
			if (fwrite_unlocked(s, 1, n, w->f) != n)
				w->err = true;
			return;
		}
	}
	memcpy(w->buf + w->n, s, n);
	w->n += n;
}

#define w_puts(w, s) w_put((w), (s), strlen(s))
#define W_LIT(w, lit) w_put((w), lit, sizeof(lit) - 1)

static inline void w_u64(struct w *w, uint64_t v)
{
	char t[24];
	int i = sizeof(t);

	do
		t[--i] = (char)('0' + v % 10);
	while (v /= 10);
	w_put(w, t + i, sizeof(t) - (size_t)i);
}

/* 1234567 -> "1,234,567" (flamegraph.pl's tooltip counts), at the end of
 * buf[32]; returns its start. */
static inline char *commas(char *buf, uint64_t v)
{
	char *p = buf + 31;
	int digits = 0;

	*p = '\0';
	do {
		if (digits++ && digits % 3 == 1)
			*--p = ',';
		*--p = (char)('0' + v % 10);
	} while (v /= 10);
	return p;
}

static inline void w_commas(struct w *w, uint64_t v)
{
	char buf[32];
	w_puts(w, commas(buf, v));
}

/* v >= 0 with 1 or 2 decimals */
static inline void w_fixed(struct w *w, double v, unsigned decimals)
{
	uint64_t scale = decimals == 2 ? 100 : 10;
	uint64_t x = (uint64_t)((v > 0 ? v : 0) * (double)scale + 0.5);
	char frac[3] = { '.', (char)('0' + x % scale / (scale / 10)), (char)('0' + x % 10) };

	w_u64(w, x / scale);
	w_put(w, frac, decimals + 1);
}

/* name="v" with one decimal (name includes the leading space and ="). */
static inline void w_attr_num(struct w *w, const char *name, double v)
{
	w_puts(w, name);
	w_fixed(w, v, 1);
	W_LIT(w, "\"");
}

/* s[0..n) as XML character data: markup characters escaped, invalid UTF-8
 * and U+FFFE/U+FFFF as U+FFFD, controls (which XML 1.0 forbids or which
 * break lines) as spaces.  Writes whole characters while their display width
 * (CJK and emoji count 2) stays within max_units; returns the width written. */
size_t svg_xml(struct w *w, const char *s, size_t n, size_t max_units);
/* The display width of s[0..n), in average glyphs. */
size_t svg_text_units(const char *s, size_t n);
/* The colour of a frame kind as "#rrggbb"; v1..v3 in [0,1) vary the shade. */
void svg_kind_colour(enum ember_frame_kind kind, double v1, double v2, double v3, char out[8]);

/* ---- labels: every distinct frame text, in bytewise order ---- */

struct svg_label {
	const char *text;      /* frame text as folded prints it (interned) */
	uint32_t len, units;
	size_t esc_off;        /* escaped text in svg_labels.esc */
	uint32_t esc_len;
	enum ember_frame_kind kind;
	bool caller_scanned;   /* frames with EMBER_FRAME_CALLER_SCANNED: a label of their own */
	char colour[8];        /* "#rrggbb" */
};

struct svg_labels {
	struct svg_label *l;
	uint32_t n;
	char *esc;
	uint32_t *map;         /* frame id -> label; [nframes]: the [unknown] label */
	uint32_t unknown;      /* nframes: the frame id an empty stack is drawn as */
	uint32_t *thread;      /* thread index -> root label (threads only) */
	struct ember_strtab *strings;
};

/* Labels for every frame of p, [unknown] (empty stacks) and, with threads,
 * one "name (tid)" root per thread.  0, or -1 on OOM (L is then empty). */
int svg_labels_build(struct svg_labels *L, const struct ember_profile *p, bool threads);
void svg_labels_free(struct svg_labels *L);

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

/* ---- rendering ---- */

struct svg_graph;

/* What differs between graph kinds: the fill of a node, the numbers of its
 * tooltip (after the name; the script cuts the name at the last " ("), and
 * an optional extra legend drawn right-aligned on the legend row.  A
 * differential graph supplies its own. */
struct svg_style {
	void (*colour)(const struct svg_graph *g, size_t node, char out[8]);
	void (*tooltip)(const struct svg_graph *g, size_t node, struct w *w);
	void (*legend)(const struct svg_graph *g, struct w *w);   /* NULL: none */
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
};

/* Render g to out (buffered, under one stdio lock).  0, or -1 with errno. */
int svg_write_graph(FILE *out, const struct svg_graph *g);

#endif
