/* The differential flame graph of `ember diff` (docs/consumers.md §2.5, §7):
 * flamegraph.pl's difffolded view, without the pitfalls §7 lists.
 *
 * Both runs go into one profile (diff_union.c), so the label table covers
 * both and one flame tree carries two values per node: BASE and NEW
 * samples.  Widths come from NEW (from BASE with reverse: the only way to
 * see what vanished, Gregg's "negated" graph).  The colour is the change
 * in self time of the node, NEW - BASE in the compared unit (share or
 * seconds, so runs of different length or rate compare fairly), on a scale
 * where the largest change on the graph is full red or blue; the subtitle
 * says what full colour is.  A change of the node's self samples within
 * sampling noise (the caller's test: ember diff's, the one its table uses)
 * is drawn white like no change: flamegraph.pl paints every 1-sample
 * wobble pink or blue, the commonest false regression.
 * Tooltips give self and inclusive values in both runs with their deltas,
 * and say when a self change is noise.  Zoom, search and the kind legend
 * are svg.c's, and so is the graph's input (svg_input_build). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_union.h"
#include "exporters.h"
#include "flame_tree.h"
#include "svg_internal.h"
#include "svg_writer.h"

struct diff_style {
	const struct ember_diff_export_opts *o;
	uint64_t total[2];
	double max;            /* largest |self delta| of a visible node beyond noise, in the unit */
};

static double self_delta(const struct svg_graph *g, const struct diff_style *ds, size_t node)
{
	const uint64_t *self = g->tree->self + node * 2;

	return (double)self[1] * ds->o->scale[1] - (double)self[0] * ds->o->scale[0];
}

/* Is the change of self samples from b (BASE) to n (NEW) noise? */
static bool within_noise(const struct diff_style *ds, uint64_t b, uint64_t n)
{
	return ds->o->within_noise && ds->o->within_noise(ds->o->noise_ctx, b, n);
}

#define DIFF_LEVELS 210

/* flamegraph.pl's color_scale: white at no change, towards (255,0,0) for
 * growth and (0,0,255) for shrinking, DIFF_LEVELS levels; but linear in the
 * compared unit, not in raw counts. */
static void diff_colour_of(double d, double max, char out[8])
{
	if (!(max > 0) || d == 0) {
		memcpy(out, "#ffffff", SVG_COLOUR_LEN + 1);
		return;
	}
	double t = fabs(d) / max;
	int v = (int)(DIFF_LEVELS * (1 - (t < 1 ? t : 1)));
	if (d > 0)
		snprintf(out, 8, "#ff%02x%02x", v, v);
	else
		snprintf(out, 8, "#%02x%02xff", v, v);
}

static void diff_colour(const struct svg_graph *g, size_t node, char out[8])
{
	const struct diff_style *ds = g->style->ctx;
	const uint64_t *self = g->tree->self + node * 2;

	diff_colour_of(within_noise(ds, self[0], self[1]) ? 0 : self_delta(g, ds, node), ds->max, out);
}

/* A value (or a signed delta) in the unit: "12.34%", "+1.20 pp",
 * "3.21 s", "+45.6 ms". */
static void fmt_value(char *buf, size_t size, const struct ember_diff_export_opts *o, double v, bool delta)
{
	if (o->share) {
		snprintf(buf, size, delta ? "%+.2f pp" : "%.2f%%", v);
		return;
	}
	double a = fabs(v);
	if (a >= 1 || a == 0)
		snprintf(buf, size, delta ? "%+.3f s" : "%.3f s", v);
	else if (a >= 1e-3)
		snprintf(buf, size, delta ? "%+.2f ms" : "%.2f ms", v * 1e3);
	else
		snprintf(buf, size, delta ? "%+.1f \xc2\xb5s" : "%.1f \xc2\xb5s", v * 1e6);
}

/* " (self A -> B, delta D[, within noise]; incl A -> B, delta D; N samples in NEW)"
 * -- no " (" after the first: the script cuts the name at the last one. */
