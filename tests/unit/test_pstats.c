/* Unit tests: pstats exporter (docs/consumers.md §3).
 *
 *   test_pstats                         the C checks: exact bytes, a marshal
 *                                       reader for the allowed subset, the
 *                                       known numbers of the synthetic profiles
 *   test_pstats --python WHICH CHECKER  writes .prof files of every synthetic
 *                                       profile and runs CHECKER
 *                                       (tests/exporters/check_pstats.py) with
 *                                       the interpreters WHICH names, found now:
 *                                       X.Y (pyenv versions X.Y.*), system
 *                                       (/usr/bin/python3), other (pyenv
 *                                       versions not in KNOWN), all.
 *                                       Exit 77 when none is installed. */
#define _GNU_SOURCE /* open_memstream, mkdtemp */
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "exporters.h"
#include "synthetic_profiles.h"

extern char **environ;

/* ---- a reader for the marshal subset the writer may use ---- */

struct mv {
	char type;             /* 'i' (also for 'l'), 'g', 'u', '(', '{' */
	int64_t i;
	double f;
	char *s;               /* 'u': NUL-terminated */
	size_t n;              /* 'u': bytes; '(': items; '{': 2 x entries */
	struct mv *items;      /* dict: key, value, key, value, ... */
};

struct reader {
	const unsigned char *b;
	size_t len, pos;
};

static int rd_i32(struct reader *r, int32_t *v)
{
	uint32_t u = 0;

	if (r->len - r->pos < 4)
		return -1;
	for (int i = 0; i < 4; i++)
		u |= (uint32_t)r->b[r->pos++] << (8 * i);
	*v = (int32_t)u;
	return 0;
}

static void mv_free(struct mv *v)
{
	for (size_t i = 0; v->type != 'u' && i < v->n; i++)
		mv_free(&v->items[i]);
	free(v->items);
	free(v->s);
}

/* 0, 1 for the dict terminator (when allowed), -1 for anything else:
 * a type code outside the subset, FLAG_REF, truncation, invalid sizes. */
static int rd(struct reader *r, struct mv *v, bool allow_null)
{
	int32_t n;

	memset(v, 0, sizeof(*v));
	if (r->pos >= r->len)
		return -1;
	v->type = (char)r->b[r->pos++];
	switch (v->type) {
	case '0':
		return allow_null ? 1 : -1;
	case 'i':
		if (rd_i32(r, &n) < 0)
			return -1;
		v->i = n;
		return 0;
	case 'l':
		if (rd_i32(r, &n) < 0 || n < 0 || n > 5 || r->len - r->pos < 2 * (size_t)n)
			return -1;
		for (int32_t k = n - 1; k >= 0; k--)
			v->i = v->i << 15 | (r->b[r->pos + 2 * k] | (int64_t)r->b[r->pos + 2 * k + 1] << 8);
		r->pos += 2 * (size_t)n;
		v->type = 'i';
		return 0;
	case 'g': {
		uint64_t bits = 0;
		if (r->len - r->pos < 8)
			return -1;
		for (int k = 0; k < 8; k++)
			bits |= (uint64_t)r->b[r->pos++] << (8 * k);
		memcpy(&v->f, &bits, sizeof(bits));
		return 0;
	}
	case 'u':
		if (rd_i32(r, &n) < 0 || n < 0 || r->len - r->pos < (size_t)n || !(v->s = malloc((size_t)n + 1)))
			return -1;
		memcpy(v->s, r->b + r->pos, (size_t)n);
		v->s[n] = '\0';
		v->n = (size_t)n;
		r->pos += (size_t)n;
		return 0;
	case '(':
		if (rd_i32(r, &n) < 0 || n < 0 || n > 16 || !(v->items = calloc((size_t)n + 1, sizeof(*v->items))))
			return -1;
		for (; v->n < (size_t)n; v->n++)
			if (rd(r, &v->items[v->n], false) != 0)
				return -1;
		return 0;
	case '{':
		for (size_t cap = 0;;) {
			if (v->n + 2 > cap) {
				cap = cap ? 2 * cap : 16;
				struct mv *it = realloc(v->items, cap * sizeof(*it));
				if (!it)
					return -1;
				v->items = it;
			}
			int rc = rd(r, &v->items[v->n], true);
			if (rc == 1)
				return 0;
			v->n++;
			if (rc < 0 || rd(r, &v->items[v->n++], false) != 0)
				return -1;
		}
	default:
		return -1;     /* also FLAG_REF: the code byte has 0x80 set */
	}
}

