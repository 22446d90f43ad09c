/* Unit tests of `ember diff`: the comparison (diff/), the delta table, and
 * the differential writers (SVG, two-column folded, pprof) on synthetic
 * BASE/NEW profiles whose changes are known.
 *
 *   test_diff [--python PY]                 run the checks (PY validates the SVG XML)
 *   test_diff --write-svg FILE [--reverse]  write the differential SVG of the
 *                                           ranking profiles (for the browser test) */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "test_files.h"
#include "diff.h"
#include "diff_internal.h"
#include "exporters.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) < 1e-9 * (1 + fabs((double)(b))))

/* ---- building profiles from text ---- */

/* One frame: "name" is native (module "app"), "name (file.py:12)" Python,
 * "name@mod.so" native in module mod.so, "name#file.c:N" native with a
 * source line. */
static uint32_t frame_of(struct ember_profile *p, const char *spec)
{
	char buf[256], *open, *at, *hash;
	struct ember_frame f = { .kind = EMBER_FRAME_NATIVE, .file = "", .module = "app" };

	snprintf(buf, sizeof(buf), "%s", spec);
	f.name = buf;
	size_t n = strlen(buf);
	if (n && buf[n - 1] == ')' && (open = strstr(buf, " ("))) {
		char *colon = strrchr(open, ':');
		f.kind = EMBER_FRAME_PYTHON;
		f.module = "";
		*open = '\0';
		buf[n - 1] = '\0';
		if (colon) {
			*colon = '\0';
			f.line = (uint32_t)atoi(colon + 1);
		}
		f.file = open + 2;
	} else if ((at = strchr(buf, '@'))) {
		*at = '\0';
		f.module = at + 1;
	} else if ((hash = strchr(buf, '#'))) {
		char *colon = strrchr(hash, ':');
		*hash = '\0';
		if (colon) {
			*colon = '\0';
			f.line = (uint32_t)atoi(colon + 1);
		}
		f.file = hash + 1;
	}
	return ember_profile_frame(p, &f);
}

/* "a;b;c" with count samples on thread 1. */
static void add(struct ember_profile *p, const char *stack, uint64_t count)
{
	char buf[1024];
	uint32_t ids[64], n = 0;

	snprintf(buf, sizeof(buf), "%s", stack);
	for (char *save = NULL, *tok = strtok_r(buf, ";", &save); tok && n < 64; tok = strtok_r(NULL, ";", &save))
		ids[n++] = frame_of(p, tok);
	uint32_t st = ember_profile_stack(p, ids, n), th = ember_profile_thread(p, 1, 1, "main");
	CHECK(st != UINT32_MAX && th != UINT32_MAX && ember_profile_add(p, st, th, count) == 0);
}

static void init(struct ember_profile *p, uint32_t hz)
{
	CHECK(ember_profile_init(p) == 0);
	p->meta.freq_hz = hz;
}

/* The ranking pair: NEW has twice the samples, so shares are what moved.
 *   grow    20%  -> 40%   (+20 pp)     shrink 40% -> 20%  (-20 pp)
 *   steady  29%  -> 29%                 gone   10% -> 0     (removed)
 *   fresh    0   -> 9.95% (new)         jitter  1% -> 1.05% (+0.05 pp: noise) */
static void ranking_pair(struct ember_profile *b, struct ember_profile *n)
{
	init(b, 100);
	init(n, 100);
	add(b, "main;work;grow", 2000);
	add(b, "main;work;shrink", 4000);
	add(b, "main;work;steady", 2900);
	add(b, "main;gone", 1000);
	add(b, "main;jitter", 100);
	add(n, "main;work;grow", 8000);
	add(n, "main;work;shrink", 4000);
	add(n, "main;work;steady", 5800);
	add(n, "main;fresh", 1990);
	add(n, "main;jitter", 210);
}

static const struct ember_diff_row *row_of(const struct ember_diff *d, const char *key)
{
	for (size_t i = 0; i < d->nrows; i++)
		if (strcmp(d->rows[i].key, key) == 0)
			return &d->rows[i];
	return NULL;
}

static void free_pair(struct ember_profile *b, struct ember_profile *n)
{
	ember_profile_free(b);
	ember_profile_free(n);
}

/* ---- the comparison ---- */

