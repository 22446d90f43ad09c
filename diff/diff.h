/* ember diff: compare two profiles of the same program (BASE, NEW).
 *
 * docs/consumers.md §7 has what existing diff tools do and where they
 * mislead; this module answers the three questions they get wrong:
 *
 *   - what is compared: each run's samples as a share of its own total
 *     ("which function's fraction of the run changed"; an overall speed-up
 *     is invisible), or absolute time (samples x the run's interval,
 *     optionally per iteration: "where did NEW save or lose time");
 *   - which frames are "the same": matching keys ignore line numbers by
 *     default and can be rewritten by rename rules, so that an FP32 and an
 *     INT8 kernel (or code that moved) still match;
 *   - whether a change is real: a change within a few standard errors is
 *     flagged as noise, by the test that fits what is compared: shares by a
 *     two-proportion (binomial) test, absolute seconds by a Poisson test
 *     on the sample counts (a key that kept its time is noise in seconds
 *     even when its share moved because others shrank).
 *
 * The comparison keeps two canonical copies of the runs (renamed, line
 * numbers dropped unless matching by line): the delta table is built from
 * them here, and the exporters draw the graphs and write the two-column
 * folded and pprof files from the same copies, so every output agrees.
 *
 * Run index 0 is BASE, 1 is NEW, everywhere.  A struct ember_diff belongs
 * to one thread; the input profiles are only read. */
#ifndef EMBER_DIFF_H
#define EMBER_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"
#include "report.h"

enum { EMBER_DIFF_BASE = 0, EMBER_DIFF_NEW = 1 };

enum ember_diff_norm {
	EMBER_DIFF_SHARE = 0,     /* percent of each run's own samples; deltas in percentage points */
	EMBER_DIFF_ABSOLUTE,      /* seconds (samples x interval), optionally per iteration */
};

/* How a key's change is tested against sampling noise: z = the change over
 * its standard error, noise when |z| <= noise_sigmas for both self and
 * inclusive samples. */
enum ember_diff_noise_test {
	EMBER_DIFF_NOISE_SHARES = 0,  /* share mode: p = samples / total per run, binomial, unpooled:
	                               * z = (pN - pB) / sqrt(pB(1-pB)/nB + pN(1-pN)/nN) */
	EMBER_DIFF_NOISE_COUNTS,      /* absolute mode: samples a (BASE), b (NEW), Poisson, r = the value of
	                               * one BASE sample over one NEW sample: z = (b - r a) / sqrt(b + r^2 a) */
};

enum ember_diff_sort {
	EMBER_DIFF_SORT_INCLUSIVE = 0,   /* |delta inclusive|, largest first */
	EMBER_DIFF_SORT_SELF,            /* |delta self|, largest first */
	EMBER_DIFF_SORT_RATIO,           /* |log(NEW / BASE)|, new and removed first */
	EMBER_DIFF_SORT_NAME,            /* key, bytewise */
};

enum ember_diff_status {
	EMBER_DIFF_CHANGED = 0,   /* in both runs (possibly by the same amount) */
	EMBER_DIFF_ADDED,         /* only in NEW */
	EMBER_DIFF_REMOVED,       /* only in BASE */
};

/* ---- rename.c: rules applied to frame names before matching ---- */

struct ember_diff_renames;

struct ember_diff_renames *ember_diff_renames_new(void);
void ember_diff_renames_free(struct ember_diff_renames *r);
/* Add "REGEX=REPLACEMENT": a POSIX extended regex, split at the first '='
 * not escaped as "\="; in REPLACEMENT, \0..\9 are the match and its groups
 * and "\\" is a backslash.  The first match in a name is replaced, as
 * sed 's/REGEX/REPLACEMENT/' does.  0, or -1 with one line in err. */
int ember_diff_renames_add(struct ember_diff_renames *r, const char *spec, char *err, size_t errlen);

/* ---- compare.c: the comparison ---- */

struct ember_diff_opts {
	enum ember_report_key by;         /* matching key: function (default), line, module */
	enum ember_diff_norm norm;
	double iterations[2];             /* absolute: divide each run by its iterations; 0 = not given */
	const struct ember_diff_renames *renames;   /* NULL: none */
	double noise_sigmas;              /* a change within this many standard errors is noise; 0 = 2 */
};

