/* Unit tests: profile model (interning, threads, rows) and reports. */
#define _GNU_SOURCE /* open_memstream */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "profile.h"
#include "report.h"
#include "strtab.h"

static uint32_t frame(struct ember_profile *p, enum ember_frame_kind kind, const char *name,
		      const char *file, uint32_t line, const char *module)
{
	struct ember_frame f = { .kind = kind, .name = name, .file = file, .line = line,
				 .module = module };
	return ember_profile_frame(p, &f);
}

/* Stack of n frame ids, root first. */
static uint32_t stack(struct ember_profile *p, uint32_t n, ...)
{
	uint32_t ids[64];
	va_list ap;

	va_start(ap, n);
	for (uint32_t i = 0; i < n; i++)
		ids[i] = va_arg(ap, uint32_t);
	va_end(ap);
	return ember_profile_stack(p, ids, n);
}

static void test_strtab(void)
{
	struct ember_strtab *t = ember_strtab_new();
	char buf[32];
	const char **ptrs = malloc(50000 * sizeof(*ptrs));

	CHECK(t && ptrs);
	const char *a = ember_strtab_intern(t, "hello world", 5);
	CHECK_STR(a, "hello");
	CHECK(ember_strtab_intern(t, "hello", 5) == a);
	CHECK(ember_strtab_intern(t, "hell", 4) != a);
	CHECK(ember_strtab_intern(t, "a\0b", 3) != ember_strtab_intern(t, "a\0c", 3));
	CHECK_STR(ember_strtab_intern(t, NULL, 0), "");

	/* Many strings force table growth and new arena blocks: earlier
	 * pointers must stay valid and interning must stay idempotent. */
	for (int i = 0; i < 50000; i++) {
		int n = snprintf(buf, sizeof(buf), "sym_%d", i);
		ptrs[i] = ember_strtab_intern(t, buf, (size_t)n);
	}
	int bad = 0;
	for (int i = 0; i < 50000; i++) {
		int n = snprintf(buf, sizeof(buf), "sym_%d", i);
		if (strcmp(ptrs[i], buf) != 0 || ember_strtab_intern(t, buf, (size_t)n) != ptrs[i])
			bad++;
	}
	CHECK(bad == 0);
	CHECK(ember_strtab_count(t) == 50000 + 5);

	/* A string larger than an arena block gets its own block. */
	size_t big = 300000;
	char *s = malloc(big);
	memset(s, 'x', big);
	const char *b1 = ember_strtab_intern(t, s, big);
	CHECK(b1 && strlen(b1) == big);
	CHECK(ember_strtab_intern(t, s, big) == b1);
	CHECK(ember_strtab_intern(t, "after big", 9) != NULL);
	free(s);
	free(ptrs);
	ember_strtab_free(t);
}

static void test_frames(void)
{
	struct ember_profile p;
	char name[] = "main", file[] = "main.c";

	CHECK(ember_profile_init(&p) == 0);
	uint32_t a = frame(&p, EMBER_FRAME_NATIVE, "main", "main.c", 10, "app");
	uint32_t b = frame(&p, EMBER_FRAME_NATIVE, name, file, 10, "app"); /* other buffers */
	uint32_t c = frame(&p, EMBER_FRAME_NATIVE, "main", "main.c", 11, "app");
	uint32_t d = frame(&p, EMBER_FRAME_PYTHON, "main", "main.c", 10, "app");
	uint32_t e = frame(&p, EMBER_FRAME_NATIVE, "main", "main.c", 10, "");
	CHECK(a == 0 && b == a);
	CHECK(c != a && d != a && e != a && d != c && e != c && e != d);
	CHECK(ember_profile_nframes(&p) == 4);

	struct ember_frame f = { .kind = EMBER_FRAME_NATIVE, .name = "main", .file = "main.c",
				 .line = 10, .module = "app", .inlined = true };
	uint32_t inl = ember_profile_frame(&p, &f);
	CHECK(inl != a);
	f.first_line = 3;
	CHECK(ember_profile_frame(&p, &f) != inl);

	/* Stored strings are the interned ones: pointer equality works. */
	CHECK(ember_profile_frame_at(&p, a)->name == ember_profile_cstr(&p, "main"));
	CHECK(ember_profile_frame_at(&p, a)->module == ember_profile_frame_at(&p, c)->module);
	CHECK(ember_profile_frame_at(&p, a)->name != name);

	/* NULL strings are the empty string. */
	struct ember_frame g = { .kind = EMBER_FRAME_SPECIAL, .name = "[truncated]" };
	uint32_t t1 = ember_profile_frame(&p, &g);
	CHECK(t1 != UINT32_MAX);
	CHECK_STR(ember_profile_frame_at(&p, t1)->file, "");
	CHECK_STR(ember_profile_frame_at(&p, t1)->module, "");
	g.file = "";
	CHECK(ember_profile_frame(&p, &g) == t1);
	ember_profile_free(&p);
}