/* The whole file as a dict, NULL when it is not exactly one. */
static struct mv *parse(const char *buf, size_t len)
{
	struct reader r = { (const unsigned char *)buf, len, 0 };
	struct mv *v = calloc(1, sizeof(*v));

	if (v && (rd(&r, v, false) != 0 || v->type != '{' || r.pos != len)) {
		mv_free(v);
		free(v);
		return NULL;
	}
	return v;
}

static void parsed_free(struct mv *v)
{
	if (v) {
		mv_free(v);
		free(v);
	}
}

static bool key_is(const struct mv *k, const char *file, int64_t line, const char *name)
{
	return k->type == '(' && k->n == 3 && k->items[0].type == 'u' && !strcmp(k->items[0].s, file) &&
	       k->items[1].type == 'i' && k->items[1].i == line && k->items[2].type == 'u' &&
	       !strcmp(k->items[2].s, name);
}

/* The value of key (file, line, name) in dict d, or NULL. */
static const struct mv *lookup(const struct mv *d, const char *file, int64_t line, const char *name)
{
	for (size_t i = 0; d && i + 1 < d->n; i += 2)
		if (key_is(&d->items[i], file, line, name))
			return &d->items[i + 1];
	return NULL;
}

#define N_ENTRIES(d) ((d)->n / 2)

/* (cc, nc, tt/dt, ct/dt) of an entry or caller tuple equal the expected. */
static bool counts_are(const struct mv *t, int64_t hits, int64_t self, double dt)
{
	return t && t->type == '(' && t->n >= 4 && t->items[0].i == hits && t->items[1].i == hits &&
	       fabs(t->items[2].f - (double)self * dt) < 1e-9 && fabs(t->items[3].f - (double)hits * dt) < 1e-9;
}

static const struct mv *callers_of(const struct mv *entry)
{
	return entry && entry->n == 5 && entry->items[4].type == '{' ? &entry->items[4] : NULL;
}

/* ---- writing ---- */

static char *write_mem(const struct ember_profile *p, bool threads, size_t *len)
{
	struct ember_export_opts o = { .threads = threads };
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	CHECK(f != NULL);
	CHECK(ember_write_pstats(f, p, &o) == 0);
	fclose(f);
	return buf;
}

static struct mv *write_parse(const struct ember_profile *p, bool threads)
{
	size_t len;
	char *buf = write_mem(p, threads, &len);
	struct mv *d = parse(buf, len);

	CHECK(d != NULL);
	free(buf);
	return d;
}

static uint32_t py(struct ember_profile *p, const char *name, const char *file, uint32_t line, uint32_t first)
{
	return synth_frame(p, EMBER_FRAME_PYTHON, name, file, line, first, NULL);
}

static void add(struct ember_profile *p, uint32_t tid, const char *tname, uint64_t count, uint32_t n, ...)
{
	uint32_t ids[64];
	va_list ap;

	va_start(ap, n);
	for (uint32_t i = 0; i < n; i++)
		ids[i] = va_arg(ap, uint32_t);
	va_end(ap);
	uint32_t st = ember_profile_stack(p, ids, n), th = ember_profile_thread(p, 1, tid, tname);
	CHECK(st != UINT32_MAX && th != UINT32_MAX && ember_profile_add(p, st, th, count) == 0);
}

/* ---- the C checks ---- */

