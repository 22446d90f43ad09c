/* The delta table of `ember diff`: on the terminal, and as .txt, .csv and
 * .md files.  The text and Markdown tables start with the same header,
 * because a delta means nothing without what was compared: both runs with
 * their totals, the normalisation, how keys were matched, and the noise
 * test.  The CSV is data only (a header row, a row per key: what CSV
 * readers expect); what it needs per row, its unit, noise test and z, are
 * columns. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"

#define TERMINAL_KEY_CHARS 70   /* longer keys keep their start and end around an ellipsis */

/* ---- text helpers ---- */

/* Columns on a terminal: UTF-8 continuation bytes take none. */
static size_t display_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void pad(FILE *out, size_t n)
{
	while (n--)
		putc(' ', out);
}

/* ---- describing the comparison ---- */

const char *ember_diff_unit(const struct ember_diff *d)
{
	if (d->norm == EMBER_DIFF_SHARE)
		return "%";
	return d->per_iteration ? "s/iteration" : "s";
}

void ember_diff_normalization(const struct ember_diff *d, char *buf, size_t size)
{
	char bbuf[EMBER_COUNT_TEXT_MAX], nbuf[EMBER_COUNT_TEXT_MAX];
	const char *b = ember_count_commas(bbuf, d->total[0]), *n = ember_count_commas(nbuf, d->total[1]);
	int len;

	if (d->norm == EMBER_DIFF_SHARE)
		len = snprintf(buf, size, "share of each run's samples (BASE %s, NEW %s = 100%%)", b, n);
	else if (d->per_iteration)
		len = snprintf(buf, size, "seconds per iteration (BASE %.3f s / %g, NEW %.3f s / %g)",
			       (double)d->total[0] * d->interval_s[0], d->iterations[0],
			       (double)d->total[1] * d->interval_s[1], d->iterations[1]);
	else
		len = snprintf(buf, size, "seconds (BASE %s samples = %.3f s, NEW %s = %.3f s)", b,
			       (double)d->total[0] * d->interval_s[0], n, (double)d->total[1] * d->interval_s[1]);
	if (d->rates_differ && len >= 0 && (size_t)len < size)
		snprintf(buf + len, size - (size_t)len, "; sampling rates differ: compared by time");
}

void ember_diff_noise_rule(const struct ember_diff *d, char *buf, size_t size)
{
	snprintf(buf, size, "%s, |z| <= %g",
		 d->noise_test == EMBER_DIFF_NOISE_COUNTS ? "Poisson test on sample counts" : "two-proportion test on shares",
		 d->noise_sigmas);
}

/* ---- the header ---- */

static const char *const by_names[] = { "function", "line", "module" };
static const char *const sort_names[] = { "|delta inclusive|", "|delta self|", "|log ratio|", "name" };

static void run_line(FILE *out, const char *prefix, const struct ember_diff *d, int k)
{
	const struct ember_run_meta *m = ember_profile_meta(&d->run[k]);
	char nbuf[EMBER_COUNT_TEXT_MAX];
	const char *n = ember_count_commas(nbuf, d->total[k]);

	/* a file name is the user's text: no control character may break a line */
	char *name = ember_report_label(d->name[k] ? d->name[k] : "-", 0);

	if (m->wall_clock)   /* record --idle: the counts are time */
		fprintf(out, "%s%s %s: wall-clock profile, %.3f s off CPU", prefix, k ? "NEW: " : "BASE:",
			name ? name : "-", (double)ember_profile_off_cpu_total(&d->run[k]) * d->interval_s[k]);
	else
		fprintf(out, "%s%s %s: %s samples", prefix, k ? "NEW: " : "BASE:", name ? name : "-", n);
	free(name);
	if (m->wall_clock)
		fprintf(out, ", sampled at %u Hz on CPU", m->freq_hz);
	else if (m->freq_hz)
		fprintf(out, " at %u Hz", m->freq_hz);
	else if (m->interval_ns)
		fprintf(out, ", one per %.3g ms", (double)m->interval_ns / 1e6);
	else
		fprintf(out, ", rate unknown (10 ms per sample assumed)");
	fprintf(out, " = %.3f s", (double)d->total[k] * d->interval_s[k]);
	if (m->duration_ns)
		fprintf(out, "; wall %.2f s", (double)m->duration_ns / 1e9);
	if (d->per_iteration)
		fprintf(out, "; %g iterations", d->iterations[k]);
	fputc('\n', out);
}