/* One matching key (function, line or module) in both runs. */
struct ember_diff_row {
	const char *key;                  /* display label, owned by the diff */
	uint64_t self[2], incl[2];        /* samples: leaf / anywhere on the stack (once per sample) */
	double self_v[2], incl_v[2];      /* the same in the diff's unit (percent or seconds) */
	double self_delta, incl_delta;    /* NEW - BASE, in the unit */
	double share_self[2], share_incl[2];   /* fractions of each run's samples */
	double se_self, se_incl;          /* standard error of the share differences (fractions), both modes */
	double z_self, z_incl;            /* the noise test's z (d->noise_test), NEW - BASE; +-INFINITY when
	                                   * the change is not 0 and its standard error is */
	double ratio;                     /* incl_v NEW / BASE; INFINITY when added, 0 when removed */
	enum ember_diff_status status;
	bool noise;                       /* |z_self| and |z_incl| <= noise_sigmas: no change beyond noise */
};

struct ember_diff {
	struct ember_profile run[2];      /* canonical copies: renamed, lines dropped unless by line */
	const char *name[2];              /* how outputs call the runs (e.g. file names); the caller's */
	uint64_t total[2];                /* samples */
	double interval_s[2];             /* one sample, seconds (10 ms assumed when unknown) */
	bool rate_known[2];               /* the input said its rate (folded input does not) */
	bool rates_differ;                /* the intervals differ: only time compares them */
	bool wall_clock[2];               /* record --idle: counts are time on and off CPU */
	uint64_t noise_n[2];              /* the samples the noise estimate takes each run for: its
	                                   * total, or a wall-clock run's time in sampling periods */
	double iterations[2];             /* absolute per-iteration divisors, 1 when not given */
	double scale[2];                  /* samples of run k x scale[k] = values in the unit */
	double noise_sigmas;
	enum ember_diff_noise_test noise_test;   /* shares in share mode, counts in absolute mode */
	double noise_r;                   /* the Poisson test's r: the value of one BASE sample over one NEW
	                                   * sample (1 at equal rates and iterations) */
	enum ember_diff_norm norm;
	enum ember_report_key by;
	enum ember_diff_sort sorted_by;   /* the rows' order */
	bool per_iteration;
	size_t nrenames;

	struct ember_diff_row *rows;
	size_t nrows;
	size_t matched, only_base, only_new;   /* keys in both runs / in one */
	double python_share[2];           /* fraction of samples with a Python frame */
	bool kinds_differ;                /* one run has Python frames, the other none */
	bool few_matched;                 /* under a fifth of the keys are in both runs */
	struct ember_keys *keys;          /* the matching keys of both runs: the rows' labels */
};

/* Compare base and new_ (read only; copied).  d->name stays NULL until the
 * caller sets it.  0, or -1 on OOM (d is then freed). */
int ember_diff_build(struct ember_diff *d, const struct ember_profile *base, const struct ember_profile *new_,
		     const struct ember_diff_opts *o);
void ember_diff_sort(struct ember_diff *d, enum ember_diff_sort by);
void ember_diff_free(struct ember_diff *d);

/* One line saying how the runs are compared, with both totals, for the
 * subtitle of a graph and the comments of a pprof file. */
void ember_diff_normalization(const struct ember_diff *d, char *buf, size_t size);

/* The noise test of d on one key's samples in BASE and NEW (self or
 * inclusive): its z, and whether |z| <= d->noise_sigmas.  diff is a
 * struct ember_diff (the shape of ember_diff_export_opts.within_noise, so
 * the graphs mark the same changes as noise as the table). */
double ember_diff_z(const struct ember_diff *d, uint64_t base, uint64_t new_);
bool ember_diff_within_noise(const void *diff, uint64_t base, uint64_t new_);

/* The noise rule in a few words: "Poisson test on sample counts, |z| <= 2"
 * or "two-proportion test on shares, |z| <= 2". */
void ember_diff_noise_rule(const struct ember_diff *d, char *buf, size_t size);

/* ---- delta_table.c: the delta table ---- */

enum ember_diff_table {
	EMBER_DIFF_TABLE_TERMINAL = 0,    /* aligned text, long keys shortened, controls as '?' */
	EMBER_DIFF_TABLE_TXT,             /* aligned text, keys whole */
	EMBER_DIFF_TABLE_CSV,             /* RFC 4180: a header row, then one row per key, nothing else */
	EMBER_DIFF_TABLE_MD,              /* a GitHub-flavoured Markdown table */
};

/* The first top rows in their current order (top 0: all); the text and
 * Markdown tables after a header (runs, totals, normalisation, matching,
 * noise test), the CSV with the per-row columns only (its unit and noise
 * test as columns).  0, or -1 with errno when writing failed. */
int ember_diff_write_table(FILE *out, const struct ember_diff *d, enum ember_diff_table fmt, size_t top);

#endif
