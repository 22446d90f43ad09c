/* Interactive SVG flame graphs: one standalone file (no network), the layout
 * of flamegraph.pl (docs/consumers.md §2), colours by frame kind, and our own
 * script (svg_script.h) for zoom, search and tooltips.
 *
 * Three stages, all shared with the differential graph:
 *   1. labels (svg_labels.c): every distinct frame text (as folded output
 *      prints it), in bytewise order, with its escaped XML and colour;
 *   2. the visible tree (flame_tree.c), from one entry per row with a value
 *      vector (svg_input_build, here);
 *   3. rendering (here), with the fill colour and the tooltip numbers of a
 *      node supplied by a style (callbacks), the only mode-specific part.
 * svg_diff.c draws the differential graph of `ember diff` with all three
 * (svg_internal.h) and its own style; every stage writes through
 * svg_writer.h.
 *
 * Every frame is written as
 *   <g class="kK" s="START" n="WIDTH"><title>NAME (N samples, P%)</title>
 *   <rect .../><text ...>LABEL</text></g>
 * under <g id="frames">, root first, in pre-order; s and n are exact sample
 * positions (the script zooms and measures search matches with them).  The
 * rows above and below the frames (title, legends, buttons; hover details,
 * search share) follow them, in <g id="header"> and <g id="footer">. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exporters.h"
#include "flame_tree.h"
#include "svg_internal.h"
#include "svg_labels.h"
#include "svg_writer.h"
#include "svg_script.h"

/* ---- rendering ---- */

#define ROOT_COLOUR "#c8c8d2"        /* the "all" frame */
#define ROOT_NAME "all"
#define CORNER_RX "2"                /* rounded corners of frames and swatches */
#define LABEL_X 3                    /* a frame label's left edge, from the frame's */
#define LABEL_BASELINE 10.5          /* ... and its baseline, from the frame's top */
#define LABEL_MIN_GLYPHS 3           /* a narrower frame has no label */
#define LABEL_CUT ".."               /* the end of a cut label, as flamegraph.pl */
#define LEGEND_GAP 18                /* between one kind's legend text and the next swatch */
#define TITLE_BUTTON_W 90            /* room the title leaves for a button on either side */
#define SUBTITLE_HALF_LINE 7         /* a two-line subtitle's lines, above and below SUBTITLE_Y */
#define FOOTER_BASELINE 4            /* the footer's text, below the middle of its row */
#define NO_SAMPLES_Y (YPAD_TOP + FRAME_H - 4)
#define DEFAULT_WIDTH 1200
#define MIN_PLOT_WIDTH 100           /* the narrowest plot, inside the margins */
#define DEFAULT_MIN_WIDTH_PX 0.1     /* frames narrower than this are pruned */
#define OFF_CPU_COLUMN 1             /* the value column of a wall-clock graph's off-CPU time */
#define OFF_CPU_SHADES 64            /* shades of the off-CPU hues */
#define MIDDOT " \xc2\xb7 "           /* between the subtitle's parts */
#define NS_PER_S 1000000000u

/* " width=.. height=.. rx=..": a legend swatch's size and corners. */
static void write_swatch_size(struct svg_writer *w)
{
	W_LIT(w, " width=\"");
	w_u64(w, SWATCH);
	W_LIT(w, "\" height=\"");
	w_u64(w, SWATCH);
	W_LIT(w, "\" rx=\"" CORNER_RX "\"");
}

static void plain_colour(const struct svg_graph *g, size_t node, char out[8])
{
	uint32_t label = g->tree->nodes[node].label;

	if (label == FG_NONE)
		memcpy(out, ROOT_COLOUR, sizeof ROOT_COLOUR);
	else
		memcpy(out, g->labels->label[label].colour, SVG_COLOUR_LEN + 1);
}

/* " (1,234 samples, 12.34%": a tooltip's count and share, left open. */
static void tooltip_head(const struct svg_graph *g, size_t node, struct svg_writer *w)
{
	uint64_t n = g->tree->nodes[node].width, total = g->tree->total;

	W_LIT(w, " (");
	w_commas(w, n);
	W_LIT(w, " ");
	w_puts(w, g->unit);
	W_LIT(w, ", ");
	w_fixed(w, total ? 100.0 * (double)n / (double)total : 0, 2);
	W_LIT(w, "%");
}

/* " (1,234 samples, 12.34%)" */
static void plain_tooltip(const struct svg_graph *g, size_t node, struct svg_writer *w)
{
	tooltip_head(g, node, w);
	W_LIT(w, ")");
}