/* An empty stack interned first (--python-only: a start-up sample without
 * Python frames), then again: found, with no frame array allocated yet
 * (UBSan caught a memcmp from NULL there in CI). */
static void test_empty_stack_first(void)
{
	struct ember_profile p;

	CHECK(ember_profile_init(&p) == 0);
	uint32_t s0 = stack(&p, 0);
	CHECK(s0 == 0);
	CHECK(stack(&p, 0) == s0);
	uint32_t m = frame(&p, EMBER_FRAME_NATIVE, "main", "", 0, "app");
	CHECK(stack(&p, 1, m) == 1);
	CHECK(stack(&p, 0) == s0);
	ember_profile_free(&p);
}

static void test_stacks_threads_rows(void)
{
	struct ember_profile p;

	CHECK(ember_profile_init(&p) == 0);
	uint32_t m = frame(&p, EMBER_FRAME_NATIVE, "main", "", 0, "app");
	uint32_t f = frame(&p, EMBER_FRAME_NATIVE, "f", "", 0, "app");
	uint32_t g = frame(&p, EMBER_FRAME_NATIVE, "g", "", 0, "app");

	uint32_t s1 = stack(&p, 2, m, f);
	uint32_t s2 = stack(&p, 2, m, g);
	uint32_t s3 = stack(&p, 3, m, f, g);
	uint32_t s4 = stack(&p, 1, m);
	uint32_t s0 = stack(&p, 0);
	CHECK(s1 == 0 && s2 == 1 && s3 == 2 && s4 == 3 && s0 == 4);
	CHECK(stack(&p, 2, m, f) == s1);
	CHECK(stack(&p, 3, m, f, g) == s3);
	CHECK(stack(&p, 0) == s0);
	CHECK(stack(&p, 2, f, m) != s1);
	CHECK(stack(&p, 2, m, 99u) == UINT32_MAX); /* not a frame id */
	uint32_t n;
	const uint32_t *ids = ember_profile_stack_frames(&p, s3, &n);
	CHECK(n == 3 && ids[0] == m && ids[1] == f && ids[2] == g);
	ember_profile_stack_frames(&p, s0, &n);
	CHECK(n == 0);

	uint32_t t1 = ember_profile_thread(&p, 100, 100, "app");
	uint32_t t2 = ember_profile_thread(&p, 100, 101, NULL);
	CHECK(t1 == 0 && t2 == 1);
	CHECK_STR(ember_profile_thread_at(&p, t2)->name, "");
	CHECK(ember_profile_thread(&p, 100, 100, "") == t1);
	CHECK_STR(ember_profile_thread_at(&p, t1)->name, "app");      /* empty name keeps the old */
	CHECK(ember_profile_thread(&p, 100, 100, "worker") == t1);
	CHECK_STR(ember_profile_thread_at(&p, t1)->name, "worker");   /* a new comm renames */
	CHECK(ember_profile_thread(&p, 200, 100, "other") == 2); /* same tid, other pid */
	CHECK(ember_profile_nthreads(&p) == 3);

	CHECK(ember_profile_add(&p, s1, t1, 3) == 0);
	CHECK(ember_profile_add(&p, s1, t1, 4) == 0);
	CHECK(ember_profile_add(&p, s1, t2, 1) == 0);
	CHECK(ember_profile_add(&p, s2, t1, 10) == 0);
	CHECK(ember_profile_nrows(&p) == 3);
	const struct ember_sample_row *r0 = ember_profile_row_at(&p, 0);
	CHECK(r0->stack == s1 && r0->thread == t1 && r0->count == 7);
	CHECK(ember_profile_row_at(&p, 1)->count == 1 && ember_profile_row_at(&p, 2)->count == 10);
	CHECK(ember_profile_total(&p) == 18);
	CHECK(ember_profile_add(&p, 999, t1, 1) == -1);
	CHECK(ember_profile_add(&p, s1, 999, 1) == -1);
	CHECK(ember_profile_total(&p) == 18);
	ember_profile_free(&p);

	/* free after free (and on a zeroed profile) is harmless */
	ember_profile_free(&p);
}