static void write_noise_line(FILE *out, const struct ember_diff *d, const char *prefix)
{
	char rule[128];

	ember_diff_noise_rule(d, rule, sizeof(rule));
	fprintf(out, "%snoise: %s (a key is noise when both its self and its inclusive z are); ", prefix, rule);
	if (d->noise_test == EMBER_DIFF_NOISE_COUNTS)
		fprintf(out, "z = (b - r*a) / sqrt(b + r^2*a), a and b a key's samples in BASE and NEW, r = %.6g "
			"(%s of one BASE sample / of one NEW sample)\n", d->noise_r, ember_diff_unit(d));
	else
		fprintf(out, "z = (p_NEW - p_BASE) / sqrt(p_BASE(1-p_BASE)/n_BASE + p_NEW(1-p_NEW)/n_NEW), "
			"p a key's share of its run's n samples\n");
}

static void write_header(FILE *out, const struct ember_diff *d, const char *prefix)
{
	run_line(out, prefix, d, 0);
	run_line(out, prefix, d, 1);
	if (d->norm == EMBER_DIFF_SHARE)
		fprintf(out, "%snormalization: share: each key as a percentage of its own run's samples, "
			"deltas in percentage points (pp); an overall speed-up does not show (use --normalize absolute)\n",
			prefix);
	else
		fprintf(out, "%snormalization: absolute: seconds of samples (samples x interval)%s\n", prefix,
			d->per_iteration ? " per iteration" : "");
	if (d->rates_differ)
		fprintf(out, "%ssampling rates differ: compared by time (one sample = %.3g ms in BASE, %.3g ms in NEW)\n",
			prefix, d->interval_s[0] * 1e3, d->interval_s[1] * 1e3);
	fprintf(out, "%smatching: by %s", prefix, by_names[d->by < 3 ? d->by : 0]);
	if (d->by == EMBER_REPORT_BY_FUNCTION)
		fprintf(out, " (native: name; Python: name and file), line numbers ignored");
	if (d->nrenames)
		fprintf(out, ", after %zu rename rule(s)", d->nrenames);
	fprintf(out, ": %zu in both runs, %zu only in BASE (removed), %zu only in NEW (new)\n", d->matched,
		d->only_base, d->only_new);
	write_noise_line(out, d, prefix);
	if (d->kinds_differ)
		fprintf(out, "%swarning: %s has Python frames (%.0f%% of its samples) and %s has none: few functions "
			"can match\n", prefix, d->python_share[0] > 0 ? "BASE" : "NEW",
			100 * fmax(d->python_share[0], d->python_share[1]), d->python_share[0] > 0 ? "NEW" : "BASE");
	else if (d->few_matched)
		fprintf(out, "%swarning: only %zu of %zu keys are in both runs: are these runs of the same program? "
			"(see --by and --rename)\n", prefix, d->matched, d->nrows);
	fprintf(out, "%ssorted by %s\n", prefix, sort_names[d->sorted_by < 4 ? d->sorted_by : 0]);
}

/* ---- cells ---- */

/* How absolute values print: the largest one picks s, ms or us. */
struct tunit {
	const char *suffix;
	double mult;
};

static struct tunit pick_unit(const struct ember_diff *d, size_t n)
{
	double max = 0;

	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 2; k++)
			max = fmax(max, d->rows[i].incl_v[k]);
	if (max >= 1 || max == 0)
		return (struct tunit){ "s", 1 };
	if (max >= 1e-3)
		return (struct tunit){ "ms", 1e3 };
	return (struct tunit){ "us", 1e6 };
}

static void fmt_value(char *buf, size_t size, const struct ember_diff *d, struct tunit u, double v, bool delta)
{
	if (d->norm == EMBER_DIFF_SHARE)
		snprintf(buf, size, delta ? "%+.2fpp" : "%.2f%%", v);
	else
		snprintf(buf, size, delta ? "%+.3f%s" : "%.3f%s", v * u.mult, u.suffix);
}

static const char *status_name(enum ember_diff_status s)
{
	return s == EMBER_DIFF_ADDED ? "new" : s == EMBER_DIFF_REMOVED ? "removed" : "changed";
}

static void fmt_ratio(char *buf, size_t size, const struct ember_diff_row *r)
{
	if (r->status != EMBER_DIFF_CHANGED)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.2fx", r->ratio);
}

enum { C_SELF_B, C_SELF_N, C_SELF_D, C_INCL_B, C_INCL_N, C_INCL_D, C_SHARE_D, C_RATIO, C_STATUS, C_NOISE, NCOLS };

