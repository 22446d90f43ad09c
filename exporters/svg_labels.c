/* The labels of SVG flame graphs (svg_labels.h): every distinct frame
 * text as folded output prints it, in bytewise order, with its escaped XML,
 * display width and colour; and the XML text escaping the renderer shares. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded_text.h"
#include "grow.h"
#include "hash.h"
#include "strtab.h"
#include "svg_labels.h"
#include "svg_writer.h"
#include "utf8.h"

/* Display width of a character, in average glyphs: CJK and emoji are wide. */
static unsigned cp_units(uint32_t cp)
{
	return cp >= 0x2e80 ? 2 : 1;
}

size_t svg_xml(struct svg_writer *w, const char *s, size_t n, size_t max_units)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, units = 0;

	while (i < n) {
		uint32_t cp;
		size_t len = ember_utf8_next(u + i, n - i, &cp);
		if (units + cp_units(cp) > max_units)
			break;
		units += cp_units(cp);
		switch (cp) {
		case '&': W_LIT(w, "&amp;"); break;
		case '<': W_LIT(w, "&lt;"); break;
		case '>': W_LIT(w, "&gt;"); break;
		case '"': W_LIT(w, "&quot;"); break;
		case '\'': W_LIT(w, "&#39;"); break;
		case 0xfffd: case 0xfffe: case 0xffff: W_LIT(w, "\xef\xbf\xbd"); break;
		default:
			if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == 0x2028 || cp == 0x2029)
				W_LIT(w, " ");
			else
				w_put(w, u + i, len);
		}
		i += len;
	}
	return units;
}

size_t svg_text_units(const char *s, size_t n)
{
	size_t i = 0, units = 0;

	while (i < n) {
		uint32_t cp;
		i += ember_utf8_next((const unsigned char *)s + i, n - i, &cp);
		units += cp_units(cp);
	}
	return units;
}

/* ---- labels ---- */

struct label_src {
	const char *text;
	uint32_t len, src;
	enum ember_frame_kind kind;
	bool scanned;
};

static int cmp_label_src(const void *x, const void *y)
{
	const struct label_src *a = x, *b = y;

	if (a->text != b->text) {
		int c = memcmp(a->text, b->text, a->len < b->len ? a->len : b->len);
		if (c || a->len != b->len)
			return c ? c : a->len < b->len ? -1 : 1;
	}
	if (a->scanned != b->scanned)
		return a->scanned ? 1 : -1;
	return a->src < b->src ? -1 : a->src > b->src;
}

/* The folded text of f, interned; buf grows for long (C++) names. */
static const char *frame_text(struct ember_strtab *st, const struct ember_frame *f, char **buf,
			      size_t *cap, uint32_t *len)
{
	size_t n;

	for (;;) {
		n = ember_folded_frame_text(f, *buf, *cap);
		if (n + 1 < *cap || *cap >= (1u << 20))
			break;
		if (ember_grow((void **)buf, cap, 1, *cap * 4) < 0)
			return NULL;
	}
	*len = (uint32_t)n;
	return ember_strtab_intern(st, *buf, n);
}

void svg_colour(const struct svg_channel c[3], double v1, double v2, double v3, char out[8])
{
	const double v[3] = { v1, v2, v3 };
	int rgb[3];

	for (int i = 0; i < 3; i++)
		rgb[i] = (int)(c[i].base + c[i].span * v[c[i].var]);
	snprintf(out, 8, "#%02x%02x%02x", rgb[0] & 0xff, rgb[1] & 0xff, rgb[2] & 0xff);
}

/* Each kind's hue: red, green and blue, each varied by one of v1..v3
 * (native: reds, Python: greens, kernel: blues, the interpreter's:
 * yellows, synthetic frames: greys). */
static const struct svg_channel kind_channels[EMBER_FRAME_KIND_COUNT][3] = {
	[EMBER_FRAME_NATIVE] = { { 205, 50, 2 }, { 70, 90, 0 }, { 30, 40, 1 } },
	[EMBER_FRAME_PYTHON] = { { 70, 70, 0 }, { 180, 60, 1 }, { 70, 50, 2 } },
	[EMBER_FRAME_KERNEL] = { { 70, 60, 0 }, { 140, 60, 0 }, { 210, 45, 1 } },
	[EMBER_FRAME_INTERP] = { { 190, 50, 0 }, { 180, 45, 0 }, { 70, 40, 1 } },
	[EMBER_FRAME_SPECIAL] = { { 180, 40, 0 }, { 180, 40, 0 }, { 190, 40, 0 } },
};

void svg_kind_colour(enum ember_frame_kind kind, double v1, double v2, double v3, char out[8])
{
	/* a kind this build does not know is drawn as native code */
	svg_colour(kind_channels[(unsigned)kind < EMBER_FRAME_KIND_COUNT ? kind : EMBER_FRAME_NATIVE], v1, v2, v3,
		   out);
}

