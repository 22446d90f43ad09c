/* The buffered text writer of the SVG flame graphs: the label escaping
 * (svg_labels.c), the renderer (svg.c) and the differential graph's style
 * (svg_diff.c) all write through it.  Whole in this header, inline: it is
 * on the path of every byte of a graph.  Private to exporters/. */
#ifndef EMBER_SVG_WRITER_H
#define EMBER_SVG_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "profile.h"

struct svg_writer {
	FILE *f;
	size_t n;
	size_t written;        /* bytes put so far */
	bool err;
	char buf[1 << 16];
};

static inline void w_flush(struct svg_writer *w)
{
	if (w->n && fwrite_unlocked(w->buf, 1, w->n, w->f) != w->n)
		w->err = true;
	w->n = 0;
}

static inline void w_put(struct svg_writer *w, const void *s, size_t n)
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

static inline void w_u64(struct svg_writer *w, uint64_t v)
{
	char t[24];
	int i = sizeof(t);

	do
		t[--i] = (char)('0' + v % 10);
	while (v /= 10);
	w_put(w, t + i, sizeof(t) - (size_t)i);
}

/* 1234567 -> "1,234,567" (flamegraph.pl's tooltip counts). */
static inline void w_commas(struct svg_writer *w, uint64_t v)
{
	char buf[EMBER_COUNT_TEXT_MAX];
	w_puts(w, ember_count_commas(buf, v));
}

/* v >= 0 with 1 or 2 decimals */
static inline void w_fixed(struct svg_writer *w, double v, unsigned decimals)
{
	uint64_t scale = decimals == 2 ? 100 : 10;
	uint64_t x = (uint64_t)((v > 0 ? v : 0) * (double)scale + 0.5);
	char frac[3] = { '.', (char)('0' + x % scale / (scale / 10)), (char)('0' + x % 10) };

	w_u64(w, x / scale);
	w_put(w, frac, decimals + 1);
}

/* name="v" with one decimal (name includes the leading space and ="). */
static inline void w_attr_num(struct svg_writer *w, const char *name, double v)
{
	w_puts(w, name);
	w_fixed(w, v, 1);
	W_LIT(w, "\"");
}

#endif