/* A wall-clock graph (record --idle) carries each node's off-CPU part as
 * its second value: a node more than half off CPU takes the off-CPU
 * colours (its kind's legend swatch no longer applies), and every
 * tooltip with some says how much. */
static uint64_t off_part(const struct svg_graph *g, size_t node)
{
	return g->tree->nvalues > OFF_CPU_COLUMN ? g->tree->values[node * g->tree->nvalues + OFF_CPU_COLUMN] : 0;
}

/* Off-CPU time's hue: violets, varied by v1 and v2. */
static void off_cpu_colour_of(double v1, double v2, char out[8])
{
	static const struct svg_channel off_cpu[3] = { { 150, 50, 0 }, { 120, 40, 0 }, { 200, 45, 1 } };

	svg_colour(off_cpu, v1, v2, 0, out);
}

static void wall_colour(const struct svg_graph *g, size_t node, char out[8])
{
	uint32_t label = g->tree->nodes[node].label;
	uint64_t off = off_part(g, node), n = g->tree->nodes[node].width;

	if (label == FG_NONE || off * 2 <= n) {
		plain_colour(g, node, out);
		return;
	}
	const char *c = g->labels->label[label].colour;   /* its shade, moved to the off-CPU hues */
	unsigned r = 0, gr = 0;
	sscanf(c + 1, "%2x%2x", &r, &gr);
	off_cpu_colour_of((double)(r % OFF_CPU_SHADES) / OFF_CPU_SHADES, (double)(gr % OFF_CPU_SHADES) / OFF_CPU_SHADES,
			  out);
}

/* " (1,234 us, 12.34%, 80% off CPU)" */
static void wall_tooltip(const struct svg_graph *g, size_t node, struct svg_writer *w)
{
	uint64_t n = g->tree->nodes[node].width, off = off_part(g, node);

	tooltip_head(g, node, w);
	if (off) {
		W_LIT(w, ", ");
		w_u64(w, n ? (uint64_t)(100.0 * (double)off / (double)n + 0.5) : 0);
		W_LIT(w, "% off CPU");
	}
	W_LIT(w, ")");
}

/* Right-aligned on the legend row: the off-CPU swatch. */
static void wall_legend(const struct svg_graph *g, struct svg_writer *w)
{
	static const char text[] = "off CPU (sleeping, blocked, waiting)";
	char fill[8];
	double x_end = g->width - XPAD, y = LEGEND_Y;

	off_cpu_colour_of(0.5, 0.5, fill);
	W_LIT(w, "<g id=\"offcpulegend\"><title>more than half of the frame's time was spent off CPU</title><rect");
	w_attr_num(w, " x=\"", x_end - (double)(sizeof text - 1) * CHAR_W - SWATCH_TEXT_X);
	w_attr_num(w, " y=\"", y - SWATCH);
	write_swatch_size(w);
	W_LIT(w, " fill=\"");
	w_put(w, fill, SVG_COLOUR_LEN);
	W_LIT(w, "\"/>");
	w_attr_num(w, "<text text-anchor=\"end\" x=\"", x_end);
	w_attr_num(w, " y=\"", y);
	W_LIT(w, ">");
	w_puts(w, text);
	W_LIT(w, "</text></g>\n");
}

static const char *const kind_names[EMBER_FRAME_KIND_COUNT] = {
	[EMBER_FRAME_NATIVE] = "native", [EMBER_FRAME_PYTHON] = "Python", [EMBER_FRAME_KERNEL] = "kernel",
	[EMBER_FRAME_INTERP] = "interpreter", [EMBER_FRAME_SPECIAL] = "special",
};

