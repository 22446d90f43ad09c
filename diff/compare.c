/* The comparison behind `ember diff`: canonical copies of both runs
 * (canon.c), one key table over both (report.h, EMBER_KEYS_MATCHING), self
 * and inclusive samples per key and run, the normalised values, the noise
 * tests (shares: binomial; seconds: Poisson counts), and sorting. */
#define _GNU_SOURCE /* qsort_r */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"

/* ---- counting ---- */

/* The samples of each key in one run, counted as `ember report` counts
 * (ember_report_count: a sample once per key even when the key is on its
 * stack several times -- recursion, or two frames that a rename made
 * equal), by the key ids of the table both runs share. */
struct run_counts {
	uint64_t *self, *incl;
	uint32_t n;            /* keys counted: those met up to this run */
};

/* Count run p under keys, and the share of its samples with a Python
 * frame.  0, or -1 on OOM. */
static int count_run(struct ember_keys *keys, const struct ember_profile *p, struct run_counts *rc,
		     double *python_share)
{
	uint32_t nstacks = ember_profile_nstacks(p), nrows = ember_profile_nrows(p);
	uint8_t *has_py = calloc((size_t)nstacks + 1, 1);
	uint64_t py = 0, all = 0;
	int ret = -1;

	if (!has_py || ember_report_count(p, ember_key_of, keys, &rc->n, &rc->self, &rc->incl) < 0)
		goto out;
	for (uint32_t s = 0; s < nstacks; s++) {
		uint32_t nf;
		const uint32_t *ids = ember_profile_stack_frames(p, s, &nf);
		for (uint32_t i = 0; i < nf && !has_py[s]; i++)
			has_py[s] = ember_profile_frame_at(p, ids[i])->kind == EMBER_FRAME_PYTHON;
	}
	for (uint32_t r = 0; r < nrows; r++) {
		const struct ember_sample_row *row = ember_profile_row_at(p, r);
		all += row->count;
		py += has_py[row->stack] ? row->count : 0;
	}
	*python_share = all ? (double)py / (double)all : 0;
	ret = 0;
out:
	free(has_py);
	return ret;
}

/* ---- numbers ---- */

static double share(uint64_t part, uint64_t total)
{
	return total ? (double)part / (double)total : 0;
}

/* Standard error of p_new - p_base: each share a binomial proportion of
 * its run's samples, the runs independent. */
static double share_se(double pb, uint64_t nb, double pn, uint64_t nn)
{
	double v = 0;

	if (nb)
		v += pb * (1 - pb) / (double)nb;
	if (nn)
		v += pn * (1 - pn) / (double)nn;
	return sqrt(v);
}

/* delta / se, where a change of 0 is 0 even when its se is 0 (a key in no
 * sample, or in every sample, of both runs) and any other change with an
 * se of 0 is infinitely far. */
static double z_of(double delta, double se)
{
	if (delta == 0)
		return 0;
	if (!(se > 0))
		return delta > 0 ? INFINITY : -INFINITY;
	return delta / se;
}

/* Samples the noise estimate takes per sample of run k: 1, or for a
 * wall-clock run its sampling periods per counted unit (see noise_n). */
static double noise_weight(const struct ember_diff *d, int k)
{
	return d->total[k] ? (double)d->noise_n[k] / (double)d->total[k] : 1;
}

/* Absolute mode compares values = samples x scale[k].  A key's samples are
 * Poisson: with a', b' its samples in BASE and NEW as the noise estimate
 * counts them and r the value of one of BASE's over one of NEW's, "the
 * same value in both runs" expects b' = r a', and b' - r a' has the
 * variance b' + r^2 a'.  (Equal rates and iterations: r = 1 exactly.) */
static double counts_z(const struct ember_diff *d, uint64_t base, uint64_t new_)
{
	double r = d->noise_r, a = (double)base * noise_weight(d, 0), b = (double)new_ * noise_weight(d, 1);

	return z_of(b - r * a, sqrt(b + r * r * a));
}

/* Share mode compares p = samples / total: two binomial proportions. */
static double shares_z(const struct ember_diff *d, uint64_t base, uint64_t new_)
{
	double pb = share(base, d->total[0]), pn = share(new_, d->total[1]);

	return z_of(pn - pb, share_se(pb, d->noise_n[0], pn, d->noise_n[1]));
}