static void test_ranking_share(void)
{
	struct ember_profile b, n;
	struct ember_diff d;
	struct ember_diff_opts o = { 0 };

	ranking_pair(&b, &n);
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	static const char *const order[] = { "grow", "shrink", "gone", "fresh", "jitter", "main", "steady", "work" };
	CHECK(d.nrows == 8);
	for (size_t i = 0; i < 8 && i < d.nrows; i++)
		CHECK_STR(d.rows[i].key, order[i]);
	CHECK(d.total[0] == 10000 && d.total[1] == 20000);
	CHECK(d.matched == 6 && d.only_base == 1 && d.only_new == 1);
	CHECK_STR(ember_diff_unit(&d), "%");

	const struct ember_diff_row *r = row_of(&d, "grow");
	CHECK(r && r->self[0] == 2000 && r->self[1] == 8000 && r->incl[0] == 2000 && r->incl[1] == 8000);
	CHECK(r && NEAR(r->self_v[0], 20) && NEAR(r->self_v[1], 40) && NEAR(r->incl_delta, 20));
	CHECK(r && NEAR(r->ratio, 2) && r->status == EMBER_DIFF_CHANGED && !r->noise);
	r = row_of(&d, "shrink");
	CHECK(r && NEAR(r->incl_delta, -20) && NEAR(r->ratio, 0.5) && !r->noise);
	r = row_of(&d, "gone");
	CHECK(r && r->status == EMBER_DIFF_REMOVED && r->ratio == 0 && NEAR(r->incl_delta, -10) && !r->noise);
	r = row_of(&d, "fresh");
	CHECK(r && r->status == EMBER_DIFF_ADDED && isinf(r->ratio) && NEAR(r->incl_delta, 9.95) && !r->noise);
	r = row_of(&d, "jitter");
	/* se = sqrt(.01*.99/10000 + .0105*.9895/20000) = 0.00123: 0.05 pp is noise */
	CHECK(r && NEAR(r->incl_delta, 0.05) && r->noise);
	CHECK(r && NEAR(r->se_incl, sqrt(0.01 * 0.99 / 10000 + 0.0105 * 0.9895 / 20000)));
	r = row_of(&d, "work");
	CHECK(r && NEAR(r->incl_v[0], 89) && NEAR(r->incl_delta, 0) && r->noise && NEAR(r->self_v[0], 0));
	CHECK(!d.rates_differ && !d.kinds_differ && !d.few_matched);

	ember_diff_sort(&d, EMBER_DIFF_SORT_NAME);
	CHECK_STR(d.rows[0].key, "fresh");
	CHECK_STR(d.rows[d.nrows - 1].key, "work");
	ember_diff_sort(&d, EMBER_DIFF_SORT_RATIO);
	/* added and removed first (infinitely far), then x2 and x0.5 */
	CHECK_STR(d.rows[0].key, "gone");
	CHECK_STR(d.rows[1].key, "fresh");
	CHECK_STR(d.rows[2].key, "grow");
	CHECK_STR(d.rows[3].key, "shrink");
	ember_diff_sort(&d, EMBER_DIFF_SORT_SELF);
	CHECK_STR(d.rows[0].key, "grow");
	CHECK_STR(d.rows[d.nrows - 1].key, "work");   /* no self time at all */
	ember_diff_free(&d);
	free_pair(&b, &n);
}

/* A change inside two binomial standard errors is noise; one far outside
 * is not.  p = 0.5 in 10,000 samples each: se = 0.707 pp, 2 se = 1.41 pp. */
static void test_noise(void)
{
	static const struct { uint64_t new_hits; bool noise; } cases[] = {
		{ 5100, true }, { 5140, true }, { 5150, false }, { 5300, false }, { 4700, false }, { 4900, true },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ember_profile b, n;
		struct ember_diff d;
		struct ember_diff_opts o = { 0 };
		init(&b, 99);
		init(&n, 99);
		add(&b, "main;f", 5000);
		add(&b, "main;g", 5000);
		add(&n, "main;f", cases[i].new_hits);
		add(&n, "main;g", 10000 - cases[i].new_hits);
		CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
		const struct ember_diff_row *r = row_of(&d, "f");
		CHECK(r && NEAR(r->se_incl, sqrt(0.25 / 10000 + (cases[i].new_hits / 1e4) * (1 - cases[i].new_hits / 1e4) / 1e4)));
		CHECK(r && r->noise == cases[i].noise);
		if (r && r->noise != cases[i].noise)
			fprintf(stderr, "  noise case %zu: %llu hits, delta %.3f pp, se %.3f pp\n", i,
				(unsigned long long)cases[i].new_hits, r->incl_delta, 100 * r->se_incl);
		/* and with 3 standard errors the 1.5 pp change is noise again */
		ember_diff_free(&d);
		o.noise_sigmas = 3;
		CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
		r = row_of(&d, "f");
		if (cases[i].new_hits == 5150)
			CHECK(r && r->noise);
		ember_diff_free(&d);
		free_pair(&b, &n);
	}
}