static void write_frame(struct svg_writer *w, const struct svg_graph *g, size_t i, double scale, unsigned height)
{
	const struct fg_node *nd = &g->tree->nodes[i];
	const struct svg_label *l = nd->label == FG_NONE ? NULL : &g->labels->label[nd->label];
	double x = XPAD + (double)nd->start * scale, wd = (double)nd->width * scale;
	double y = g->icicle ? YPAD_TOP + nd->depth * FRAME_H
			     : height - YPAD_BOTTOM - (nd->depth + 1.0) * FRAME_H + FRAME_PAD;
	char fill[8];
	const char *name = l ? g->labels->esc + l->esc_off : ROOT_NAME;
	size_t name_len = l ? l->esc_len : sizeof ROOT_NAME - 1, units = l ? l->units : sizeof ROOT_NAME - 1;

	W_LIT(w, "<g class=\"k");
	w_u64(w, l ? (uint64_t)l->kind : EMBER_FRAME_SPECIAL);
	W_LIT(w, "\" s=\"");
	w_u64(w, nd->start);
	W_LIT(w, "\" n=\"");
	w_u64(w, nd->width);
	W_LIT(w, "\"><title>");
	w_put(w, name, name_len);
	g->style->tooltip(g, i, w);
	svg_workers_tooltip(g->workers, i, nd->width, g->unit, w);
	if (l && l->caller_scanned)
		W_LIT(w, "\nno unwind info here: its caller was found by scanning the stack");
	W_LIT(w, "</title><rect");
	w_attr_num(w, " x=\"", x);
	w_attr_num(w, " y=\"", y);
	w_attr_num(w, " width=\"", wd);
	g->style->colour(g, i, fill);
	W_LIT(w, " height=\"");
	w_u64(w, FRAME_H - FRAME_PAD);
	W_LIT(w, "\" fill=\"");
	w_put(w, fill, SVG_COLOUR_LEN);
	W_LIT(w, "\" rx=\"" CORNER_RX "\"/>");

	/* flamegraph.pl's label fit: whole glyphs of an average width, and
	 * LABEL_CUT when cut; nothing under LABEL_MIN_GLYPHS glyphs. */
	size_t fit = (size_t)(wd / CHAR_W);
	if (fit < LABEL_MIN_GLYPHS) {
		W_LIT(w, "<text/></g>\n");
		return;
	}
	w_attr_num(w, "<text x=\"", x + LABEL_X);
	w_attr_num(w, " y=\"", y + LABEL_BASELINE);
	W_LIT(w, ">");
	if (units <= fit) {
		w_put(w, name, name_len);
	} else {
		svg_xml(w, l->text, l->len, fit - (sizeof LABEL_CUT - 1));
		W_LIT(w, LABEL_CUT);
	}
	W_LIT(w, "</text></g>\n");
}

static void write_legend(struct svg_writer *w)
{
	static const enum ember_frame_kind order[] = { EMBER_FRAME_PYTHON, EMBER_FRAME_NATIVE, EMBER_FRAME_INTERP,
						       EMBER_FRAME_KERNEL, EMBER_FRAME_SPECIAL };
	double x = XPAD;

	W_LIT(w, "<g id=\"legend\">");
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		char fill[8];
		svg_kind_colour(order[i], 0.5, 0.5, 0.5, fill);
		W_LIT(w, "<g class=\"legend btn\" k=\"");
		w_u64(w, order[i]);
		W_LIT(w, "\"><title>Highlight ");
		w_puts(w, kind_names[order[i]]);
		W_LIT(w, " frames</title><rect");
		w_attr_num(w, " x=\"", x);
		w_attr_num(w, " y=\"", LEGEND_Y - SWATCH);
		write_swatch_size(w);
		W_LIT(w, " fill=\"");
		w_put(w, fill, SVG_COLOUR_LEN);
		W_LIT(w, "\"/>");
		w_attr_num(w, "<text x=\"", x + SWATCH_TEXT_X);
		w_attr_num(w, " y=\"", LEGEND_Y);
		W_LIT(w, ">");
		w_puts(w, kind_names[order[i]]);
		W_LIT(w, "</text></g>");
		x += SWATCH_TEXT_X + strlen(kind_names[order[i]]) * CHAR_W + LEGEND_GAP;
	}
	W_LIT(w, "</g>\n");
}

static void write_text(struct svg_writer *w, const char *id, const char *cls, double x, double y, const char *s)
{
	W_LIT(w, "<text id=\"");
	w_puts(w, id);
	if (cls) {
		W_LIT(w, "\" class=\"");
		w_puts(w, cls);
	}
	w_attr_num(w, "\" x=\"", x);
	w_attr_num(w, " y=\"", y);
	W_LIT(w, ">");
	svg_xml(w, s, strlen(s), SIZE_MAX);
	W_LIT(w, "</text>\n");
}

/* One line, or two when the text has a '\n' (a diff's subtitle says how
 * runs are compared and what the colours mean): both fit above the legend. */
