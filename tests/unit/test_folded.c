/* Unit tests: folded stacks exporter (text, sanitising, sorting, output). */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exporters.h"
#include "folded_text.h"

static uint32_t frame(struct ember_profile *p, enum ember_frame_kind kind, const char *name,
		      const char *file, uint32_t line)
{
	struct ember_frame f = { .kind = kind, .name = name, .file = file, .line = line };
	return ember_profile_frame(p, &f);
}

static uint32_t stack(struct ember_profile *p, uint32_t n, const uint32_t *ids)
{
	return ember_profile_stack(p, ids, n);
}

/* The folded text of p; caller frees. */
static char *folded(const struct ember_profile *p, bool threads)
{
	struct ember_export_opts o = { .threads = threads };
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	CHECK(ember_write_folded(out, p, &o) == 0);
	fclose(out);
	return text;
}

static const char *text_of(enum ember_frame_kind kind, const char *name, const char *file, uint32_t line)
{
	static char buf[256];
	struct ember_frame f = { .kind = kind, .name = name, .file = file ? file : "", .line = line,
				 .module = "" };
	size_t n = ember_folded_frame_text(&f, buf, sizeof(buf));

	CHECK(n == strlen(buf));
	return buf;
}

static const char *native(const char *name)
{
	return text_of(EMBER_FRAME_NATIVE, name, "", 0);
}