static void test_absolute(void)
{
	struct ember_profile b, n;
	struct ember_diff d;
	struct ember_diff_opts o = { .norm = EMBER_DIFF_ABSOLUTE };

	ranking_pair(&b, &n);
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	const struct ember_diff_row *r = row_of(&d, "grow");
	/* 100 Hz: 2000 samples = 20 s, 8000 = 80 s */
	CHECK(r && NEAR(r->incl_v[0], 20) && NEAR(r->incl_v[1], 80) && NEAR(r->incl_delta, 60) && NEAR(r->ratio, 4));
	CHECK(r && !r->noise && d.noise_test == EMBER_DIFF_NOISE_COUNTS && NEAR(d.noise_r, 1));
	r = row_of(&d, "shrink");
	CHECK(r && NEAR(r->incl_delta, 0) && NEAR(r->ratio, 1));
	/* 40 s in both runs: noise in seconds, though its share halved */
	CHECK(r && r->noise && r->z_incl == 0);
	CHECK_STR(ember_diff_unit(&d), "s");
	CHECK_STR(d.rows[0].key, "main");   /* +100 s: the whole run grew */
	ember_diff_free(&d);

	/* per iteration: BASE did 10, NEW 40 */
	o.iterations[0] = 10;
	o.iterations[1] = 40;
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	r = row_of(&d, "grow");
	CHECK(r && NEAR(r->incl_v[0], 2) && NEAR(r->incl_v[1], 2) && NEAR(r->incl_delta, 0));
	r = row_of(&d, "shrink");
	CHECK(r && NEAR(r->incl_v[0], 4) && NEAR(r->incl_v[1], 1) && NEAR(r->ratio, 0.25));
	CHECK(d.per_iteration);
	CHECK_STR(ember_diff_unit(&d), "s/iteration");
	char line[512];
	ember_diff_normalization(&d, line, sizeof(line));
	CHECK(strstr(line, "per iteration") != NULL);
	ember_diff_free(&d);
	free_pair(&b, &n);
}

/* Absolute mode tests the counts (Poisson), share mode the shares.  BASE
 * steady 1000 + drop 500, NEW steady 1010 + drop 100, at the same rate:
 * steady kept its time (z = 10 / sqrt(2010) = 0.22) but its share went
 * from 66.7% to 91.0% because drop shrank. */
static void test_noise_counts_vs_shares(void)
{
	struct ember_profile b, n;
	struct ember_diff d;
	struct ember_diff_opts o = { .norm = EMBER_DIFF_ABSOLUTE };

	init(&b, 100);
	init(&n, 100);
	add(&b, "main;steady", 1000);
	add(&b, "main;drop", 500);
	add(&n, "main;steady", 1010);
	add(&n, "main;drop", 100);
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	const struct ember_diff_row *r = row_of(&d, "steady");
	CHECK(r && r->noise && NEAR(r->z_incl, 10 / sqrt(2010)) && NEAR(r->z_self, 10 / sqrt(2010)));
	r = row_of(&d, "drop");
	CHECK(r && !r->noise && NEAR(r->z_incl, -400 / sqrt(600)));
	ember_diff_free(&d);

	o.norm = EMBER_DIFF_SHARE;
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	CHECK(d.noise_test == EMBER_DIFF_NOISE_SHARES);
	double pb = 1000.0 / 1500, pn = 1010.0 / 1110;
	double z = (pn - pb) / sqrt(pb * (1 - pb) / 1500 + pn * (1 - pn) / 1110);   /* 16.3 */
	r = row_of(&d, "steady");
	CHECK(r && !r->noise && NEAR(r->z_incl, z) && z > 16);
	r = row_of(&d, "drop");
	CHECK(r && !r->noise && NEAR(r->z_incl, -z));   /* the two shares move by the same amount */
	ember_diff_free(&d);
	free_pair(&b, &n);
}

/* The Poisson test at its threshold: f has a samples in BASE and b in NEW
 * (and g the rest); z = (b - r a) / sqrt(b + r^2 a), noise when |z| <= 2.
 * r = 1 at equal rates; r = 2 when NEW did twice BASE's iterations (one
 * NEW sample is half the seconds per iteration of one BASE sample). */