static void write_subtitle(struct svg_writer *w, const char *s, unsigned width)
{
	const char *nl = strchr(s, '\n');

	if (!nl) {
		write_text(w, "subtitle", NULL, width / 2.0, SUBTITLE_Y, s);
		return;
	}
	W_LIT(w, "<text id=\"subtitle\"");
	w_attr_num(w, " x=\"", width / 2.0);
	w_attr_num(w, " y=\"", SUBTITLE_Y - SUBTITLE_HALF_LINE);
	W_LIT(w, ">");
	svg_xml(w, s, (size_t)(nl - s), SIZE_MAX);
	W_LIT(w, "</text>\n<text id=\"subtitle2\" style=\"text-anchor:middle;fill:#444\"");
	w_attr_num(w, " x=\"", width / 2.0);
	w_attr_num(w, " y=\"", SUBTITLE_Y + SUBTITLE_HALF_LINE);
	W_LIT(w, ">");
	svg_xml(w, nl + 1, strlen(nl + 1), SIZE_MAX);
	W_LIT(w, "</text>\n");
}

/* The rows above the frames: title, subtitle, legends and the buttons, in
 * one group drawn after the frames, so that the script can keep it at the
 * top of a window scrolled down a tall graph (its bar, unpainted until then,
 * hides the frames passing under it). */
static void write_header(struct svg_writer *w, const struct svg_graph *g)
{
	unsigned width = g->width;

	W_LIT(w, "<g id=\"header\"><rect class=\"bar\" x=\"0\" y=\"0\"");
	w_attr_num(w, " width=\"", width);
	w_attr_num(w, " height=\"", YPAD_TOP);
	W_LIT(w, "/>\n");

	/* the title, cut to fit between the buttons; whole in its tooltip */
	size_t cut = sizeof LABEL_CUT - 1;
	size_t title_units = (size_t)((width - 2.0 * (XPAD + TITLE_BUTTON_W)) / (TITLE_SIZE * GLYPH_W_RATIO));
	W_LIT(w, "<text id=\"title\"");
	w_attr_num(w, " x=\"", width / 2.0);
	w_attr_num(w, " y=\"", TITLE_Y);
	W_LIT(w, "><title>");
	svg_xml(w, g->title, strlen(g->title), SIZE_MAX);
	W_LIT(w, "</title>");
	if (svg_text_units(g->title, strlen(g->title)) > title_units && title_units > cut) {
		svg_xml(w, g->title, strlen(g->title), title_units - cut);
		W_LIT(w, LABEL_CUT);
	} else {
		svg_xml(w, g->title, strlen(g->title), SIZE_MAX);
	}
	W_LIT(w, "</text>\n");
	write_subtitle(w, g->subtitle, width);
	write_legend(w);
	if (g->style->legend)
		g->style->legend(g, w);
	write_text(w, "unzoom", "btn hide", XPAD, TITLE_Y, "Reset Zoom");
	write_text(w, "search", "btn", width - XPAD, TITLE_Y, "Search");
	W_LIT(w, "</g>\n");
}

/* The row under the frames: the hovered frame's details and the search's
 * share, kept at the bottom of the window like the header at its top. */
static void write_footer(struct svg_writer *w, unsigned width, unsigned height)
{
	W_LIT(w, "<g id=\"footer\"><rect class=\"bar\" x=\"0\"");
	w_attr_num(w, " y=\"", height - YPAD_BOTTOM);
	w_attr_num(w, " width=\"", width);
	w_attr_num(w, " height=\"", YPAD_BOTTOM);
	W_LIT(w, "/>\n");
	write_text(w, "details", NULL, XPAD, height - YPAD_BOTTOM / 2.0 + FOOTER_BASELINE, " ");
	write_text(w, "matched", NULL, width - XPAD, height - YPAD_BOTTOM / 2.0 + FOOTER_BASELINE, " ");
	W_LIT(w, "</g>\n");
}