/* docs/consumers.md §3.2: {('a.py',1,'f'): (1,1,0.5,0.5,{})}, byte for byte. */
static void test_exact_bytes(void)
{
	static const unsigned char want[] = {
		0x7b, 0x28, 3, 0, 0, 0, 0x75, 4, 0, 0, 0, 'a', '.', 'p', 'y', 0x69, 1, 0, 0, 0,
		0x75, 1, 0, 0, 0, 'f', 0x28, 5, 0, 0, 0, 0x69, 1, 0, 0, 0, 0x69, 1, 0, 0, 0,
		0x67, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f, 0x67, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f, 0x7b, 0x30, 0x30,
	};
	struct ember_profile p;
	size_t len;

	CHECK(ember_profile_init(&p) == 0);
	p.meta.interval_ns = 500000000;
	add(&p, 1, "t", 1, 1, py(&p, "f", "a.py", 3, 1));
	char *buf = write_mem(&p, false, &len);
	CHECK(len == sizeof(want) && memcmp(buf, want, len) == 0);
	free(buf);
	ember_profile_free(&p);
}

static void test_mixed(void)
{
	struct ember_profile p;
	double dt;

	CHECK(ember_profile_init(&p) == 0);
	CHECK(synth_mixed(&p) == 0);
	dt = ember_profile_interval_s(&p);
	CHECK(fabs(dt - 1.0 / 99) < 1e-15);

	struct mv *d = write_parse(&p, false);
	const char *blur = "<cv::GaussianBlur(cv::_InputArray const&, cv::_OutputArray const&)>";
	const struct mv *fwd = lookup(d, "model.py", 10, "Model.forward");
	CHECK(d && N_ENTRIES(d) == 12);
	CHECK(counts_are(fwd, 800, 0, dt));
	CHECK(counts_are(lookup(callers_of(fwd), "pipeline.py", 30, "main"), 800, 0, dt));
	CHECK(counts_are(lookup(d, "~", 0, blur), 700, 0, dt));
	CHECK(counts_are(lookup(callers_of(lookup(d, "~", 0, blur)), "~", 0, "<_PyEval_EvalFrameDefault>"),
			 700, 0, dt));
	CHECK(counts_are(lookup(d, "~", 0, "<cv::hlineSmooth>"), 700, 700, dt));
	CHECK(counts_are(lookup(callers_of(lookup(d, "~", 0, "<cv::hlineSmooth>")), "~", 0, blur), 700, 700, dt));
	CHECK(counts_are(lookup(d, "~", 0, "<ksys_read [kernel]>"), 50, 50, dt));
	CHECK(counts_are(lookup(d, "pipeline.py", 1, "<module>"), 850, 0, dt));
	CHECK(callers_of(lookup(d, "pipeline.py", 1, "<module>"))->n == 0);
	CHECK(counts_are(lookup(d, "multiprocessing/pool.py", 114, "worker_main"), 50, 50, dt));
	parsed_free(d);

	d = write_parse(&p, true);
	CHECK(d && N_ENTRIES(d) == 16);
	CHECK(counts_are(lookup(d, "~", 0, "<all threads>"), 1000, 0, dt));
	CHECK(callers_of(lookup(d, "~", 0, "<all threads>"))->n == 0);
	CHECK(counts_are(lookup(d, "~", 0, "<thread blas-worker (4250)>"), 100, 0, dt));
	CHECK(counts_are(lookup(callers_of(lookup(d, "~", 0, "<start_thread>")), "~", 0,
				"<thread blas-worker (4250)>"), 100, 0, dt));
	CHECK(counts_are(lookup(callers_of(lookup(d, "pipeline.py", 1, "<module>")), "~", 0,
				"<thread python3 (4242)>"), 850, 0, dt));
	parsed_free(d);
	ember_profile_free(&p);
}

/* rec's ct is the samples containing rec, once each, not a sum over depths. */
static void test_recursive(void)
{
	struct ember_profile p;

	CHECK(ember_profile_init(&p) == 0);
	CHECK(synth_recursive(&p, 5, 10) == 0);
	double dt = ember_profile_interval_s(&p);
	struct mv *d = write_parse(&p, false);
	const struct mv *rec = lookup(d, "rec.py", 7, "rec");
	CHECK(d && N_ENTRIES(d) == 3);
	CHECK(ember_profile_total(&p) == 80);
	CHECK(counts_are(rec, 80, 30, dt));
	CHECK(counts_are(lookup(callers_of(rec), "rec.py", 18, "main"), 80, 6, dt));
	CHECK(counts_are(lookup(callers_of(rec), "rec.py", 7, "rec"), 64, 24, dt));
	CHECK(counts_are(lookup(d, "rec.py", 2, "leaf"), 50, 50, dt));
	CHECK(counts_are(lookup(d, "rec.py", 18, "main"), 80, 0, dt));
	parsed_free(d);
	ember_profile_free(&p);
}