static void test_noise_counts_threshold(void)
{
	static const struct { uint64_t a, b; double iter_new, z; bool noise; } cases[] = {
		{ 4950, 5050, 1, 1.0, true },  { 4905, 5095, 1, 1.9, true },   { 4900, 5100, 1, 2.0, true },
		{ 4895, 5105, 1, 2.1, false }, { 4850, 5150, 1, 3.0, false },  { 5150, 4850, 1, -3.0, false },
		{ 2000, 4000, 2, 0.0, true },  { 2000, 4100, 2, 100 / 110.0, true }, { 2000, 3600, 2, -400 / sqrt(11600), false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ember_profile b, n;
		struct ember_diff d;
		struct ember_diff_opts o = { .norm = EMBER_DIFF_ABSOLUTE, .iterations = { 1, cases[i].iter_new } };
		init(&b, 100);
		init(&n, 100);
		add(&b, "main;f", cases[i].a);
		add(&b, "main;g", 3000);
		add(&n, "main;f", cases[i].b);
		add(&n, "main;g", 7000);
		CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
		CHECK(d.noise_r == cases[i].iter_new);
		const struct ember_diff_row *r = row_of(&d, "f");
		CHECK(r && NEAR(r->z_incl, cases[i].z) && r->noise == cases[i].noise);
		if (r && (r->noise != cases[i].noise || !NEAR(r->z_incl, cases[i].z)))
			fprintf(stderr, "  Poisson case %zu: %llu -> %llu, z %.6f (want %.6f)\n", i,
				(unsigned long long)cases[i].a, (unsigned long long)cases[i].b, r->z_incl, cases[i].z);
		CHECK(ember_diff_within_noise(&d, cases[i].a, cases[i].b) == cases[i].noise);
		ember_diff_free(&d);
		free_pair(&b, &n);
	}
}

/* BASE at 100 Hz, NEW at 1000 Hz with 10x the samples: the same time. */
static void test_rates_differ(void)
{
	struct ember_profile b, n;
	struct ember_diff d;
	struct ember_diff_opts o = { .norm = EMBER_DIFF_ABSOLUTE };

	init(&b, 100);
	init(&n, 1000);
	add(&b, "main;a", 300);
	add(&b, "main;b", 100);
	add(&n, "main;a", 3000);
	add(&n, "main;b", 1500);
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	CHECK(d.rates_differ);
	const struct ember_diff_row *r = row_of(&d, "a");
	CHECK(r && NEAR(r->incl_v[0], 3) && NEAR(r->incl_v[1], 3) && NEAR(r->incl_delta, 0));
	r = row_of(&d, "b");
	CHECK(r && NEAR(r->incl_v[0], 1) && NEAR(r->incl_v[1], 1.5) && NEAR(r->incl_delta, 0.5));
	char line[512];
	ember_diff_normalization(&d, line, sizeof(line));
	CHECK(strstr(line, "rates differ") != NULL);
	FILE *f = tmpfile();
	CHECK(f && ember_diff_write_table(f, &d, EMBER_DIFF_TABLE_TXT, 0) == 0);
	if (f) {
		char buf[4096] = "";
		rewind(f);
		size_t got = fread(buf, 1, sizeof(buf) - 1, f);
		buf[got] = '\0';
		CHECK(strstr(buf, "\nsampling rates differ: compared by time") != NULL);
		/* one BASE sample is 10 ms, one NEW sample 1 ms */
		CHECK(strstr(buf, "r = 10 (s of one BASE sample / of one NEW sample)") != NULL);
		fclose(f);
	}
	/* b: 100 samples x 10 -> 1500 samples: z = (1500 - 1000) / sqrt(1500 + 100 x 100) */
	CHECK(r && NEAR(r->z_incl, 500 / sqrt(11500)) && !r->noise);
	ember_diff_free(&d);

	/* share mode: shares do not depend on the rate at all */
	o.norm = EMBER_DIFF_SHARE;
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	r = row_of(&d, "a");
	CHECK(r && NEAR(r->incl_v[0], 75) && NEAR(r->incl_v[1], 100.0 * 3000 / 4500));
	ember_diff_free(&d);
	free_pair(&b, &n);
}

static void test_by_keys(void)
{
	struct ember_profile b, n;
	struct ember_diff d;
	struct ember_diff_opts o = { 0 };

	init(&b, 99);
	init(&n, 99);
	add(&b, "main#app.c:5;f#app.c:10", 100);
	add(&b, "main#app.c:5;run (job.py:3)", 50);
	add(&b, "main#app.c:5;memcpy@libc.so.6", 50);
	add(&n, "main#app.c:5;f#app.c:20", 100);
	add(&n, "main#app.c:5;run (job.py:7)", 50);
	add(&n, "main#app.c:5;run (other.py:7)", 25);
	add(&n, "main#app.c:5;memcpy@libc.so.6", 25);
	/* by function: lines ignored, Python functions keep their file */
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	CHECK(row_of(&d, "f") && row_of(&d, "f")->status == EMBER_DIFF_CHANGED);
	CHECK(row_of(&d, "run (job.py)") && row_of(&d, "run (job.py)")->status == EMBER_DIFF_CHANGED);
	CHECK(row_of(&d, "run (other.py)") && row_of(&d, "run (other.py)")->status == EMBER_DIFF_ADDED);
	CHECK(d.nrows == 5);
	ember_diff_free(&d);
	/* by line: the moved lines are different keys */
	o.by = EMBER_REPORT_BY_LINE;
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	CHECK(row_of(&d, "f (app.c:10)") && row_of(&d, "f (app.c:10)")->status == EMBER_DIFF_REMOVED);
	CHECK(row_of(&d, "f (app.c:20)") && row_of(&d, "f (app.c:20)")->status == EMBER_DIFF_ADDED);
	CHECK(row_of(&d, "run (job.py:3)") && row_of(&d, "run (job.py:7)"));
	CHECK(row_of(&d, "main (app.c:5)") && row_of(&d, "main (app.c:5)")->status == EMBER_DIFF_CHANGED);
	ember_diff_free(&d);
	/* by module: native module, Python file */
	o.by = EMBER_REPORT_BY_MODULE;
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	const struct ember_diff_row *r = row_of(&d, "libc.so.6");
	CHECK(r && r->self[0] == 50 && r->self[1] == 25);
	r = row_of(&d, "app");
	CHECK(r && r->incl[0] == 200 && r->incl[1] == 200 && r->self[0] == 100);
	CHECK(row_of(&d, "job.py") && row_of(&d, "other.py"));
	CHECK(d.nrows == 4);
	ember_diff_free(&d);
	free_pair(&b, &n);
}

static void test_renames(void)
{
	struct ember_diff_renames *r = ember_diff_renames_new();
	char err[256], *buf = NULL;
	size_t cap = 0;

	CHECK(r && ember_diff_renames_add(r, "fbgemm::.*=GEMM", err, sizeof(err)) == 0);
	CHECK(ember_diff_renames_add(r, "sgemm.*=GEMM", err, sizeof(err)) == 0);
	CHECK(ember_diff_renames_add(r, "([a-z]+)_(fp32|int8)$=\\1<\\2>", err, sizeof(err)) == 0);
	CHECK(ember_diff_renames_add(r, "^x\\=y=eq\\\\", err, sizeof(err)) == 0);
	CHECK(ember_diff_renames_count(r) == 4);
	CHECK_STR(ember_diff_renames_apply(r, "fbgemm::PackAWithRowOffset<unsigned char, int>::pack", &buf, &cap), "GEMM");
	CHECK_STR(ember_diff_renames_apply(r, "sgemm_kernel_SKYLAKEX", &buf, &cap), "GEMM");
	CHECK_STR(ember_diff_renames_apply(r, "at::matmul_int8", &buf, &cap), "at::matmul<int8>");
	CHECK_STR(ember_diff_renames_apply(r, "x=y:z", &buf, &cap), "eq\\:z");
	const char *same = "main";
	CHECK(ember_diff_renames_apply(r, same, &buf, &cap) == same);
	CHECK(ember_diff_renames_add(r, "no-equals-sign", err, sizeof(err)) < 0 && strstr(err, "REGEX=REPLACEMENT"));
	CHECK(ember_diff_renames_add(r, "(unclosed=x", err, sizeof(err)) < 0 && strstr(err, "bad regular expression"));
	CHECK(ember_diff_renames_add(r, "a(b)=\\2", err, sizeof(err)) < 0 && strstr(err, "group"));
	CHECK(ember_diff_renames_add(r, "=x", err, sizeof(err)) < 0);
	CHECK(ember_diff_renames_count(r) == 4);

	/* renamed kernels match: FP32 sgemm in BASE, fbgemm in NEW */
	struct ember_profile b, n;
	struct ember_diff d;
	struct ember_diff_opts o = { 0 };
	init(&b, 99);
	init(&n, 99);
	add(&b, "main;linear;sgemm_kernel_SKYLAKEX", 600);
	add(&b, "main;other", 400);
	add(&n, "main;linear;fbgemm::PackAWithRowOffset<unsigned char, int>::pack", 300);
	add(&n, "main;linear;fbgemm::ExecuteKernel<int>::execute", 100);
	add(&n, "main;other", 400);
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	CHECK(d.only_base == 1 && d.only_new == 2 && !row_of(&d, "GEMM"));
	ember_diff_free(&d);
	o.renames = r;
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	const struct ember_diff_row *g = row_of(&d, "GEMM");
	CHECK(g && g->status == EMBER_DIFF_CHANGED && g->self[0] == 600 && g->self[1] == 400);
	CHECK(d.only_base == 0 && d.only_new == 0 && d.nrenames == 4);
	/* the canonical copies carry the new name: the graphs match too */
	bool found = false;
	for (uint32_t i = 0; i < ember_profile_nframes(&d.run[1]); i++)
		found |= strcmp(ember_profile_frame_at(&d.run[1], i)->name, "GEMM") == 0;
	CHECK(found);
	ember_diff_free(&d);
	free_pair(&b, &n);
	ember_diff_renames_free(r);
	free(buf);
}

static void test_kinds(void)
{
	struct ember_profile b, n;
	struct ember_diff d;
	struct ember_diff_opts o = { 0 };

	init(&b, 99);
	init(&n, 99);
	add(&b, "_start;main;compute", 100);
	add(&b, "_start;main;io", 50);
	add(&n, "<module> (app.py:1);compute (app.py:5)", 100);
	add(&n, "<module> (app.py:1);io (app.py:9)", 20);
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	CHECK(d.kinds_differ && d.python_share[0] == 0 && NEAR(d.python_share[1], 1));
	CHECK(d.matched == 0 && d.nrows == 7);
	FILE *f = tmpfile();
	CHECK(f && ember_diff_write_table(f, &d, EMBER_DIFF_TABLE_TXT, 0) == 0);
	if (f) {
		char buf[8192] = "";
		rewind(f);
		buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
		CHECK(strstr(buf, "warning: NEW has Python frames") != NULL);
		fclose(f);
	}
	ember_diff_free(&d);
	free_pair(&b, &n);
}

/* ---- the outputs ---- */

static char *read_all(FILE *f)
{
	long n;
	char *s;

	fflush(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	s = calloc((size_t)n + 1, 1);
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n)
		s[0] = '\0';
	fclose(f);
	return s;
}

static void test_tables(void)
{
	struct ember_profile b, n;
	struct ember_diff d;
	struct ember_diff_opts o = { 0 };

	ranking_pair(&b, &n);
	add(&n, "main;a|b<c>`d\x01", 3);   /* 3 samples: within 2 SE of nothing */
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	d.name[0] = "base.folded";
	d.name[1] = "new.folded";

	FILE *f = tmpfile();
	CHECK(ember_diff_write_table(f, &d, EMBER_DIFF_TABLE_CSV, 0) == 0);
	char *csv = read_all(f);
	/* data only: the header row first, no comment lines */
	CHECK(csv && strncmp(csv, "key,status,noise,unit,self_base,", 32) == 0 && !strstr(csv, "\n#"));
	CHECK(csv && strstr(csv, ",incl_new_samples,noise_test,self_z,incl_z\n\"") != NULL);
	CHECK(csv && strstr(csv, ",2000,8000,2000,8000,two_proportion_shares,") != NULL);
	CHECK(csv && strstr(csv, "\n\"grow\",changed,no,percent,20,39.99") != NULL);
	CHECK(csv && strstr(csv, "\n\"fresh\",new,no,percent,0,9.94") != NULL);
	CHECK(csv && strstr(csv, ",inf,") != NULL);
	CHECK(csv && strstr(csv, "\n\"a|b<c>`d?\",new,yes,") != NULL);
	free(csv);

	f = tmpfile();
	CHECK(ember_diff_write_table(f, &d, EMBER_DIFF_TABLE_MD, 0) == 0);
	char *md = read_all(f);
	CHECK(md && strstr(md, "## ember diff: base.folded \xe2\x86\x92 new.folded") != NULL);
	CHECK(md && strstr(md, "\n- BASE: base.folded: 10,000 samples at 100 Hz") != NULL);
	CHECK(md && strstr(md, "\n- normalization: share") != NULL);
	CHECK(md && strstr(md, "\n- noise: two-proportion test on shares, |z| <= 2 ") != NULL);
	CHECK(md && strstr(md, "\n| `grow` | 20.00% | 39.99% | +19.99pp |") != NULL);
	CHECK(md && strstr(md, "| `` a\\|b<c>`d? `` |") != NULL);
	CHECK(md && strstr(md, "| removed |") != NULL);
	free(md);

	f = tmpfile();
	CHECK(ember_diff_write_table(f, &d, EMBER_DIFF_TABLE_TERMINAL, 3) == 0);
	char *txt = read_all(f);
	CHECK(txt && strstr(txt, "ember: top 3 of 9 keys") != NULL);
	CHECK(txt && strstr(txt, "ember: noise: two-proportion test on shares, |z| <= 2 ") != NULL);
	CHECK(txt && strstr(txt, "grow\n") && strstr(txt, "shrink\n") && !strstr(txt, "jitter\n"));
	free(txt);
	ember_diff_free(&d);
	free_pair(&b, &n);
}

static struct ember_diff_export_opts export_opts(const struct ember_diff *d, bool reverse)
{
	return (struct ember_diff_export_opts){
		.base_name = "base.folded", .new_name = "new.folded", .normalization = "share (test)",
		.scale = { d->scale[0], d->scale[1] }, .share = d->norm == EMBER_DIFF_SHARE, .reverse = reverse,
		.within_noise = ember_diff_within_noise, .noise_ctx = d,
	};
}

/* The fill of the first frame whose tooltip starts with "name (". */
static const char *fill_of(const char *svg, const char *name, char out[8])
{
	char pat[128];
	snprintf(pat, sizeof(pat), "<title>%s (", name);
	const char *t = strstr(svg, pat), *f = t ? strstr(t, "fill=\"") : NULL;
	if (!f)
		return NULL;
	memcpy(out, f + 6, 7);
	out[7] = '\0';
	return out;
}

static void test_writers(const char *python)
{
	struct ember_profile b, n;
	struct ember_diff d;
	struct ember_diff_opts o = { 0 };
	char fill[8];

	ranking_pair(&b, &n);
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	struct ember_diff_export_opts eo = export_opts(&d, false);

	FILE *f = tmpfile();
	CHECK(ember_write_folded_diff(f, &d.run[0], &d.run[1], &eo) == 0);
	char *folded = read_all(f);
	/* BASE x 2 (NEW has twice the samples), bytewise order */
	CHECK_STR(folded, "main;fresh 0 1990\nmain;gone 2000 0\nmain;jitter 200 210\nmain;work;grow 4000 8000\n"
			  "main;work;shrink 8000 4000\nmain;work;steady 5800 5800\n");
	free(folded);

	f = tmpfile();
	CHECK(ember_write_svg_diff(f, &d.run[0], &d.run[1], &eo) == 0);
	char *svg = read_all(f);
	CHECK(svg && fill_of(svg, "grow", fill) && strcmp(fill, "#ff0000") == 0);    /* the largest growth */
	CHECK(svg && fill_of(svg, "shrink", fill) && strcmp(fill, "#0000ff") == 0);  /* the largest drop */
	CHECK(svg && fill_of(svg, "steady", fill) && strcmp(fill, "#ffffff") == 0);
	CHECK(svg && fill_of(svg, "fresh", fill) && strcmp(fill, "#ff6969") == 0);   /* +9.95 of 20 pp */
	CHECK(svg && !strstr(svg, "<title>gone ("));                                 /* no width in NEW */
	CHECK(svg && strstr(svg, "<title>grow (self 20.00% \xe2\x86\x92 40.00%, \xce\x94 +20.00 pp; incl 20.00% "
				 "\xe2\x86\x92 40.00%, \xce\x94 +20.00 pp; 8,000 samples in NEW)</title>"));
	CHECK(svg && strstr(svg, "<title>jitter (self 1.00% \xe2\x86\x92 1.05%, \xce\x94 +0.05 pp, within noise;"));
	CHECK(svg && strstr(svg, "full colour \xc2\xb1" "20.00 pp (largest change)"));
	CHECK(svg && strstr(svg, "id=\"difflegend\"") && strstr(svg, "id=\"legend\""));
	CHECK(svg && strstr(svg, "ember diff: base.folded \xe2\x86\x92 new.folded"));
	if (svg && python) {
		char path[] = "/tmp/test_diff_XXXXXX.svg", cmd[512];
		int fd = mkstemps(path, 4);
		CHECK(fd >= 0 && write(fd, svg, strlen(svg)) == (ssize_t)strlen(svg));
		if (fd >= 0)
			close(fd);
		snprintf(cmd, sizeof(cmd), "%s -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' %s", python, path);
		CHECK(system(cmd) == 0);
		unlink(path);
	}
	free(svg);

	eo = export_opts(&d, true);
	f = tmpfile();
	CHECK(ember_write_svg_diff(f, &d.run[0], &d.run[1], &eo) == 0);
	svg = read_all(f);
	CHECK(svg && fill_of(svg, "gone", fill) && fill[0] == '#' && strcmp(fill + 5, "ff") == 0 && fill[1] != 'f');
	CHECK(svg && !strstr(svg, "<title>fresh ("));
	CHECK(svg && strstr(svg, "samples in BASE)") && strstr(svg, "(reverse view)"));
	free(svg);

	f = tmpfile();
	eo = export_opts(&d, false);
	CHECK(ember_write_pprof_diff(f, &d.run[0], &d.run[1], &eo) == 0);
	char *pb = read_all(f);
	CHECK(pb && (unsigned char)pb[0] == 0x1f && (unsigned char)pb[1] == 0x8b);
	free(pb);
	ember_diff_free(&d);

	/* absolute: the graph marks noise as the table does, by the counts:
	 * shrink kept its 40 s (white) though its share halved (blue above) */
	o.norm = EMBER_DIFF_ABSOLUTE;
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	eo = export_opts(&d, false);
	f = tmpfile();
	CHECK(ember_write_svg_diff(f, &d.run[0], &d.run[1], &eo) == 0);
	svg = read_all(f);
	CHECK(svg && fill_of(svg, "shrink", fill) && strcmp(fill, "#ffffff") == 0);
	CHECK(svg && fill_of(svg, "grow", fill) && strcmp(fill, "#ff0000") == 0);   /* +60 s, the largest */
	CHECK(svg && strstr(svg, "<title>shrink (self 40.000 s \xe2\x86\x92 40.000 s, \xce\x94 +0.000 s, within noise;"));
	free(svg);
	ember_diff_free(&d);
	free_pair(&b, &n);
}

/* BASE and NEW of one stack of depth frames ("lvl0".."lvl99", cycled, then
 * "deepest"), count samples, and "main" with 2. */
static void deep_run(struct ember_profile *p, uint32_t depth, uint64_t count)
{
	uint32_t *ids = malloc((size_t)depth * sizeof(*ids));
	char name[16];

	init(p, 100);
	CHECK(ids != NULL);
	if (!ids)
		return;
	for (uint32_t i = 0; i + 1 < depth; i++) {
		snprintf(name, sizeof(name), "lvl%u", i % 100);
		ids[i] = frame_of(p, name);
	}
	ids[depth - 1] = frame_of(p, "deepest");
	uint32_t st = ember_profile_stack(p, ids, depth), th = ember_profile_thread(p, 1, 1, "main");
	CHECK(st != UINT32_MAX && ember_profile_add(p, st, th, count) == 0);
	add(p, "main", 2);
	free(ids);
}

/* 100,000 frames in one stack: the comparison, the table and every
 * differential writer go through it without recursion. */
static void test_deep(void)
{
	enum { DEPTH = 100000 };
	struct ember_profile b, n;
	struct ember_diff d;
	struct ember_diff_opts o = { 0 };

	deep_run(&b, DEPTH, 2);
	deep_run(&n, DEPTH, 6);
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	const struct ember_diff_row *r = row_of(&d, "deepest");
	CHECK(r && r->self[0] == 2 && r->self[1] == 6 && NEAR(r->share_self[0], 0.5) && NEAR(r->share_self[1], 0.75));
	r = row_of(&d, "lvl0");   /* a thousand times on the stack, counted once a sample */
	CHECK(r && r->incl[0] == 2 && r->incl[1] == 6 && r->self[1] == 0);
	struct ember_diff_export_opts eo = export_opts(&d, false);

	FILE *f = tmpfile();
	CHECK(ember_diff_write_table(f, &d, EMBER_DIFF_TABLE_CSV, 0) == 0);
	char *text = read_all(f);
	CHECK(text && strstr(text, "\n\"deepest\",changed,"));
	free(text);

	f = tmpfile();
	CHECK(ember_write_svg_diff(f, &d.run[0], &d.run[1], &eo) == 0);
	text = read_all(f);
	/* the root, DEPTH frames of the tower, main */
	CHECK(text && count_of(text, "<g class=\"k") == DEPTH + 2);
	CHECK(text && strstr(text, "<title>deepest (self 50.00% \xe2\x86\x92 75.00%"));
	free(text);

	f = tmpfile();
	CHECK(ember_write_folded_diff(f, &d.run[0], &d.run[1], &eo) == 0);
	text = read_all(f);
	const char *tail = text ? strstr(text, ";deepest ") : NULL;
	CHECK(tail && strcmp(tail, ";deepest 4 6\nmain 4 2\n") == 0);   /* BASE x 2: 4 samples, NEW 8 */
	CHECK(text && count_of(text, ";") == DEPTH - 1);
	free(text);

	f = tmpfile();
	CHECK(ember_write_pprof_diff(f, &d.run[0], &d.run[1], &eo) == 0);
	fseek(f, 0, SEEK_END);
	CHECK(ftell(f) > 20);
	fclose(f);
	ember_diff_free(&d);
	free_pair(&b, &n);
}

/* Two runs of 9e18 samples each, near the limit of one profile (2^63 - 1):
 * together they pass it, yet the differential outputs keep every count of
 * both (their union holds twice the limit). */
static void test_huge_counts(void)
{
	struct ember_profile b, n;
	struct ember_diff d;
	struct ember_diff_opts o = { 0 };

	init(&b, 100);
	init(&n, 100);
	add(&b, "main", 9000000000000000000ull);
	add(&n, "main", 6000000000000000000ull);
	add(&n, "main;work", 3000000000000000000ull);
	CHECK(!ember_profile_saturated(&b) && !ember_profile_saturated(&n));
	CHECK(ember_diff_build(&d, &b, &n, &o) == 0);
	const struct ember_diff_row *r = row_of(&d, "work");
	CHECK(r && r->self[0] == 0 && r->self[1] == 3000000000000000000ull && NEAR(r->share_self[1], 1.0 / 3));
	struct ember_diff_export_opts eo = export_opts(&d, false);

	FILE *f = tmpfile();
	CHECK(ember_write_folded_diff(f, &d.run[0], &d.run[1], &eo) == 0);
	char *text = read_all(f);
	CHECK_STR(text, "main 9000000000000000000 6000000000000000000\nmain;work 0 3000000000000000000\n");
	free(text);

	f = tmpfile();
	CHECK(ember_write_svg_diff(f, &d.run[0], &d.run[1], &eo) == 0);
	text = read_all(f);
	CHECK(text && strstr(text, "<title>main (self 100.00% \xe2\x86\x92 66.67%, \xce\x94 -33.33 pp; incl 100.00% "
				   "\xe2\x86\x92 100.00%, \xce\x94 +0.00 pp; 9,000,000,000,000,000,000 samples in NEW)"));
	CHECK(text && strstr(text, "<title>work (self 0.00% \xe2\x86\x92 33.33%"));
	free(text);
	ember_diff_free(&d);
	free_pair(&b, &n);
}

static int write_svg(const char *path, bool reverse)
{
	struct ember_profile b, n;
	struct ember_diff d;
	struct ember_diff_opts o = { 0 };
	FILE *f = fopen(path, "w");

	ranking_pair(&b, &n);
	add(&b, "main;work;grow;deep;deeper", 500);
	add(&n, "main;work;grow;deep;deeper", 500);
	if (!f || ember_diff_build(&d, &b, &n, &o) < 0)
		return 1;
	struct ember_diff_export_opts eo = export_opts(&d, reverse);
	int rc = ember_write_svg_diff(f, &d.run[0], &d.run[1], &eo) == 0 && fclose(f) == 0 ? 0 : 1;
	ember_diff_free(&d);
	free_pair(&b, &n);
	return rc;
}

int main(int argc, char **argv)
{
	const char *python = NULL, *svg = NULL;
	bool reverse = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--python") && i + 1 < argc)
			python = argv[++i];
		else if (!strcmp(argv[i], "--write-svg") && i + 1 < argc)
			svg = argv[++i];
		else if (!strcmp(argv[i], "--reverse"))
			reverse = true;
	}
	if (svg)
		return write_svg(svg, reverse);
	test_ranking_share();
	test_noise();
	test_absolute();
	test_noise_counts_vs_shares();
	test_noise_counts_threshold();
	test_rates_differ();
	test_by_keys();
	test_renames();
	test_kinds();
	test_tables();
	test_writers(python);
	test_deep();
	test_huge_counts();
	return check_report();
}