static void render(struct svg_writer *w, const struct svg_graph *g)
{
	const struct fg_tree *t = g->tree;
	unsigned width = g->width;
	unsigned height = (t->max_depth + 1) * FRAME_H + YPAD_TOP + YPAD_BOTTOM;
	double scale = t->total ? (width - 2.0 * XPAD) / (double)t->total : 0;
	char num[160];

	W_LIT(w, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
	snprintf(num, sizeof(num), "<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" ",
		 width, height, width, height);
	w_puts(w, num);
	W_LIT(w, "xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n"
		 "<!-- Flame graph written by ember. Click a frame to zoom, Ctrl-F to search. -->\n"
		 "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
		 "<stop stop-color=\"#eeeeee\" offset=\"5%\"/><stop stop-color=\"#eeeeb0\" offset=\"95%\"/>"
		 "</linearGradient></defs>\n<style type=\"text/css\"><![CDATA[");
	w_puts(w, svg_css);
	W_LIT(w, "]]></style>\n");
	snprintf(num, sizeof(num), "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"url(#background)\"/>\n",
		 width, height);
	w_puts(w, num);

	if (!t->total)
		write_text(w, "nosamples", NULL, width / 2.0, NO_SAMPLES_Y, "No samples");
	W_LIT(w, "<g id=\"frames\">\n");
	for (size_t i = 0; t->total && i < t->nnodes; i++)
		write_frame(w, g, i, scale, height);
	W_LIT(w, "</g>\n");
	write_header(w, g);
	write_footer(w, width, height);
	W_LIT(w, "<script type=\"text/ecmascript\"><![CDATA[\nvar EMBER_CONFIG = {width: ");
	snprintf(num, sizeof(num), "%u, height: %u, xpad: %d, charW: %.2f, frameH: %d, total: %" PRIu64
		 ", inverted: %s, searchColour: \"%s\", kinds: [",
		 width, height, XPAD, CHAR_W, FRAME_H, t->total, g->icicle ? "true" : "false", SEARCH_COLOUR);
	w_puts(w, num);
	for (int k = 0; k < EMBER_FRAME_KIND_COUNT; k++) {
		w_puts(w, k ? ", \"" : "\"");
		w_puts(w, kind_names[k]);
		W_LIT(w, "\"");
	}
	W_LIT(w, "]};\n");
	w_puts(w, svg_js);
	W_LIT(w, "]]></script>\n</svg>\n");
}

/* ---- the profile's graph ---- */

/* "DATE · 99 Hz · 1,234 samples · 5.00 s · lost 0 · truncated 0", and
 * the mismatched and unwind error counts when there are any. */
static char *subtitle_text(const struct ember_profile *p, uint64_t total)
{
	const struct ember_run_meta *m = ember_profile_meta(p);
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	const char *sep = "";   /* before the next part: none before the first */

	if (!f)
		return NULL;
	if (m->start_unix_ns) {
		time_t t = (time_t)(m->start_unix_ns / NS_PER_S);
		struct tm tm;
		char date[64];
		if (gmtime_r(&t, &tm) && strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", &tm)) {
			fprintf(f, "%s", date);
			sep = MIDDOT;
		}
	}
	if (m->freq_hz) {
		fprintf(f, "%s%" PRIu32 " Hz", sep, m->freq_hz);
		sep = MIDDOT;
	} else if (m->interval_ns) {
		fprintf(f, "%sone sample per %.3g ms", sep, (double)m->interval_ns / 1e6);
		sep = MIDDOT;
	}
	char num[32];
	if (m->wall_clock)
		fprintf(f, "%s%.3f s wall-clock time, %.3f s of it off CPU", sep,
			(double)total * ember_profile_interval_s(p),
			(double)ember_profile_off_cpu_total(p) * ember_profile_interval_s(p));
	else
		fprintf(f, "%s%s samples", sep, ember_count_commas(num, total));
	if (m->duration_ns)
		fprintf(f, MIDDOT "%.2f s", (double)m->duration_ns / 1e9);
	fprintf(f, MIDDOT "lost %" PRIu64 MIDDOT "truncated %" PRIu64, m->lost, m->truncated);
	if (m->mismatched)
		fprintf(f, MIDDOT "mismatched %" PRIu64, m->mismatched);
	if (m->unwind_errors)
		fprintf(f, MIDDOT "unwind errors %" PRIu64, m->unwind_errors);
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

int svg_write_graph(FILE *out, const struct svg_graph *g)
{
	struct svg_writer *w = malloc(sizeof(*w));

	if (!w) {
		errno = ENOMEM;
		return -1;
	}
	*w = (struct svg_writer){ .f = out };
	flockfile(out);
	render(w, g);
	w_flush(w);
	funlockfile(out);
	int ret = -1;
	if (!w->err && fflush(out) == 0 && !ferror(out))
		ret = 0;
	else if (!errno)
		errno = EIO;
	free(w);
	return ret;
}

unsigned svg_width(unsigned width_px)
{
	unsigned width = width_px ? width_px : DEFAULT_WIDTH;

	return width < 2 * XPAD + MIN_PLOT_WIDTH ? 2 * XPAD + MIN_PLOT_WIDTH : width;
}

void svg_input_free(struct svg_input *in)
{
	free(in->title);
	free(in->subtitle);
	free(in->entries);
	free(in->values);
	fg_tree_free(&in->tree);
	svg_labels_free(&in->labels);
	memset(in, 0, sizeof(*in));
}

/* svg_input_build's; off_cpu: nvalues is 2, the second the rows' off-CPU part. */
static int input_build(struct svg_input *in, const struct ember_profile *p, bool threads, uint32_t nvalues,
		       uint32_t width_value, unsigned width, double min_width_px, bool off_cpu)
{
	const struct svg_labels *labels = &in->labels;

	memset(in, 0, sizeof(*in));
	if (svg_labels_build(&in->labels, p, threads) < 0)
		return -1;
	uint32_t nrows = ember_profile_nrows(p);

	in->entries = malloc(((size_t)nrows + 1) * sizeof(*in->entries));
	in->values = calloc(((size_t)nrows + 1) * nvalues, sizeof(*in->values));
	if (!in->entries || !in->values)
		return -1;
	for (uint32_t r = 0; r < nrows; r++) {
		const struct ember_sample_row *row = ember_profile_row_at(p, r);
		struct fg_entry *e = &in->entries[in->n];
		uint32_t col = nvalues > 1 && !off_cpu ? row->thread : 0;
		if (!row->count)
			continue;
		if (off_cpu && (row->flags & EMBER_ROW_OFF_CPU)) {
			in->values[in->n * nvalues + 1] = row->count;
			in->total[1] += row->count;
		}
		e->ids = ember_profile_stack_frames(p, row->stack, &e->n);
		if (!e->n) {   /* an empty stack: one frame, the [unknown] label */
			e->ids = &labels->unknown;
			e->n = 1;
		}
		e->head = threads ? labels->thread[row->thread] : FG_NONE;
		in->values[in->n * nvalues + col] = row->count;
		in->total[col] += row->count;
		in->n++;
	}
	double min_px = min_width_px > 0 ? min_width_px : DEFAULT_MIN_WIDTH_PX;
	struct fg_input fi = { .entries = in->entries, .nentries = in->n, .values = in->values, .nvalues = nvalues,
			       .width_value = width_value, .map = labels->map, .nlabels = labels->n,
			       .min_width = min_px * (double)in->total[width_value] / (width - 2.0 * XPAD) };
	return fg_tree_build(&in->tree, &fi);
}

int svg_input_build(struct svg_input *in, const struct ember_profile *p, bool threads, uint32_t nvalues,
		    uint32_t width_value, unsigned width, double min_width_px)
{
	return input_build(in, p, threads, nvalues, width_value, width, min_width_px, false);
}

int ember_write_svg(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o)
{
	const struct ember_run_meta *m = ember_profile_meta(p);
	struct ember_export_opts defaults = { 0 };
	struct svg_input in;
	int ret = -1;

	if (!o)
		o = &defaults;
	unsigned width = svg_width(o->width_px);
	bool wall = ember_profile_off_cpu_total(p) > 0;
	if (input_build(&in, p, o->threads, wall ? 2 : 1, 0, width, o->min_width_px, wall) < 0)
		goto oom;
	if (o->title)
		in.title = strdup(o->title);
	else if (asprintf(&in.title, "ember: %s", m->command && *m->command ? m->command : "flame graph") < 0)
		in.title = NULL;
	in.subtitle = subtitle_text(p, in.total[0]);
	if (!in.title || !in.subtitle)
		goto oom;

	struct svg_style style = { .colour = plain_colour, .tooltip = plain_tooltip };
	if (wall)
		style = (struct svg_style){ .colour = wall_colour, .tooltip = wall_tooltip, .legend = wall_legend };
	struct svg_workers workers;
	if (svg_workers_build(&workers, &in, p, o->threads) < 0)
		goto oom;
	struct svg_graph g = { .labels = &in.labels, .tree = &in.tree, .style = &style, .title = in.title,
			       .subtitle = in.subtitle, .unit = m->wall_clock ? "us" : "samples", .width = width,
			       .icicle = o->icicle, .workers = &workers };
	ret = svg_write_graph(out, &g);
	svg_workers_free(&workers);
	svg_input_free(&in);
	return ret;
oom:
	svg_input_free(&in);
	errno = ENOMEM;
	return -1;
}