static void test_empty(void)
{
	for (int threads = 0; threads < 2; threads++) {
		struct ember_profile p;

		CHECK(ember_profile_init(&p) == 0);
		CHECK(synth_empty(&p) == 0);
		if (threads) {   /* a thread and a frame without samples */
			uint32_t f = py(&p, "idle", "x.py", 1, 1);
			uint32_t st = ember_profile_stack(&p, &f, 1);
			uint32_t th = ember_profile_thread(&p, 1, 1, "t");
			CHECK(ember_profile_add(&p, st, th, 0) == 0);
		}
		struct mv *d = write_parse(&p, threads);
		CHECK(d && N_ENTRIES(d) == 1);
		CHECK(counts_are(lookup(d, "~", 0, "<no samples>"), 0, 0, 0.01));
		CHECK(callers_of(lookup(d, "~", 0, "<no samples>"))->n == 0);
		parsed_free(d);
		ember_profile_free(&p);
	}
}

/* Key mapping: first_line, kinds, skipped frames, names. */
static void test_keys(void)
{
	struct ember_profile p;

	CHECK(ember_profile_init(&p) == 0);
	p.meta.interval_ns = 1000000;  /* 1 ms */
	double dt = 0.001;
	uint32_t a5 = py(&p, "a", "m.py", 5, 4), a7 = py(&p, "a", "m.py", 7, 4);
	uint32_t b = py(&p, "b", "m.py", 20, 0);  /* no first line: the line */
	uint32_t trunc = synth_frame(&p, EMBER_FRAME_SPECIAL, "[truncated]", "", 0, 0, NULL);
	uint32_t unk = synth_frame(&p, EMBER_FRAME_SPECIAL, "[unknown]", "", 0, 0, NULL);
	uint32_t k = synth_frame(&p, EMBER_FRAME_KERNEL, "do_syscall_64", "", 0, 0, "[kernel.kallsyms]");
	uint32_t in = synth_frame(&p, EMBER_FRAME_INTERP, "_PyEval_EvalFrameDefault", "ceval.c", 9, 0, "python3");
	uint32_t noname = synth_frame(&p, EMBER_FRAME_NATIVE, "", "", 0, 0, "libx.so");
	uint32_t bad = synth_frame(&p, EMBER_FRAME_NATIVE, "x\xff\ty\xe2\x82", "", 0, 0, "libx.so");
	add(&p, 1, "main", 3, 3, trunc, a5, b);
	add(&p, 1, "main", 2, 4, a7, a5, k, unk);  /* a at two lines, recursive */
	add(&p, 2, "", 4, 2, trunc, unk);          /* nothing left: <unknown> */
	add(&p, 2, "", 1, 3, in, noname, bad);

	struct mv *d = write_parse(&p, false);
	CHECK(d && N_ENTRIES(d) == 7);
	CHECK(counts_are(lookup(d, "m.py", 4, "a"), 5, 0, dt));
	CHECK(counts_are(lookup(callers_of(lookup(d, "m.py", 4, "a")), "m.py", 4, "a"), 2, 0, dt));
	CHECK(N_ENTRIES(callers_of(lookup(d, "m.py", 4, "a"))) == 1);     /* [truncated] is no caller */
	CHECK(counts_are(lookup(d, "m.py", 20, "b"), 3, 3, dt));
	CHECK(counts_are(lookup(d, "~", 0, "<do_syscall_64 [kernel]>"), 2, 2, dt)); /* [unknown] leaf skipped */
	CHECK(counts_are(lookup(d, "~", 0, "<unknown>"), 4, 4, dt));
	CHECK(counts_are(lookup(d, "~", 0, "<_PyEval_EvalFrameDefault>"), 1, 0, dt));
	CHECK(counts_are(lookup(d, "~", 0, "<[unknown]>"), 1, 0, dt));
	CHECK(counts_are(lookup(d, "~", 0, "<x\xef\xbf\xbd y\xef\xbf\xbd>"), 1, 1, dt));
	parsed_free(d);

	d = write_parse(&p, true);
	CHECK(d && N_ENTRIES(d) == 10);
	CHECK(counts_are(lookup(d, "~", 0, "<all threads>"), 10, 0, dt));
	CHECK(counts_are(lookup(d, "~", 0, "<thread main (1)>"), 5, 0, dt));
	CHECK(counts_are(lookup(d, "~", 0, "<thread (2)>"), 5, 0, dt));
	CHECK(counts_are(lookup(callers_of(lookup(d, "~", 0, "<unknown>")), "~", 0, "<thread (2)>"), 4, 4, dt));
	parsed_free(d);
	ember_profile_free(&p);
}