double ember_diff_z(const struct ember_diff *d, uint64_t base, uint64_t new_)
{
	return d->noise_test == EMBER_DIFF_NOISE_COUNTS ? counts_z(d, base, new_) : shares_z(d, base, new_);
}

bool ember_diff_within_noise(const void *diff, uint64_t base, uint64_t new_)
{
	const struct ember_diff *d = diff;

	/* <= : a change of exactly 0 with a standard error of 0 is no change */
	return fabs(ember_diff_z(d, base, new_)) <= d->noise_sigmas;
}

static void fill_row(struct ember_diff_row *row, const struct ember_diff *d)
{
	for (int k = 0; k < 2; k++) {
		row->self_v[k] = (double)row->self[k] * d->scale[k];
		row->incl_v[k] = (double)row->incl[k] * d->scale[k];
		row->share_self[k] = share(row->self[k], d->total[k]);
		row->share_incl[k] = share(row->incl[k], d->total[k]);
	}
	row->self_delta = row->self_v[1] - row->self_v[0];
	row->incl_delta = row->incl_v[1] - row->incl_v[0];
	row->se_self = share_se(row->share_self[0], d->noise_n[0], row->share_self[1], d->noise_n[1]);
	row->se_incl = share_se(row->share_incl[0], d->noise_n[0], row->share_incl[1], d->noise_n[1]);
	row->z_self = ember_diff_z(d, row->self[0], row->self[1]);
	row->z_incl = ember_diff_z(d, row->incl[0], row->incl[1]);
	row->noise = fabs(row->z_self) <= d->noise_sigmas && fabs(row->z_incl) <= d->noise_sigmas;
	if (!row->incl[0]) {
		row->status = EMBER_DIFF_ADDED;
		row->ratio = INFINITY;
	} else {
		row->status = row->incl[1] ? EMBER_DIFF_CHANGED : EMBER_DIFF_REMOVED;
		row->ratio = row->incl_v[1] / row->incl_v[0];
	}
}

static void set_scales(struct ember_diff *d, const struct ember_diff_opts *o)
{
	for (int k = 0; k < 2; k++) {
		const struct ember_run_meta *m = ember_profile_meta(&d->run[k]);
		d->total[k] = ember_profile_total(&d->run[k]);
		d->interval_s[k] = ember_profile_interval_s(&d->run[k]);
		d->rate_known[k] = m->interval_ns || m->freq_hz;
		d->iterations[k] = o->iterations[k] > 0 ? o->iterations[k] : 1;
		/* A wall-clock run counts microseconds: as many samples as
		 * sampling periods fit in its time (off-CPU time is measured,
		 * not sampled, so this overstates its noise, never understates). */
		d->wall_clock[k] = m->wall_clock;
		d->noise_n[k] = d->total[k];
		if (m->wall_clock && m->freq_hz)
			d->noise_n[k] = (uint64_t)((double)d->total[k] * d->interval_s[k] * m->freq_hz + 0.5);
		if (o->norm == EMBER_DIFF_SHARE)
			d->scale[k] = d->total[k] ? 100.0 / (double)d->total[k] : 0;
		else
			d->scale[k] = d->interval_s[k] / d->iterations[k];
	}
	/* Intervals are whole nanoseconds or 1/Hz: equal rates agree far
	 * closer than this. */
	d->rates_differ = fabs(d->interval_s[0] - d->interval_s[1]) > 1e-6 * fmax(d->interval_s[0], d->interval_s[1]);
	d->per_iteration = o->norm == EMBER_DIFF_ABSOLUTE && (o->iterations[0] > 0 || o->iterations[1] > 0);
	d->noise_r = 1;
	if (o->norm == EMBER_DIFF_ABSOLUTE)
		d->noise_r = (d->scale[0] / noise_weight(d, 0)) / (d->scale[1] / noise_weight(d, 1));
}

/* The row of every key with samples in either run, in the order keys were
 * met; then the rows' counts of matched, added and removed keys.  0, or -1
 * on OOM. */
