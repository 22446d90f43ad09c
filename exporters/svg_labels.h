/* The labels of the SVG flame graphs (svg_labels.c), for the renderer
 * (svg.c) and the graphs built on it: every distinct frame text in bytewise
 * order with its escaped XML, display width and colour, and the XML text
 * escaping and kind colours the renderer draws with.  Private to
 * exporters/. */
#ifndef EMBER_SVG_LABELS_H
#define EMBER_SVG_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "svg_writer.h"

/* ---- XML text and colours ---- */

/* s[0..n) as XML character data: markup characters escaped, invalid UTF-8
 * and U+FFFE/U+FFFF as U+FFFD, controls (which XML 1.0 forbids or which
 * break lines) as spaces.  Writes whole characters while their display width
 * (CJK and emoji count 2) stays within max_units; returns the width written. */
size_t svg_xml(struct svg_writer *w, const char *s, size_t n, size_t max_units);
/* The display width of s[0..n), in average glyphs. */
size_t svg_text_units(const char *s, size_t n);
/* Colours are "#rrggbb", in char[SVG_COLOUR_LEN + 1] with the NUL. */
#define SVG_COLOUR_LEN 7

/* A colour channel: base + span x the variation var (0..2: v1..v3) picks. */
struct svg_channel {
	uint8_t base, span, var;
};
/* The colour of channels c (red, green, blue) as "#rrggbb", under the
 * variations v1..v3 in [0,1). */
void svg_colour(const struct svg_channel c[3], double v1, double v2, double v3, char out[8]);
/* The colour of a frame kind; v1..v3 vary the shade (per name, stably). */
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
	struct svg_label *label;   /* n of them, in bytewise order of their text */
	uint32_t n;
	char *esc;
	uint32_t *map;         /* frame id -> label; [nframes]: the [unknown] label */
	uint32_t unknown;      /* nframes: the frame id an empty stack is drawn as */
	uint32_t *thread;      /* thread index -> root label (threads only) */
	struct ember_strtab *strings;
};

/* Labels for every frame of p, [unknown] (empty stacks) and, with threads,
 * one "name (tid)" root per thread.  0, or -1 on OOM (labels is then empty). */
int svg_labels_build(struct svg_labels *labels, const struct ember_profile *p, bool threads);
void svg_labels_free(struct svg_labels *labels);

#endif