static const struct ember_report_row *find_row(const struct ember_report_row *rows, size_t n,
					       const char *label)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(rows[i].label, label) == 0)
			return &rows[i];
	return NULL;
}

/* main;f;f;f x10, main;g x5, main;f;g x3 (on two threads), [truncated];main;h x2 */
static void build_report_profile(struct ember_profile *p)
{
	CHECK(ember_profile_init(p) == 0);
	uint32_t m = frame(p, EMBER_FRAME_NATIVE, "main", "main.c", 5, "app");
	uint32_t f1 = frame(p, EMBER_FRAME_NATIVE, "f", "f.c", 1, "app");
	uint32_t f2 = frame(p, EMBER_FRAME_NATIVE, "f", "f.c", 2, "app");
	uint32_t g = frame(p, EMBER_FRAME_NATIVE, "g", "g.c", 7, "libg.so");
	uint32_t h = frame(p, EMBER_FRAME_PYTHON, "h", "h.py", 3, "");
	uint32_t tr = frame(p, EMBER_FRAME_SPECIAL, "[truncated]", "", 0, "");
	uint32_t t1 = ember_profile_thread(p, 1, 1, "main");
	uint32_t t2 = ember_profile_thread(p, 1, 2, "worker");

	CHECK(ember_profile_add(p, stack(p, 4, m, f1, f2, f2), t1, 10) == 0);
	CHECK(ember_profile_add(p, stack(p, 2, m, g), t1, 5) == 0);
	CHECK(ember_profile_add(p, stack(p, 3, m, f1, g), t1, 1) == 0);
	CHECK(ember_profile_add(p, stack(p, 3, m, f1, g), t2, 2) == 0);
	CHECK(ember_profile_add(p, stack(p, 3, tr, m, h), t2, 2) == 0);
	stack(p, 2, m, m); /* a stack without samples counts for nothing */
}

/* What ember_report_print writes for p (free it). */
static char *report_text(const struct ember_profile *p, enum ember_report_key key, size_t top)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return NULL;
	ember_report_print(out, p, key, top);
	fclose(out);
	return text;
}