static void test_frame_text(void)
{
	/* kinds */
	CHECK_STR(native("cv::resize"), "cv::resize");
	CHECK_STR(text_of(EMBER_FRAME_INTERP, "_PyEval_EvalFrameDefault", "ceval.c", 9), "_PyEval_EvalFrameDefault");
	CHECK_STR(text_of(EMBER_FRAME_KERNEL, "do_syscall_64", "", 0), "do_syscall_64_[k]");
	CHECK_STR(text_of(EMBER_FRAME_KERNEL, "", "", 0), "[unknown]_[k]");
	CHECK_STR(text_of(EMBER_FRAME_PYTHON, "run", "app.py", 12), "run (app.py:12)");
	CHECK_STR(text_of(EMBER_FRAME_PYTHON, "run", "app.py", 0), "run (app.py)");
	CHECK_STR(text_of(EMBER_FRAME_PYTHON, "run", "", 12), "run");
	CHECK_STR(text_of(EMBER_FRAME_PYTHON, "", "app.py", 1), "[unknown] (app.py:1)");
	CHECK_STR(text_of(EMBER_FRAME_PYTHON, "run", "dir;x/a\tb.py ", 3), "run (dir:x/a b.py:3)");
	CHECK_STR(text_of(EMBER_FRAME_PYTHON, "<module>", "/usr/lib/python3.11/x.py", 7),
		  "<module> (/usr/lib/python3.11/x.py:7)");
	CHECK_STR(text_of(EMBER_FRAME_SPECIAL, "[truncated]", "", 0), "[truncated]");

	/* separators and controls */
	CHECK_STR(native("a;b"), "a:b");
	CHECK_STR(native("std::array<u8; 8>"), "std::array<u8: 8>");
	CHECK_STR(native("a\tb"), "a b");
	CHECK_STR(native("a\nb\rc"), "a b c");
	CHECK_STR(native("a\x01" "b\x1b" "c\x7f" "d"), "a b c d");
	CHECK_STR(native("a\xc2\x85" "b"), "a b");           /* NEL */
	CHECK_STR(native("a\xe2\x80\xa8" "b\xe2\x80\xa9" "c"), "a b c"); /* LS, PS */
	CHECK_STR(native("a  b"), "a  b");                   /* nothing collapses */
	CHECK_STR(native("<&\">'"), "<&\">'");               /* XML escaping is the SVG writer's */

	/* trimming and empty names */
	CHECK_STR(native("  main"), "main");
	CHECK_STR(native("main \t"), "main");
	CHECK_STR(native("\xc2\xa0main\xe3\x80\x80"), "main"); /* Unicode blanks too */
	CHECK_STR(native(""), "[unknown]");
	CHECK_STR(native("  \t\n"), "[unknown]");
	CHECK_STR(text_of(EMBER_FRAME_NATIVE, NULL, "", 0), "[unknown]");

	/* invalid UTF-8: U+FFFD per maximal ill-formed subsequence */
	CHECK_STR(native("a\xff" "b"), "a\xef\xbf\xbd" "b");
	CHECK_STR(native("a\xe2\x82"), "a\xef\xbf\xbd");
	CHECK_STR(native("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");           /* overlong */
	CHECK_STR(native("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); /* surrogate */
	CHECK_STR(native("\xf4\x90\x80\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	CHECK_STR(native("caf\xc3\xa9 \xcf\x80 \xf0\x9f\x94\xa5"), "caf\xc3\xa9 \xcf\x80 \xf0\x9f\x94\xa5");

	/* a trailing number would be read as a count */
	CHECK_STR(native("foo 123"), "foo 123_");
	CHECK_STR(native("foo\t42"), "foo 42_");
	CHECK_STR(native("foo 12 "), "foo 12_");
	CHECK_STR(native("foo 1.5"), "foo 1.5_");
	CHECK_STR(native("foo 12."), "foo 12._");
	CHECK_STR(native("foo\xc2\xa0" "7"), "foo\xc2\xa0" "7_");
	CHECK_STR(native("foo123"), "foo123");
	CHECK_STR(native("123"), "123");
	CHECK_STR(native("foo .5"), "foo .5");
	CHECK_STR(native("v 1.2.3"), "v 1.2.3");
	CHECK_STR(native("foo 12)"), "foo 12)");
	CHECK_STR(text_of(EMBER_FRAME_KERNEL, "irq 5", "", 0), "irq 5_[k]");

	/* a small buffer: cut on a character boundary, rules kept */
	char small[8];
	struct ember_frame f = { .kind = EMBER_FRAME_NATIVE, .name = "abcdefghij", .file = "", .module = "" };
	CHECK(ember_folded_frame_text(&f, small, sizeof(small)) == 7);
	CHECK_STR(small, "abcdefg");
	f.name = "\xcf\x80\xcf\x80\xcf\x80\xcf\x80";
	CHECK(ember_folded_frame_text(&f, small, 6) == 4);
	CHECK_STR(small, "\xcf\x80\xcf\x80");
	f.name = "ab 1234567";
	CHECK(ember_folded_frame_text(&f, small, sizeof(small)) == 7);
	CHECK_STR(small, "ab 123_");
	f.name = "abcdef  xyz";
	CHECK(ember_folded_frame_text(&f, small, 8) == 6);
	CHECK_STR(small, "abcdef");
	CHECK(ember_folded_frame_text(&f, small, 0) == 0);
}

/* worker (11): main;foo x3 and main;bar;do_syscall_64 x1; tid 12 (no
 * name): main;foo x2; main;run (app.py:12) x4 on tid 11. */
static void build_small(struct ember_profile *p)
{
	CHECK(ember_profile_init(p) == 0);
	uint32_t m = frame(p, EMBER_FRAME_NATIVE, "main", "main.c", 3);
	uint32_t foo = frame(p, EMBER_FRAME_NATIVE, "foo", "", 0);
	uint32_t bar = frame(p, EMBER_FRAME_NATIVE, "bar", "", 0);
	uint32_t k = frame(p, EMBER_FRAME_KERNEL, "do_syscall_64", "", 0);
	uint32_t run = frame(p, EMBER_FRAME_PYTHON, "run", "app.py", 12);
	uint32_t w = ember_profile_thread(p, 10, 11, "worker");
	uint32_t anon = ember_profile_thread(p, 10, 12, NULL);

	CHECK(ember_profile_add(p, stack(p, 2, (uint32_t[]){ m, run }), w, 4) == 0);
	CHECK(ember_profile_add(p, stack(p, 2, (uint32_t[]){ m, foo }), w, 3) == 0);
	CHECK(ember_profile_add(p, stack(p, 3, (uint32_t[]){ m, bar, k }), w, 1) == 0);
	CHECK(ember_profile_add(p, stack(p, 2, (uint32_t[]){ m, foo }), anon, 2) == 0);
}

static void test_small_profile(void)
{
	struct ember_profile p;
	char *text;

	build_small(&p);
	text = folded(&p, false);
	CHECK_STR(text,
		  "main;bar;do_syscall_64_[k] 1\n"
		  "main;foo 5\n"
		  "main;run (app.py:12) 4\n");
	free(text);

	text = folded(&p, true);
	CHECK_STR(text,
		  "thread (12);main;foo 2\n"
		  "worker (11);main;bar;do_syscall_64_[k] 1\n"
		  "worker (11);main;foo 3\n"
		  "worker (11);main;run (app.py:12) 4\n");
	free(text);

	/* NULL options: no thread roots */
	char *t2 = NULL;
	size_t len;
	FILE *out = open_memstream(&t2, &len);
	CHECK(ember_write_folded(out, &p, NULL) == 0);
	fclose(out);
	CHECK(t2 && strncmp(t2, "main;bar;", 9) == 0);
	free(t2);
	ember_profile_free(&p);

	/* empty profile: empty output */
	CHECK(ember_profile_init(&p) == 0);
	text = folded(&p, true);
	CHECK_STR(text, "");
	free(text);
	ember_profile_free(&p);
}

static void test_sort_merge(void)
{
	struct ember_profile p;
	char *text;

	CHECK(ember_profile_init(&p) == 0);
	uint32_t a = frame(&p, EMBER_FRAME_NATIVE, "a", "", 0);
	uint32_t ab = frame(&p, EMBER_FRAME_NATIVE, "a b", "", 0);
	uint32_t ax = frame(&p, EMBER_FRAME_NATIVE, "a(x)", "", 0);
	uint32_t z = frame(&p, EMBER_FRAME_NATIVE, "z", "", 0);
	/* two frames that print alike: same text, different first_line */
	struct ember_frame py = { .kind = EMBER_FRAME_PYTHON, .name = "f", .file = "m.py", .line = 4,
				  .first_line = 1 };
	uint32_t py1 = ember_profile_frame(&p, &py);
	py.first_line = 2;
	uint32_t py2 = ember_profile_frame(&p, &py);
	uint32_t empty = frame(&p, EMBER_FRAME_NATIVE, "", "", 0);
	uint32_t t = ember_profile_thread(&p, 1, 1, "t");

	CHECK(py1 != py2);
	CHECK(ember_profile_add(&p, stack(&p, 2, (uint32_t[]){ a, z }), t, 1) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 1, (uint32_t[]){ a }), t, 2) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 2, (uint32_t[]){ ab, z }), t, 3) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 2, (uint32_t[]){ ax, z }), t, 4) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 2, (uint32_t[]){ a, py1 }), t, 5) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 2, (uint32_t[]){ a, py2 }), t, 6) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 0, NULL), t, 7) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 1, (uint32_t[]){ empty }), t, 8) == 0);
	CHECK(ember_profile_add(&p, stack(&p, 1, (uint32_t[]){ z }), t, 0) == 0);
	text = folded(&p, false);
	/* bytewise by stack string: ' ' < '(' < ';' and a prefix sorts first;
	 * the empty stack and the empty name both print as [unknown]; a zero
	 * count prints nothing */
	CHECK_STR(text,
		  "[unknown] 15\n"
		  "a 2\n"
		  "a b;z 3\n"
		  "a(x);z 4\n"
		  "a;f (m.py:4) 11\n"
		  "a;z 1\n");
	free(text);
	ember_profile_free(&p);
}