static void label_colour(struct svg_label *l)
{
	uint64_t h = ember_hash_bytes(l->text, l->len, 0x5eed);

	svg_kind_colour(l->kind, (h & 0xff) / 256.0, (h >> 8 & 0xff) / 256.0, (h >> 16 & 0xff) / 256.0, l->colour);
}

/* Escaped text of every label, one buffer. */
static int escape_labels(struct svg_labels *labels)
{
	size_t size = 0;
	FILE *mem = open_memstream(&labels->esc, &size);
	struct svg_writer *w = malloc(sizeof(*w));
	bool err = !mem || !w;

	if (!err) {
		*w = (struct svg_writer){ .f = mem };
		for (uint32_t i = 0; i < labels->n; i++) {
			struct svg_label *l = &labels->label[i];
			l->esc_off = w->written;
			svg_xml(w, l->text, l->len, SIZE_MAX);
			l->esc_len = (uint32_t)(w->written - l->esc_off);
		}
		w_flush(w);
		err = w->err;
	}
	free(w);
	if (mem && fclose(mem) != 0)
		err = true;
	return err ? -1 : 0;
}

void svg_labels_free(struct svg_labels *labels)
{
	free(labels->label);
	free(labels->esc);
	free(labels->map);
	free(labels->thread);
	ember_strtab_free(labels->strings);
	memset(labels, 0, sizeof(*labels));
}

int svg_labels_build(struct svg_labels *labels, const struct ember_profile *p, bool threads)
{
	uint32_t nf = ember_profile_nframes(p), nt = threads ? ember_profile_nthreads(p) : 0;
	size_t nsrc = (size_t)nf + 1 + nt, cap = 4096;
	struct label_src *src = malloc(nsrc * sizeof(*src));
	char *buf = malloc(cap);
	int ret = -1;

	memset(labels, 0, sizeof(*labels));
	labels->unknown = nf;
	labels->strings = ember_strtab_new();
	labels->map = malloc(((size_t)nf + 1) * sizeof(*labels->map));
	labels->thread = malloc(((size_t)nt + 1) * sizeof(*labels->thread));
	labels->label = malloc(nsrc * sizeof(*labels->label));
	if (!src || !buf || !labels->strings || !labels->map || !labels->thread || !labels->label)
		goto out;
	for (uint32_t i = 0; i < nf; i++) {
		const struct ember_frame *f = ember_profile_frame_at(p, i);
		src[i] = (struct label_src){ .src = i, .kind = f->kind, .scanned = f->flags & EMBER_FRAME_CALLER_SCANNED };
		if (!(src[i].text = frame_text(labels->strings, f, &buf, &cap, &src[i].len)))
			goto out;
	}
	src[nf] = (struct label_src){ .text = ember_strtab_intern(labels->strings, "[unknown]", 9), .len = 9,
				      .src = nf, .kind = EMBER_FRAME_SPECIAL };
	for (uint32_t t = 0; t < nt; t++) {
		const struct ember_thread *th = ember_profile_thread_at(p, t);
		const char *name = th->name && *th->name ? th->name : "thread";
		char *raw = NULL;
		struct ember_frame f = { .kind = EMBER_FRAME_SPECIAL, .file = "", .module = "" };
		if (asprintf(&raw, "%s (%" PRIu32 ")", name, th->tid) < 0)
			goto out;
		f.name = raw;
		src[nf + 1 + t] = (struct label_src){ .src = nf + 1 + t, .kind = EMBER_FRAME_SPECIAL };
		src[nf + 1 + t].text = frame_text(labels->strings, &f, &buf, &cap, &src[nf + 1 + t].len);
		free(raw);
		if (!src[nf + 1 + t].text)
			goto out;
	}
	if (!src[nf].text)
		goto out;
	qsort(src, nsrc, sizeof(*src), cmp_label_src);
	for (size_t i = 0; i < nsrc; i++) {
		if (!i || src[i].text != src[i - 1].text || src[i].scanned != src[i - 1].scanned) {
			struct svg_label *l = &labels->label[labels->n++];
			*l = (struct svg_label){ .text = src[i].text, .len = src[i].len, .kind = src[i].kind,
						 .caller_scanned = src[i].scanned };
			l->units = (uint32_t)svg_text_units(l->text, l->len);
			label_colour(l);
		}
		if (src[i].src <= nf)
			labels->map[src[i].src] = labels->n - 1;
		else
			labels->thread[src[i].src - nf - 1] = labels->n - 1;
	}
	ret = escape_labels(labels);
out:
	free(src);
	free(buf);
	if (ret < 0)
		svg_labels_free(labels);
	return ret;
}