static void test_report(void)
{
	struct ember_profile p;
	struct ember_report_row *rows;
	size_t n;
	const struct ember_report_row *r;

	build_report_profile(&p);
	CHECK(ember_profile_total(&p) == 20);

	CHECK(ember_report_rows(&p, EMBER_REPORT_BY_FUNCTION, &rows, &n) == 0);
	CHECK(n == 4);     /* main, f, g, h; [truncated] is synthetic */
	CHECK(find_row(rows, n, "[truncated]") == NULL);
	CHECK_STR(rows[0].label, "f");
	CHECK(rows[0].self == 10 && rows[0].total == 13); /* recursion counted once */
	CHECK_STR(rows[1].label, "g");
	CHECK(rows[1].self == 8 && rows[1].total == 8);
	CHECK_STR(rows[2].label, "h (h.py)");   /* Python names carry their file */
	CHECK(rows[2].self == 2 && rows[2].total == 2);
	CHECK_STR(rows[3].label, "main");
	CHECK(rows[3].self == 0 && rows[3].total == 20);
	ember_report_rows_free(rows, n);

	CHECK(ember_report_rows(&p, EMBER_REPORT_BY_LINE, &rows, &n) == 0);
	CHECK(n == 5);
	r = find_row(rows, n, "f (f.c:2)");
	CHECK(r && r->self == 10 && r->total == 10); /* twice on the stack, once counted */
	r = find_row(rows, n, "f (f.c:1)");
	CHECK(r && r->self == 0 && r->total == 13);
	r = find_row(rows, n, "main (main.c:5)");
	CHECK(r && r->total == 20);
	r = find_row(rows, n, "h (h.py:3)");
	CHECK(r && r->self == 2);
	ember_report_rows_free(rows, n);

	CHECK(ember_report_rows(&p, EMBER_REPORT_BY_MODULE, &rows, &n) == 0);
	CHECK(n == 3);
	CHECK_STR(rows[0].label, "app");
	CHECK(rows[0].self == 10 && rows[0].total == 20);
	CHECK_STR(rows[1].label, "libg.so");
	CHECK(rows[1].self == 8 && rows[1].total == 8);
	CHECK_STR(rows[2].label, "h.py");      /* Python frames: their file */
	CHECK(rows[2].self == 2 && rows[2].total == 2);
	ember_report_rows_free(rows, n);

	/* The printed tables. */
	char *text = report_text(&p, EMBER_REPORT_BY_FUNCTION, 10);
	const char *expect =
		"ember: top 3 by self (of 20 samples):\n"
		"   self%  total%  samples  function\n"
		"   50.0%   65.0%       10  f\n"
		"   40.0%   40.0%        8  g\n"
		"   10.0%   10.0%        2  h (h.py)\n"
		"ember: top 4 by total (of 20 samples):\n"
		"   self%  total%  samples  function\n"
		"    0.0%  100.0%       20  main\n"
		"   50.0%   65.0%       13  f\n"
		"   40.0%   40.0%        8  g\n"
		"   10.0%   10.0%        2  h (h.py)\n";
	CHECK_STR(text, expect);
	if (strcmp(text, expect) != 0)
		fputs(text, stderr);
	free(text);

	text = report_text(&p, EMBER_REPORT_BY_LINE, 1);
	CHECK(strstr(text, "ember: top 1 by self (of 20 samples):\n") != NULL);
	CHECK(strstr(text, "   self%  total%  samples  line\n") != NULL);
	CHECK(strstr(text, "  f (f.c:2)\n") != NULL);
	CHECK(strstr(text, "  main (main.c:5)\n") != NULL);
	free(text);
	ember_profile_free(&p);
}