/* The same samples added in another order print the same bytes. */
static void test_deterministic(void)
{
	struct ember_profile p1, p2;
	const char *names[] = { "x", "y", "z", "w" };
	char *t1, *t2;

	CHECK(ember_profile_init(&p1) == 0);
	CHECK(ember_profile_init(&p2) == 0);
	for (int i = 0; i < 16; i++) {
		int j = 15 - i;
		uint32_t s1[3] = { frame(&p1, EMBER_FRAME_NATIVE, "r", "", 0),
				   frame(&p1, EMBER_FRAME_NATIVE, names[i % 4], "", 0),
				   frame(&p1, EMBER_FRAME_NATIVE, names[i / 4], "", 0) };
		uint32_t s2[3] = { frame(&p2, EMBER_FRAME_NATIVE, "r", "", 0),
				   frame(&p2, EMBER_FRAME_NATIVE, names[j % 4], "", 0),
				   frame(&p2, EMBER_FRAME_NATIVE, names[j / 4], "", 0) };
		CHECK(ember_profile_add(&p1, stack(&p1, 3, s1), ember_profile_thread(&p1, 1, 1 + i % 2, "t"), 1 + i) == 0);
		CHECK(ember_profile_add(&p2, stack(&p2, 3, s2), ember_profile_thread(&p2, 1, 1 + j % 2, "t"), 1 + j) == 0);
	}
	t1 = folded(&p1, true);
	t2 = folded(&p2, true);
	CHECK_STR(t1, t2);
	free(t1);
	free(t2);
	t1 = folded(&p1, false);
	t2 = folded(&p2, false);
	CHECK_STR(t1, t2);
	free(t1);
	free(t2);
	ember_profile_free(&p1);
	ember_profile_free(&p2);
}

static bool valid_utf8(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		int n = *u < 0x80 ? 1 : (*u & 0xe0) == 0xc0 ? 2 : (*u & 0xf0) == 0xe0 ? 3 :
			(*u & 0xf8) == 0xf0 ? 4 : 0;
		if (!n)
			return false;
		for (int i = 1; i < n; i++)
			if ((u[i] & 0xc0) != 0x80)
				return false;
		u += n;
	}
	return true;
}

/* Every line parses as speedscope/flamegraph.pl read it, into the frames
 * that were put in. */