static void diff_tooltip(const struct svg_graph *g, size_t node, struct svg_writer *w)
{
	const struct diff_style *ds = g->style->ctx;
	const struct ember_diff_export_opts *o = ds->o;
	const uint64_t *self = g->tree->self + node * 2, *incl = g->tree->values + node * 2;
	char a[48], b[48], d[48], num[32];

	W_LIT(w, " (");
	for (int part = 0; part < 2; part++) {
		const uint64_t *v = part ? incl : self;
		fmt_value(a, sizeof(a), o, (double)v[0] * o->scale[0], false);
		fmt_value(b, sizeof(b), o, (double)v[1] * o->scale[1], false);
		fmt_value(d, sizeof(d), o, (double)v[1] * o->scale[1] - (double)v[0] * o->scale[0], true);
		w_puts(w, part ? "; incl " : "self ");
		w_puts(w, a);
		W_LIT(w, " \xe2\x86\x92 ");
		w_puts(w, b);
		W_LIT(w, ", \xce\x94 ");
		w_puts(w, d);
		if (!part && (v[0] || v[1]) && within_noise(ds, v[0], v[1]))
			W_LIT(w, ", within noise");
	}
	W_LIT(w, "; ");
	w_puts(w, ember_count_commas(num, g->tree->nodes[node].width));
	W_LIT(w, " samples in ");
	w_puts(w, o->reverse ? "BASE" : "NEW");
	if (o->per) {
		W_LIT(w, "; per ");
		w_puts(w, o->per);
	}
	W_LIT(w, ")");
}

/* The colour scale of the legend: DIFF_SWATCHES swatches from -max to
 * +max, each DIFF_SWATCH_W wide, one every DIFF_SWATCH_STEP pixels, between
 * "self time: shrank -X" (DIFF_SHRANK_GAP before them) and "+X grew"
 * (DIFF_GREW_GAP after them). */
#define DIFF_SWATCHES 5
#define DIFF_SWATCH_W 14
#define DIFF_SWATCH_STEP 16
#define DIFF_GREW_GAP 6
#define DIFF_SHRANK_GAP 10
#define GREW " grew"

/* Right-aligned on the legend row: "self time: shrank -X [5 swatches] +X grew". */
static void diff_legend(const struct svg_graph *g, struct svg_writer *w)
{
	const struct diff_style *ds = g->style->ctx;
	const int half = DIFF_SWATCHES / 2;
	char lo[48], hi[48], txt[96], fill[8];
	double x_end = g->width - XPAD, y = LEGEND_Y;

	fmt_value(lo, sizeof(lo), ds->o, -ds->max, true);
	fmt_value(hi, sizeof(hi), ds->o, ds->max, true);
	W_LIT(w, "<g id=\"difflegend\">");
	snprintf(txt, sizeof(txt), "%s" GREW, hi);
	w_attr_num(w, "<text text-anchor=\"end\" x=\"", x_end);
	w_attr_num(w, " y=\"", y);
	W_LIT(w, ">");
	w_puts(w, txt);
	W_LIT(w, "</text>");
	double x = x_end - (double)strlen(txt) * CHAR_W - DIFF_GREW_GAP - DIFF_SWATCHES * DIFF_SWATCH_STEP;
	for (int i = -half; i <= half; i++) {
		double d = ds->max * i / half;
		diff_colour_of(d, ds->max, fill);
		fmt_value(txt, sizeof(txt), ds->o, d, true);
		W_LIT(w, "<rect");
		w_attr_num(w, " x=\"", x);
		w_attr_num(w, " y=\"", y - SWATCH);
		W_LIT(w, " width=\"");
		w_u64(w, DIFF_SWATCH_W);
		W_LIT(w, "\" height=\"");
		w_u64(w, SWATCH);
		W_LIT(w, "\" stroke=\"#999\" stroke-width=\"0.5\" fill=\"");
		w_put(w, fill, SVG_COLOUR_LEN);
		W_LIT(w, "\"><title>");
		if (i) {
			W_LIT(w, "self change ");
			w_puts(w, txt);
		} else {
			W_LIT(w, "no change, or a change within noise");
		}
		W_LIT(w, "</title></rect>");
		x += DIFF_SWATCH_STEP;
	}
	snprintf(txt, sizeof(txt), "self time: shrank %s", lo);
	w_attr_num(w, "<text text-anchor=\"end\" x=\"", x_end - (double)strlen(hi) * CHAR_W - (sizeof GREW - 1) * CHAR_W -
		   DIFF_SHRANK_GAP - DIFF_SWATCHES * DIFF_SWATCH_STEP);
	w_attr_num(w, " y=\"", y);
	W_LIT(w, ">");
	w_puts(w, txt);
	W_LIT(w, "</text></g>\n");
}