static void test_report_print_edges(void)
{
	struct ember_profile p;
	char *text;

	CHECK(ember_profile_init(&p) == 0);
	text = report_text(&p, EMBER_REPORT_BY_FUNCTION, 10);
	CHECK_STR(text, "ember: no samples\n");
	free(text);

	/* Samples whose every frame is synthetic: no key to show.  (The table
	 * code once sorted the absent row array: UB the sanitizer build stops on.) */
	uint32_t tr = frame(&p, EMBER_FRAME_SPECIAL, "[truncated]", "", 0, "");
	uint32_t th = ember_profile_thread(&p, 1, 1, "x");
	CHECK(ember_profile_add(&p, stack(&p, 2, tr, tr), th, 5) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 0), th, 2) == 0);
	struct ember_report_row *rows = NULL;
	size_t nrows = 1;
	CHECK(ember_report_rows(&p, EMBER_REPORT_BY_FUNCTION, &rows, &nrows) == 0 && nrows == 0);
	ember_report_rows_free(rows, nrows);
	for (int key = EMBER_REPORT_BY_FUNCTION; key <= EMBER_REPORT_BY_MODULE; key++) {
		for (size_t top = 0; top < 2; top++) {
			text = report_text(&p, (enum ember_report_key)key, top);
			CHECK_STR(text, "ember: no symbolized frames in 7 samples\n");
			free(text);
		}
	}
	ember_profile_free(&p);
	CHECK(ember_profile_init(&p) == 0);

	/* A long name is shortened in the middle to 80 characters; control
	 * characters cannot reach the terminal. */
	char name[301];
	memset(name, 'n', 300);
	name[300] = '\0';
	memcpy(name + 290, "_TAIL\x1b[2J", 9);
	uint32_t f = frame(&p, EMBER_FRAME_NATIVE, name, "", 0, "");
	uint32_t t = ember_profile_thread(&p, 1, 1, "x");
	CHECK(ember_profile_add(&p, stack(&p, 1, f), t, 1234) == 0);
	text = report_text(&p, EMBER_REPORT_BY_FUNCTION, 10);
	CHECK(strstr(text, "  100.0%  100.0%     1234  nnnn") != NULL);
	CHECK(strstr(text, "\xe2\x80\xa6") != NULL);
	CHECK(strstr(text, "_TAIL?[2J") != NULL);
	CHECK(strchr(text, '\x1b') == NULL);
	const char *line = strstr(text, "1234  ");
	const char *eol = line ? strchr(line, '\n') : NULL;
	CHECK(line && eol && (size_t)(eol - line) - 6 == 80 + 2); /* 80 chars, the ellipsis is 3 bytes */
	free(text);
	ember_profile_free(&p);
}

/* 20k frames, 20k stacks up to 32 deep, 200k adds on 8 threads: must finish
 * quickly (no timing assert; a quadratic path would make ctest time out). */
static void test_scaling(void)
{
	struct ember_profile p;
	uint32_t ids[32], frames[20000], threads[8];
	char name[32];
	uint32_t seed = 12345;

	CHECK(ember_profile_init(&p) == 0);
	for (uint32_t i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "func_%u", i);
		frames[i] = frame(&p, i % 7 ? EMBER_FRAME_NATIVE : EMBER_FRAME_PYTHON, name,
				  i % 7 ? "" : "mod.py", i % 100, i % 3 ? "libx.so" : "app");
	}
	for (uint32_t t = 0; t < 8; t++)
		threads[t] = ember_profile_thread(&p, 1, 1 + t, "w");
	uint64_t added = 0;
	for (uint32_t i = 0; i < 200000; i++) {
		uint32_t sid = i % 20000, depth = 1 + sid % 32;
		for (uint32_t d = 0; d < depth; d++) /* root frame sid: stacks are distinct */
			ids[d] = frames[(sid + d * 7919u) % 20000];
		seed = seed * 1103515245u + 12345u;
		uint32_t st = ember_profile_stack(&p, ids, depth);
		CHECK(st != UINT32_MAX);
		if (ember_profile_add(&p, st, threads[seed >> 29], 1 + (seed >> 20) % 5) != 0)
			CHECK(0);
		added += 1 + (seed >> 20) % 5;
	}
	CHECK(ember_profile_nframes(&p) == 20000);
	CHECK(ember_profile_nstacks(&p) == 20000);
	CHECK(ember_profile_nrows(&p) <= 160000);
	CHECK(ember_profile_total(&p) == added);

	struct ember_report_row *rows;
	size_t n;
	CHECK(ember_report_rows(&p, EMBER_REPORT_BY_FUNCTION, &rows, &n) == 0);
	uint64_t self = 0;
	for (size_t i = 0; i < n; i++) {
		self += rows[i].self;
		CHECK(rows[i].total <= added && rows[i].self <= rows[i].total);
	}
	CHECK(self == added);  /* every sample has exactly one leaf */
	ember_report_rows_free(rows, n);
	ember_profile_free(&p);
}