/* Counts past int32 are written as 'l' longs. */
static void test_large_counts(void)
{
	struct ember_profile p;
	uint64_t big = 3000000000ull, huge = (1ull << 62) + 12345;

	CHECK(ember_profile_init(&p) == 0);
	uint32_t f = py(&p, "f", "a.py", 1, 1), g = py(&p, "g", "a.py", 9, 9);
	add(&p, 1, "t", big, 2, f, g);
	add(&p, 1, "t", huge, 1, f);
	struct mv *d = write_parse(&p, false);
	const struct mv *vf = lookup(d, "a.py", 1, "f"), *vg = lookup(d, "a.py", 9, "g");
	CHECK(vf && vf->items[0].i == (int64_t)(big + huge) && vf->items[1].i == (int64_t)(big + huge));
	CHECK(vg && vg->items[0].i == (int64_t)big);
	CHECK(lookup(callers_of(vg), "a.py", 1, "f") && lookup(callers_of(vg), "a.py", 1, "f")->items[1].i == (int64_t)big);
	parsed_free(d);
	ember_profile_free(&p);
}

/* The same samples added in another order give the same bytes. */
static void test_deterministic(void)
{
	struct ember_profile p, q;
	size_t lp, lq;

	CHECK(ember_profile_init(&p) == 0 && ember_profile_init(&q) == 0);
	uint32_t a = py(&p, "a", "x.py", 1, 1), b = py(&p, "b", "x.py", 5, 5);
	uint32_t c = synth_frame(&p, EMBER_FRAME_NATIVE, "c", "", 0, 0, "lib");
	add(&p, 1, "t1", 3, 3, a, b, c);
	add(&p, 2, "t2", 4, 2, a, c);
	add(&p, 1, "t1", 5, 1, b);
	uint32_t qc = synth_frame(&q, EMBER_FRAME_NATIVE, "c", "", 0, 0, "lib");
	uint32_t qb = py(&q, "b", "x.py", 5, 5), qa = py(&q, "a", "x.py", 1, 1);
	add(&q, 2, "t2", 4, 2, qa, qc);
	add(&q, 1, "t1", 5, 1, qb);
	add(&q, 1, "t1", 3, 3, qa, qb, qc);
	for (int threads = 0; threads < 2; threads++) {
		char *bp = write_mem(&p, threads, &lp), *bq = write_mem(&q, threads, &lq);
		CHECK(lp == lq && memcmp(bp, bq, lp) == 0);
		free(bp);
		free(bq);
	}
	ember_profile_free(&p);
	ember_profile_free(&q);
}

static void test_write_error(void)
{
	struct ember_profile p;
	FILE *f = fopen("/dev/full", "w");

	if (!f)
		return;
	CHECK(ember_profile_init(&p) == 0);
	CHECK(synth_mixed(&p) == 0);
	errno = 0;
	CHECK(ember_write_pstats(f, &p, NULL) == -1 && errno == ENOSPC);
	fclose(f);
	ember_profile_free(&p);
}

/* Key order as the writer sorts: file, line, name (bytewise). */
static int key_cmp(const struct mv *a, const struct mv *b)
{
	int c = strcmp(a->items[0].s, b->items[0].s);

	if (c)
		return c;
	if (a->items[1].i != b->items[1].i)
		return a->items[1].i < b->items[1].i ? -1 : 1;
	return strcmp(a->items[2].s, b->items[2].s);
}