static const char *const col_names[NCOLS] = {
	"self BASE", "self NEW", "\xce\x94self", "incl BASE", "incl NEW", "\xce\x94incl", "\xce\x94share", "ratio",
	"status", "noise",
};

struct cells {
	char c[NCOLS][32];
};

static void row_cells(struct cells *out, const struct ember_diff *d, const struct ember_diff_row *r, struct tunit u)
{
	fmt_value(out->c[C_SELF_B], 32, d, u, r->self_v[0], false);
	fmt_value(out->c[C_SELF_N], 32, d, u, r->self_v[1], false);
	fmt_value(out->c[C_SELF_D], 32, d, u, r->self_delta, true);
	fmt_value(out->c[C_INCL_B], 32, d, u, r->incl_v[0], false);
	fmt_value(out->c[C_INCL_N], 32, d, u, r->incl_v[1], false);
	fmt_value(out->c[C_INCL_D], 32, d, u, r->incl_delta, true);
	snprintf(out->c[C_SHARE_D], 32, "%+.2fpp", 100 * (r->share_incl[1] - r->share_incl[0]));
	fmt_ratio(out->c[C_RATIO], 32, r);
	snprintf(out->c[C_STATUS], 32, "%s", status_name(r->status));
	snprintf(out->c[C_NOISE], 32, "%s", r->noise ? "noise" : "");
}

/* In share mode the share delta is the inclusive delta: not shown twice. */
static bool col_shown(const struct ember_diff *d, int c)
{
	return c != C_SHARE_D || d->norm != EMBER_DIFF_SHARE;
}

/* ---- formats ---- */

static int write_text(FILE *out, const struct ember_diff *d, size_t n, bool terminal)
{
	struct tunit u = pick_unit(d, d->nrows);
	struct cells *cells = malloc((n + 1) * sizeof(*cells));
	size_t width[NCOLS];

	if (!cells)
		return -1;
	for (int c = 0; c < NCOLS; c++)
		width[c] = display_width(col_names[c]);
	for (size_t i = 0; i < n; i++) {
		row_cells(&cells[i], d, &d->rows[i], u);
		for (int c = 0; c < NCOLS; c++)
			if (strlen(cells[i].c[c]) > width[c])
				width[c] = strlen(cells[i].c[c]);
	}
	write_header(out, d, terminal ? "ember: " : "");
	if (n < d->nrows)
		fprintf(out, "%stop %zu of %zu keys (--top)\n", terminal ? "ember: " : "", n, d->nrows);
	for (int c = 0; c < NCOLS; c++) {
		if (!col_shown(d, c))
			continue;
		/* numbers right-aligned, words left */
		size_t w = display_width(col_names[c]);
		if (c < C_STATUS)
			pad(out, width[c] - w);
		fprintf(out, "%s  ", col_names[c]);
		if (c >= C_STATUS)
			pad(out, width[c] - w);
	}
	fprintf(out, "%s\n", by_names[d->by < 3 ? d->by : 0]);
	for (size_t i = 0; i < n; i++) {
		char *key = ember_report_label(d->rows[i].key, terminal ? TERMINAL_KEY_CHARS : 0);
		if (!key) {
			free(cells);
			return -1;
		}
		for (int c = 0; c < NCOLS; c++) {
			if (!col_shown(d, c))
				continue;
			const char *s = cells[i].c[c];
			if (c < C_STATUS)
				pad(out, width[c] - strlen(s));
			fprintf(out, "%s  ", s);
			if (c >= C_STATUS)
				pad(out, width[c] - strlen(s));
		}
		fprintf(out, "%s\n", key);
		free(key);
	}
	free(cells);
	return 0;
}

static void csv_field(FILE *out, const char *s)
{
	putc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			putc('"', out);
		putc(*s, out);
	}
	putc('"', out);
}

/* A number for a CSV cell: %.9g, and "inf"/"-inf" as Python's float()
 * and pandas read them. */
static void csv_num(FILE *out, double v)
{
	if (isinf(v))
		fputs(v > 0 ? ",inf" : ",-inf", out);
	else
		fprintf(out, ",%.9g", v);
}

static const char *const csv_columns =
	"key,status,noise,unit,self_base,self_new,self_delta,incl_base,incl_new,incl_delta,ratio,"
	"self_share_base_pct,self_share_new_pct,incl_share_base_pct,incl_share_new_pct,incl_share_delta_pp,"
	"incl_share_se_pp,self_base_samples,self_new_samples,incl_base_samples,incl_new_samples,"
	"noise_test,self_z,incl_z\n";