static int make_rows(struct ember_diff *d, const struct run_counts counts[2])
{
	uint32_t nkeys = ember_keys_count(d->keys);

	d->rows = calloc((size_t)nkeys + 1, sizeof(*d->rows));
	if (!d->rows)
		return -1;
	for (uint32_t i = 0; i < nkeys; i++) {
		uint64_t self[2], incl[2];
		for (int k = 0; k < 2; k++) {
			self[k] = i < counts[k].n ? counts[k].self[i] : 0;
			incl[k] = i < counts[k].n ? counts[k].incl[i] : 0;
		}
		if (!incl[0] && !incl[1])
			continue;   /* frames of stacks without samples */
		struct ember_diff_row *row = &d->rows[d->nrows++];
		row->key = ember_key_label(d->keys, i);
		memcpy(row->self, self, sizeof(row->self));
		memcpy(row->incl, incl, sizeof(row->incl));
		fill_row(row, d);
		if (row->status == EMBER_DIFF_CHANGED)
			d->matched++;
		else if (row->status == EMBER_DIFF_ADDED)
			d->only_new++;
		else
			d->only_base++;
	}
	return 0;
}

int ember_diff_build(struct ember_diff *d, const struct ember_profile *base, const struct ember_profile *new_,
		     const struct ember_diff_opts *o)
{
	const struct ember_profile *src[2] = { base, new_ };
	struct run_counts counts[2] = { { 0 } };
	int ret = -1;

	memset(d, 0, sizeof(*d));
	d->norm = o->norm;
	d->noise_test = o->norm == EMBER_DIFF_ABSOLUTE ? EMBER_DIFF_NOISE_COUNTS : EMBER_DIFF_NOISE_SHARES;
	d->by = o->by;
	d->noise_sigmas = o->noise_sigmas > 0 ? o->noise_sigmas : 2;
	d->nrenames = ember_diff_renames_count(o->renames);
	if (ember_profile_init(&d->run[0]) != 0)
		return -1;
	if (ember_profile_init(&d->run[1]) != 0) {
		ember_profile_free(&d->run[0]);
		return -1;
	}
	if (!(d->keys = ember_keys_new(o->by, EMBER_KEYS_MATCHING)))
		goto out;
	for (int k = 0; k < 2; k++)
		if (diff_canon_run(&d->run[k], src[k], o) < 0 ||
		    count_run(d->keys, &d->run[k], &counts[k], &d->python_share[k]) < 0)
			goto out;
	set_scales(d, o);
	if (make_rows(d, counts) < 0)
		goto out;
	d->kinds_differ = (d->python_share[0] > 0) != (d->python_share[1] > 0);
	d->few_matched = d->nrows && d->matched * 5 < d->nrows;
	ember_diff_sort(d, EMBER_DIFF_SORT_INCLUSIVE);
	ret = 0;
out:
	for (int k = 0; k < 2; k++) {
		free(counts[k].self);
		free(counts[k].incl);
	}
	if (ret < 0)
		ember_diff_free(d);
	return ret;
}

void ember_diff_free(struct ember_diff *d)
{
	ember_profile_free(&d->run[0]);
	ember_profile_free(&d->run[1]);
	free(d->rows);
	ember_keys_free(d->keys);
	memset(d, 0, sizeof(*d));
}

/* ---- sorting ---- */

/* |log ratio|: how far from "unchanged" a ratio is, either way; added and
 * removed keys are infinitely far. */
static double ratio_distance(const struct ember_diff_row *r)
{
	return r->status == EMBER_DIFF_CHANGED ? fabs(log(r->ratio)) : INFINITY;
}

static int cmp_desc(double a, double b)
{
	return a > b ? -1 : a < b;
}

static int cmp_rows(const void *x, const void *y, void *arg)
{
	const struct ember_diff_row *a = x, *b = y;
	enum ember_diff_sort by = *(const enum ember_diff_sort *)arg;
	int c = 0;

	switch (by) {
	case EMBER_DIFF_SORT_SELF:
		if (!(c = cmp_desc(fabs(a->self_delta), fabs(b->self_delta))))
			c = cmp_desc(fabs(a->incl_delta), fabs(b->incl_delta));
		break;
	case EMBER_DIFF_SORT_RATIO:
		if (!(c = cmp_desc(ratio_distance(a), ratio_distance(b))))
			c = cmp_desc(fabs(a->incl_delta), fabs(b->incl_delta));
		break;
	case EMBER_DIFF_SORT_NAME:
		break;
	default:
		if (!(c = cmp_desc(fabs(a->incl_delta), fabs(b->incl_delta))))
			c = cmp_desc(fabs(a->self_delta), fabs(b->self_delta));
		break;
	}
	return c ? c : strcmp(a->key, b->key);
}

void ember_diff_sort(struct ember_diff *d, enum ember_diff_sort by)
{
	qsort_r(d->rows, d->nrows, sizeof(*d->rows), cmp_rows, &by);
	d->sorted_by = by;
}