static void test_round_trip(void)
{
	static const char *const hostile[] = {
		"a;b", "semi;colon;s", "tab\there", "new\nline", "cr\rlf", "<&\">", "bad\xff\xfe utf8",
		"trail 123", "trail 1.5", "", "   ", "  lead", "x;", ";", "\x1b[31mred", "end 7 ",
		"only\t", "\xe2\x82", "num 00", "(x) 5",
	};
	size_t nh = sizeof(hostile) / sizeof(hostile[0]);
	struct ember_profile p;
	regex_t line_re, diff_re;

	CHECK(regcomp(&line_re, "^(.*) ([0-9]+)$", REG_EXTENDED) == 0);
	/* flamegraph.pl's differential check on the stack left of the count */
	CHECK(regcomp(&diff_re, "[[:space:]]+[0-9]+(\\.[0-9]*)?$", REG_EXTENDED) == 0);
	CHECK(ember_profile_init(&p) == 0);
	uint32_t t = ember_profile_thread(&p, 1, 7, "thr;ead 9");
	for (size_t i = 0; i < nh; i++) {
		uint32_t ids[4];
		uint32_t n = 1 + i % 4;
		for (uint32_t d = 0; d < n; d++)
			ids[d] = frame(&p, d % 2 ? EMBER_FRAME_PYTHON : EMBER_FRAME_NATIVE,
				       hostile[(i + d) % nh], hostile[(i + 2 * d) % nh], d);
		CHECK(ember_profile_add(&p, stack(&p, n, ids), t, i + 1) == 0);
	}

	for (int threads = 0; threads < 2; threads++) {
		char *text = folded(&p, threads);
		size_t lines = 0, frames = 0;
		uint64_t sum = 0;
		CHECK(valid_utf8(text));
		CHECK(strchr(text, '\t') == NULL && strchr(text, '\r') == NULL);
		CHECK(strchr(text, '\x1b') == NULL);
		for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
			regmatch_t m[3];
			lines++;
			if (regexec(&line_re, line, 3, m, 0) != 0) {
				CHECK(!"line does not match ^(.*) ([0-9]+)$");
				continue;
			}
			sum += strtoull(line + m[2].rm_so, NULL, 10);
			line[m[1].rm_eo] = '\0';
			CHECK(regexec(&diff_re, line, 0, NULL, 0) != 0);
			size_t nf = 1;
			for (const char *c = line; *c; c++)
				nf += *c == ';';
			frames += nf;
			CHECK(strstr(line, ";;") == NULL && line[0] != ';' && line[0] != ' ');
			CHECK(strstr(line, " ;") == NULL && strstr(line, "; ") == NULL);
		}
		/* 20 stacks of 1..4 frames: 50 frames; each line one root more
		 * with --threads.  Lines may merge, but not here: each stack
		 * starts with a different frame. */
		CHECK(lines == nh);
		CHECK(frames == 50 + (threads ? nh : 0));
		CHECK(sum == nh * (nh + 1) / 2);
		free(text);
	}
	regfree(&line_re);
	regfree(&diff_re);
	ember_profile_free(&p);
}

static void test_write_error(void)
{
	struct ember_profile p;
	FILE *full = fopen("/dev/full", "w");

	if (!full) {
		fprintf(stderr, "no /dev/full: write-error test skipped\n");
		return;
	}
	build_small(&p);
	errno = 0;
	CHECK(ember_write_folded(full, &p, &(struct ember_export_opts){ .threads = true }) == -1);
	CHECK(errno == ENOSPC);
	fclose(full);
	ember_profile_free(&p);
}

/* 200k rows over 20k stacks and 16 threads: completes quickly. */
static void test_scaling(void)
{
	struct ember_profile p;
	uint32_t frames[5000], ids[24], threads[16];
	char name[32];

	CHECK(ember_profile_init(&p) == 0);
	for (uint32_t i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "fn_%u", i);
		frames[i] = frame(&p, EMBER_FRAME_NATIVE, name, "", 0);
	}
	for (uint32_t t = 0; t < 16; t++)
		threads[t] = ember_profile_thread(&p, 1, 100 + t, "w");
	for (uint32_t i = 0; i < 200000; i++) {
		uint32_t s = i % 20000, depth = 4 + s % 20;
		for (uint32_t d = 0; d < depth; d++)   /* shared roots, varied leaves */
			ids[d] = frames[d < 3 ? d : (s * 31u + d * 977u) % 5000];
		if (ember_profile_add(&p, stack(&p, depth, ids), threads[(i / 20000 + s) % 16], 1) != 0)
			CHECK(0);
	}
	char *text = folded(&p, true);
	size_t lines = 0;
	for (const char *c = text; *c; c++)
		lines += *c == '\n';
	CHECK(lines == ember_profile_nrows(&p));
	free(text);
	text = folded(&p, false);
	lines = 0;
	for (const char *c = text; *c; c++)
		lines += *c == '\n';
	CHECK(lines == ember_profile_nstacks(&p));
	free(text);
	ember_profile_free(&p);
}

int main(void)
{
	test_frame_text();
	test_small_profile();
	test_sort_merge();
	test_deterministic();
	test_round_trip();
	test_write_error();
	test_scaling();
	return check_report();
}