static int write_csv(FILE *out, const struct ember_diff *d, size_t n)
{
	const char *unit = d->norm == EMBER_DIFF_SHARE ? "percent" : d->per_iteration ? "s/iteration" : "s";
	const char *test = d->noise_test == EMBER_DIFF_NOISE_COUNTS ? "poisson_counts" : "two_proportion_shares";

	fputs(csv_columns, out);
	for (size_t i = 0; i < n; i++) {
		const struct ember_diff_row *r = &d->rows[i];
		char *key = ember_report_label(r->key, 0);
		if (!key)
			return -1;
		csv_field(out, key);
		free(key);
		fprintf(out, ",%s,%s,%s", status_name(r->status), r->noise ? "yes" : "no", unit);
		const double v[] = {
			r->self_v[0], r->self_v[1], r->self_delta, r->incl_v[0], r->incl_v[1], r->incl_delta, r->ratio,
			100 * r->share_self[0], 100 * r->share_self[1], 100 * r->share_incl[0], 100 * r->share_incl[1],
			100 * (r->share_incl[1] - r->share_incl[0]), 100 * r->se_incl,
		};
		for (size_t c = 0; c < sizeof(v) / sizeof(v[0]); c++)
			csv_num(out, v[c]);
		fprintf(out, ",%llu,%llu,%llu,%llu,%s", (unsigned long long)r->self[0], (unsigned long long)r->self[1],
			(unsigned long long)r->incl[0], (unsigned long long)r->incl[1], test);
		csv_num(out, r->z_self);
		csv_num(out, r->z_incl);
		putc('\n', out);
	}
	return 0;
}

/* A key as a Markdown code span, so that <templates> and *args stay text;
 * '|' is escaped even there (GFM splits cells first). */
static void md_key(FILE *out, const char *key)
{
	int ticks = strstr(key, "`") ? 2 : 1;

	fputs(ticks == 2 ? "`` " : "`", out);
	for (const char *s = key; *s; s++) {
		if (*s == '|')
			putc('\\', out);
		putc(*s, out);
	}
	fputs(ticks == 2 ? " ``" : "`", out);
}

static int write_md(FILE *out, const struct ember_diff *d, size_t n)
{
	struct tunit u = pick_unit(d, d->nrows);
	struct cells cells;

	char *bn = ember_report_label(d->name[0] ? d->name[0] : "BASE", 0);
	char *nn = ember_report_label(d->name[1] ? d->name[1] : "NEW", 0);

	fprintf(out, "## ember diff: %s \xe2\x86\x92 %s\n\n", bn ? bn : "BASE", nn ? nn : "NEW");
	free(bn);
	free(nn);
	write_header(out, d, "- ");
	fprintf(out, "\n| %s |", by_names[d->by < 3 ? d->by : 0]);
	for (int c = 0; c < NCOLS; c++)
		if (col_shown(d, c))
			fprintf(out, " %s |", col_names[c]);
	fputs("\n|---|", out);
	for (int c = 0; c < NCOLS; c++)
		if (col_shown(d, c))
			fputs(c < C_STATUS ? "--:|" : "---|", out);
	putc('\n', out);
	for (size_t i = 0; i < n; i++) {
		char *key = ember_report_label(d->rows[i].key, 0);
		if (!key)
			return -1;
		row_cells(&cells, d, &d->rows[i], u);
		fputs("| ", out);
		md_key(out, key);
		free(key);
		fputs(" |", out);
		for (int c = 0; c < NCOLS; c++)
			if (col_shown(d, c))
				fprintf(out, " %s |", cells.c[c]);
		putc('\n', out);
	}
	return 0;
}

int ember_diff_write_table(FILE *out, const struct ember_diff *d, enum ember_diff_table fmt, size_t top)
{
	size_t n = top && top < d->nrows ? top : d->nrows;
	int rc;

	errno = 0;
	switch (fmt) {
	case EMBER_DIFF_TABLE_CSV:
		rc = write_csv(out, d, n);
		break;
	case EMBER_DIFF_TABLE_MD:
		rc = write_md(out, d, n);
		break;
	default:
		rc = write_text(out, d, n, fmt == EMBER_DIFF_TABLE_TERMINAL);
		break;
	}
	if (rc < 0) {
		errno = ENOMEM;
		return -1;
	}
	if (fflush(out) != 0 || ferror(out)) {
		if (!errno)
			errno = EIO;
		return -1;
	}
	return 0;
}