static const char *name_or(const char *s, const char *dflt)
{
	return s && *s ? s : dflt;
}

/* Title, and the two-line subtitle: how the runs are compared and what sets
 * the widths; then what the colours mean, with the scale. */
static int make_texts(const struct ember_diff_export_opts *o, const struct diff_style *ds, uint64_t width_total,
		      char **title, char **subtitle)
{
	char max[48], num[32];
	const char *b = name_or(o->base_name, "BASE"), *n = name_or(o->new_name, "NEW");
	int rc;

	*title = *subtitle = NULL;
	if (o->title)
		*title = strdup(o->title);
	else if (asprintf(title, "ember diff%s: %s \xe2\x86\x92 %s", o->reverse ? " (reverse view)" : "", b, n) < 0)
		*title = NULL;
	fmt_value(max, sizeof(max), o, ds->max, true);   /* "+1.23 pp": a delta */
	const char *norm = name_or(o->normalization, o->share ? "share of each run's samples" : "seconds");
	const char *run = o->reverse ? "BASE" : "NEW";
	if (ds->max > 0)
		rc = asprintf(subtitle, "%s \xc2\xb7 widths: %s, %s samples\nself time: red grew, blue shrank, "
			      "full colour \xc2\xb1%s (largest change), white: no change beyond noise", norm, run,
			      ember_count_commas(num, width_total), max + (max[0] == '+'));
	else
		rc = asprintf(subtitle, "%s \xc2\xb7 widths: %s, %s samples\nno change in self time beyond noise", norm,
			      run, ember_count_commas(num, width_total));
	if (rc < 0)
		*subtitle = NULL;
	return *title && *subtitle ? 0 : -1;
}

int ember_write_svg_diff(FILE *out, const struct ember_profile *base, const struct ember_profile *new_,
			 const struct ember_diff_export_opts *o)
{
	struct ember_profile u;
	struct svg_input in;
	uint32_t wv = o->reverse ? 0 : 1;
	unsigned width = svg_width(o->width_px);
	int ret = -1;

	if (diff_union(&u, base, new_) < 0)
		return -1;
	if (svg_input_build(&in, &u, false, 2, wv, width, o->min_width_px) < 0)
		goto oom;

	struct diff_style ds = { .o = o, .total = { in.total[0], in.total[1] } };
	struct svg_style style = { .colour = diff_colour, .tooltip = diff_tooltip, .legend = diff_legend, .ctx = &ds };
	struct svg_graph g = { .labels = &in.labels, .tree = &in.tree, .style = &style, .unit = "samples",
			       .width = width, .icicle = o->icicle };
	/* the scale: the largest change that is not noise */
	for (size_t i = 0; i < in.tree.nnodes; i++)
		if (!within_noise(&ds, in.tree.self[i * 2], in.tree.self[i * 2 + 1]))
			ds.max = fmax(ds.max, fabs(self_delta(&g, &ds, i)));
	if (make_texts(o, &ds, ds.total[wv], &in.title, &in.subtitle) < 0)
		goto oom;
	g.title = in.title;
	g.subtitle = in.subtitle;
	ret = svg_write_graph(out, &g);
	goto out;
oom:
	errno = ENOMEM;
out:
	svg_input_free(&in);
	ember_profile_free(&u);
	return ret;
}