/* Sample counts never wrap: the profile's total stops at EMBER_COUNT_MAX
 * (2^63 - 1), what would pass it is cut off and the profile says so, and
 * the report's percentages are of that total. */
static void test_saturation(void)
{
	struct ember_profile p;
	const uint64_t max = EMBER_COUNT_MAX;

	CHECK(max == 9223372036854775807ull);
	/* up to the limit exactly: nothing is cut */
	CHECK(ember_profile_init(&p) == 0);
	CHECK(p.count_max == max && !ember_profile_saturated(&p));
	uint32_t a = frame(&p, EMBER_FRAME_NATIVE, "a", "", 0, "app");
	uint32_t b = frame(&p, EMBER_FRAME_NATIVE, "b", "", 0, "app");
	uint32_t c = frame(&p, EMBER_FRAME_NATIVE, "c", "", 0, "app");
	uint32_t t = ember_profile_thread(&p, 1, 1, "main");
	CHECK(ember_profile_add(&p, stack(&p, 1, a), t, max - 10) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 2, a, b), t, 10) == 0);
	CHECK(ember_profile_total(&p) == max && !ember_profile_saturated(&p));
	/* one more sample: cut, on a new row and on an existing one */
	CHECK(ember_profile_add(&p, stack(&p, 2, a, c), t, 1) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 1, a), t, max) == 0);
	CHECK(ember_profile_total(&p) == max && ember_profile_saturated(&p));
	CHECK(ember_profile_nrows(&p) == 3 && ember_profile_row_at(&p, 0)->count == max - 10 &&
	      ember_profile_row_at(&p, 1)->count == 10 && ember_profile_row_at(&p, 2)->count == 0);
	ember_profile_free(&p);

	/* three counts of 2^63 - 1 (a folded file's worth): the first fills the
	 * profile, and the report shows 100 % of a true total, not a wrapped one */
	CHECK(ember_profile_init(&p) == 0);
	a = frame(&p, EMBER_FRAME_NATIVE, "a", "", 0, "app");
	b = frame(&p, EMBER_FRAME_NATIVE, "b", "", 0, "app");
	c = frame(&p, EMBER_FRAME_NATIVE, "c", "", 0, "app");
	t = ember_profile_thread(&p, 1, 1, "main");
	CHECK(ember_profile_add(&p, stack(&p, 1, a), t, max) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 1, b), t, max) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 1, c), t, max) == 0);
	CHECK(ember_profile_total(&p) == max && ember_profile_saturated(&p));
	char *text = report_text(&p, EMBER_REPORT_BY_FUNCTION, 0);
	const char *expect =
		"ember: top 1 by self (of 9223372036854775807 samples):\n"
		"   self%  total%              samples  function\n"
		"  100.0%  100.0%  9223372036854775807  a\n"
		"ember: top 1 by total (of 9223372036854775807 samples):\n"
		"   self%  total%              samples  function\n"
		"  100.0%  100.0%  9223372036854775807  a\n";
	CHECK_STR(text, expect);
	free(text);
	ember_profile_free(&p);

	/* counts of many stacks near the limit: every sum of rows is exact */
	CHECK(ember_profile_init(&p) == 0);
	a = frame(&p, EMBER_FRAME_NATIVE, "a", "", 0, "app");
	b = frame(&p, EMBER_FRAME_NATIVE, "b", "", 0, "app");
	t = ember_profile_thread(&p, 1, 1, "main");
	uint32_t t2 = ember_profile_thread(&p, 1, 2, "worker");
	CHECK(ember_profile_add(&p, stack(&p, 2, a, b), t, max / 2) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 2, a, b), t2, max / 2) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 1, a), t2, 1) == 0);
	CHECK(ember_profile_total(&p) == max && !ember_profile_saturated(&p));
	struct ember_report_row *rows;
	size_t n;
	CHECK(ember_report_rows(&p, EMBER_REPORT_BY_FUNCTION, &rows, &n) == 0 && n == 2);
	const struct ember_report_row *r = n == 2 ? find_row(rows, n, "a") : NULL;
	CHECK(r && r->total == max && r->self == 1);
	r = n == 2 ? find_row(rows, n, "b") : NULL;
	CHECK(r && r->total == max - 1 && r->self == max - 1);
	ember_report_rows_free(rows, n);
	ember_profile_free(&p);

	CHECK(ember_count_add(max, max) == 2 * max && ember_count_add(2 * max, 2) == UINT64_MAX);
	CHECK(ember_count_mul(max, 2) == 2 * max && ember_count_mul(max, 3) == UINT64_MAX);
	CHECK(ember_count_mul(0, UINT64_MAX) == 0);
}