/* Is k a top-level key of d?  (d's keys are sorted: binary search.) */
static bool has_key(const struct mv *d, const struct mv *k)
{
	size_t lo = 0, hi = N_ENTRIES(d);

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = key_cmp(&d->items[2 * mid], k);
		if (!c)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* Linear in rows x depth: 20000 stacks of depth 64, each frame one of 32
 * functions per depth (2048 in all), with a recursive prefix. */
static void test_scale(void)
{
	struct ember_profile p;
	uint32_t fr[2048], ids[64];
	uint64_t x = 88172645463325252ull, total = 0;
	struct timespec t0, t1;
	size_t len;

	CHECK(ember_profile_init(&p) == 0);
	for (uint32_t i = 0; i < 2048; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%u", i);
		fr[i] = i % 3 ? py(&p, name, "big.py", i + 1, i + 1)
			      : synth_frame(&p, EMBER_FRAME_NATIVE, name, "", 0, 0, "lib");
	}
	uint32_t th[4];
	for (uint32_t t = 0; t < 4; t++)
		th[t] = ember_profile_thread(&p, 1, t + 1, "worker");
	for (uint32_t s = 0; s < 20000; s++) {
		for (uint32_t k = 0; k < 64; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			ids[k] = k < 8 ? fr[s % 3] : fr[k * 32 + x % 32];
		}
		uint32_t st = ember_profile_stack(&p, ids, 64);
		CHECK(ember_profile_add(&p, st, th[s % 4], 1 + s % 7) == 0);
		total += 1 + s % 7;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char *buf = write_mem(&p, true, &len);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("scale: 20000 stacks x 64 frames -> %zu bytes in %.3f s\n", len, secs);
	CHECK(secs < 10.0);
	struct mv *d = parse(buf, len);
	CHECK(d != NULL);
	double dt = ember_profile_interval_s(&p), sum_tt = 0;
	bool ok = d != NULL;
	for (size_t i = 0; d && i + 1 < d->n; i += 2) {
		const struct mv *v = &d->items[i + 1], *callers = &v->items[4];
		sum_tt += v->items[2].f;
		ok &= v->items[2].f <= v->items[3].f + 1e-9;
		ok &= i == 0 || key_cmp(&d->items[i - 2], &d->items[i]) < 0;  /* sorted, unique */
		for (size_t c = 0; c + 1 < callers->n; c += 2)
			ok &= has_key(d, &callers->items[c]) &&
			      callers->items[c + 1].items[3].f <= v->items[3].f + 1e-9;
	}
	CHECK(ok);
	CHECK(fabs(sum_tt - (double)total * dt) < 1e-6);
	CHECK(counts_are(lookup(d, "~", 0, "<all threads>"), (int64_t)total, 0, dt));
	parsed_free(d);
	free(buf);
	ember_profile_free(&p);
}

/* ---- --python: the validator under real interpreters ---- */

static const char *const KNOWN[] = { "2.7", "3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13" };
#define NKNOWN (sizeof(KNOWN) / sizeof(KNOWN[0]))

static void pyenv_root(char *buf, size_t size)
{
	FILE *f = popen("pyenv root 2>/dev/null", "r");
	const char *env = getenv("PYENV_ROOT");

	buf[0] = '\0';
	if (f) {
		if (fgets(buf, (int)size, f))
			buf[strcspn(buf, "\n")] = '\0';
		pclose(f);
	}
	if (!buf[0])
		snprintf(buf, size, "%s", env && *env ? env : "/root/.pyenv");
}

/* Version directory "3.10.13" is of series "3.10". */
static bool in_series(const char *dir, const char *series)
{
	size_t n = strlen(series);
	return !strncmp(dir, series, n) && dir[n] == '.';
}

static int write_file(const char *dir, const char *name, const struct ember_profile *p, bool threads,
		      char *path, size_t size)
{
	struct ember_export_opts o = { .threads = threads };
	snprintf(path, size, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	int rc = f ? ember_write_pstats(f, p, &o) : -1;

	if (f && fclose(f) != 0)
		rc = -1;
	return rc;
}

static int run(char *const argv[])
{
	pid_t pid;
	int status;

	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0)
		return -1;
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int python_mode(const char *which, const char *checker)
{
	char root[1024], pat[1200], dir[] = "/tmp/ember-pstats-XXXXXX";
	char paths[6][64], specs[6][512], interval[64];
	const char *pythons[64];
	size_t npy = 0;
	glob_t g = { 0 };
	int failed = 0;

	pyenv_root(root, sizeof(root));
	snprintf(pat, sizeof(pat), "%s/versions/*/bin/python", root);
	if (strcmp(which, "system") != 0 && glob(pat, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc && npy < 63; i++) {
			const char *ver = g.gl_pathv[i] + strlen(root) + strlen("/versions/");
			bool known = false;
			for (size_t k = 0; k < NKNOWN; k++)
				known |= in_series(ver, KNOWN[k]);
			if (!strcmp(which, "all") || (!strcmp(which, "other") && !known) || in_series(ver, which))
				pythons[npy++] = g.gl_pathv[i];
		}
	}
	if ((!strcmp(which, "system") || !strcmp(which, "all")) && access("/usr/bin/python3", X_OK) == 0)
		pythons[npy++] = "/usr/bin/python3";
	if (!npy) {
		printf("SKIP: no Python '%s' installed (looked in %s/versions and /usr/bin/python3)\n", which, root);
		fprintf(stderr, "SKIP: no Python '%s' installed\n", which);
		globfree(&g);
		return 77;
	}

	struct { const char *name, *expect; int kind; bool threads; } files[6] = {
		{ "mixed.prof", "mixed", 0, false }, { "mixed_threads.prof", "mixed-threads", 0, true },
		{ "hostile.prof", "hostile", 1, false }, { "hostile_threads.prof", "hostile-threads", 1, true },
		{ "empty.prof", "empty", 2, false }, { "recursive.prof", "recursive:5:10", 3, false },
	};
	CHECK(mkdtemp(dir) != NULL);
	double dt = 0;
	for (int i = 0; i < 6; i++) {
		struct ember_profile p;
		CHECK(ember_profile_init(&p) == 0);
		int rc = files[i].kind == 0 ? synth_mixed(&p) : files[i].kind == 1 ? synth_hostile(&p)
			 : files[i].kind == 2 ? synth_empty(&p) : synth_recursive(&p, 5, 10);
		CHECK(rc == 0);
		CHECK(write_file(dir, files[i].name, &p, files[i].threads, paths[i], sizeof(paths[i])) == 0);
		snprintf(specs[i], sizeof(specs[i]), "%s,%s,%" PRIu64, paths[i], files[i].expect,
			 ember_profile_total(&p));
		dt = ember_profile_interval_s(&p);  /* the same for all: 99 Hz */
		ember_profile_free(&p);
	}
	snprintf(interval, sizeof(interval), "%.17g", dt);

	setenv("PYTHONIOENCODING", "utf-8", 1);
	setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
	unsetenv("PYTHONPATH");
	unsetenv("PYTHONHOME");
	unsetenv("PYTHONSTARTUP");
	for (size_t i = 0; i < npy; i++) {
		char *argv[] = { (char *)pythons[i], "-B", (char *)checker, "--interval", interval,
				 specs[0], specs[1], specs[2], specs[3], specs[4], specs[5], NULL };
		printf("== %s\n", pythons[i]);
		fflush(stdout);
		int rc = run(argv);
		printf("%s: %s\n", rc == 0 ? "PASS" : "FAIL", pythons[i]);
		fflush(stdout);
		if (rc != 0)
			failed++;
	}
	for (int i = 0; i < 6; i++)
		unlink(paths[i]);
	rmdir(dir);
	globfree(&g);
	CHECK(failed == 0);
	return check_report();
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--python"))
		return python_mode(argv[2], argv[3]);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--python X.Y|system|other|all CHECKER]\n", argv[0]);
		return 2;
	}
	test_exact_bytes();
	test_mixed();
	test_recursive();
	test_empty();
	test_keys();
	test_large_counts();
	test_deterministic();
	test_write_error();
	test_scale();
	return check_report();
}