static uint32_t flagged(struct ember_profile *p, enum ember_frame_kind kind, const char *name, const char *module,
			uint8_t flags)
{
	struct ember_frame f = { .kind = kind, .name = name, .module = module, .flags = flags };
	return ember_profile_frame(p, &f);
}

static char *unsym_text(const struct ember_profile *p)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	CHECK(out != NULL);
	ember_report_unsymbolized_print(out, p);
	fclose(out);
	return text;
}

/* Samples whose innermost native frame has no symbol, per module: a leaf
 * in libz without symbols (600 on two threads), in libopenblas (250), one
 * whose leaf is a kernel frame over an unsymbolized native frame (counted:
 * 50), an address in no module (40); not counted: a Python leaf over an
 * unsymbolized frame further out, an unsymbolized caller of a named leaf,
 * time off CPU, and [truncated] alone. */
static void test_unsymbolized(void)
{
	struct ember_profile p;
	CHECK(ember_profile_init(&p) == 0);
	uint8_t ns = EMBER_FRAME_NO_SYMBOL;
	uint32_t mainf = flagged(&p, EMBER_FRAME_NATIVE, "main", "app", 0);
	uint32_t z1 = flagged(&p, EMBER_FRAME_NATIVE, "[libz.so.1.2.13+0x4a26]", "libz.so.1.2.13", ns);
	uint32_t z2 = flagged(&p, EMBER_FRAME_NATIVE, "[libz.so.1.2.13+0x627b]", "libz.so.1.2.13", ns);
	uint32_t blas = flagged(&p, EMBER_FRAME_NATIVE, "[libopenblasp-r0.3.21.so+0x37492c]",
				"libopenblasp-r0.3.21.so", ns | EMBER_FRAME_CALLER_SCANNED);
	uint32_t unk = flagged(&p, EMBER_FRAME_NATIVE, "[unknown]", "", ns);
	uint32_t kern = flagged(&p, EMBER_FRAME_KERNEL, "[kernel+0xffff1234]", "[kernel.kallsyms]", ns);
	uint32_t sys = flagged(&p, EMBER_FRAME_KERNEL, "do_syscall_64", "[kernel.kallsyms]", 0);
	uint32_t py = flagged(&p, EMBER_FRAME_PYTHON, "f", "", 0);
	uint32_t named = flagged(&p, EMBER_FRAME_NATIVE, "crc32_z", "libz.so.1.2.13", 0);
	uint32_t trunc = flagged(&p, EMBER_FRAME_SPECIAL, "[truncated]", "", 0);
	uint32_t t1 = ember_profile_thread(&p, 1, 1, "a"), t2 = ember_profile_thread(&p, 1, 2, "b");
	CHECK(ember_profile_add(&p, stack(&p, 3, mainf, z2, z1), t1, 400) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 2, mainf, z2), t2, 200) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 2, mainf, blas), t1, 250) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 4, mainf, blas, sys, kern), t2, 50) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 2, mainf, unk), t1, 40) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 3, mainf, z1, py), t1, 100) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 3, mainf, z2, named), t1, 150) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 1, trunc), t2, 10) == 0);
	CHECK(ember_profile_add_row(&p, stack(&p, 2, mainf, z1), t1, EMBER_ROW_OFF_CPU, 500) == 0);

	struct ember_unsym u;
	CHECK(ember_report_unsymbolized(&p, &u) == 0);
	CHECK(u.count == 940 && u.of == 1200 && u.nmodules == 3);
	if (u.nmodules == 3) {
		CHECK_STR(u.modules[0].label, "libz.so.1.2.13");
		CHECK(u.modules[0].count == 600);
		CHECK_STR(u.modules[1].label, "libopenblasp-r0.3.21.so");
		CHECK(u.modules[1].count == 300);
		CHECK_STR(u.modules[2].label, "[unknown]");
		CHECK(u.modules[2].count == 40);
	}
	ember_unsym_free(&u);
	char *text = unsym_text(&p);
	CHECK_STR(text, "ember: 78.3% of samples (940) end in code without symbols: libz.so.1.2.13 50.0%, "
			"libopenblasp-r0.3.21.so 25.0%, [unknown] 3.3%; install the -dbgsym packages or see "
			"`ember report --by module`\n");
	free(text);
	ember_profile_free(&p);

	/* Under 1% of the samples: no line. */
	CHECK(ember_profile_init(&p) == 0);
	mainf = flagged(&p, EMBER_FRAME_NATIVE, "main", "app", 0);
	unk = flagged(&p, EMBER_FRAME_NATIVE, "[unknown]", "", ns);
	t1 = ember_profile_thread(&p, 1, 1, "a");
	CHECK(ember_profile_add(&p, stack(&p, 1, mainf), t1, 990) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 2, mainf, unk), t1, 9) == 0);
	CHECK(ember_report_unsymbolized(&p, &u) == 0 && u.count == 9 && u.of == 999);
	ember_unsym_free(&u);
	text = unsym_text(&p);
	CHECK_STR(text, "");
	free(text);
	CHECK(ember_profile_add(&p, stack(&p, 2, mainf, unk), t1, 1) == 0);
	text = unsym_text(&p);
	CHECK_STR(text, "ember: 1.0% of samples (10) end in code without symbols: [unknown] 1.0%; install the "
			"-dbgsym packages or see `ember report --by module`\n");
	free(text);
	ember_profile_free(&p);

	/* Four modules by name, the rest as others (ties: by name). */
	CHECK(ember_profile_init(&p) == 0);
	t1 = ember_profile_thread(&p, 1, 1, "a");
	const char *mods[] = { "libe.so", "libd.so", "libc.so", "liba.so", "libb.so" };
	for (uint64_t i = 0; i < 5; i++) {
		char name[32];
		snprintf(name, sizeof name, "[%s+0x10]", mods[i]);
		uint32_t f = flagged(&p, EMBER_FRAME_NATIVE, name, mods[i], ns);
		CHECK(ember_profile_add(&p, stack(&p, 1, f), t1, i < 2 ? 30 : 20) == 0);
	}
	text = unsym_text(&p);
	CHECK_STR(text, "ember: 100.0% of samples (120) end in code without symbols: libd.so 25.0%, libe.so 25.0%, "
			"liba.so 16.7%, libb.so 16.7%, others 16.7%; install the -dbgsym packages or see "
			"`ember report --by module`\n");
	free(text);
	ember_profile_free(&p);
}

int main(void)
{
	test_strtab();
	test_frames();
	test_empty_stack_first();
	test_stacks_threads_rows();
	test_report();
	test_report_print_edges();
	test_unsymbolized();
	test_saturation();
	test_scaling();
	return check_report();
}
