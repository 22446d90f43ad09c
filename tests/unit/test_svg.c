/* Unit tests: SVG flame graph exporter (exporters/svg.c).
 *
 *   test_svg --checker tests/exporters/check_svg.py [--python /usr/bin/python3]
 *   test_svg --write FILE [--threads] [--icicle] [--hostile]
 *            writes the mixed (or hostile) profile, for the browser test
 *
 * Structure (well-formed XML, the frame contract, geometry, nesting,
 * pruning, URLs) is checked by check_svg.py; text is checked here. */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "test_files.h"
#include "exporters.h"
#include "synthetic_profiles.h"
#include "utf8.h"

static const char *python = "/usr/bin/python3", *checker;

static char *svg_of(const struct ember_profile *p, const struct ember_export_opts *o)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	CHECK(ember_write_svg(out, p, o) == 0);
	fclose(out);
	return text;
}

/* Run check_svg.py on svg; returns its summary line ("" on failure). */
static const char *run_checker(const char *svg, const char *args)
{
	static char summary[512];
	char path[] = "/tmp/test_svg_XXXXXX.svg", cmd[1024], line[512];
	int fd = mkstemps(path, 4);

	summary[0] = '\0';
	CHECK(fd >= 0);
	if (fd < 0)
		return summary;
	CHECK(write(fd, svg, strlen(svg)) == (ssize_t)strlen(svg));
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s %s %s %s 2>&1", python, checker, path, args);
	FILE *f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "frames=", 7))
			snprintf(summary, sizeof(summary), "%s", line);
		else
			fprintf(stderr, "check_svg.py: %s", line);
	}
	int rc = f ? pclose(f) : -1;
	CHECK(rc == 0);
	if (rc != 0)
		fprintf(stderr, "  (%s, kept %s)\n", args, path);
	else
		unlink(path);
	return summary;
}

/* The text of element id="ID" up to its end tag. */
static const char *element(const char *svg, const char *id, char *buf, size_t size)
{
	char key[64];
	snprintf(key, sizeof(key), "id=\"%s\"", id);
	const char *s = strstr(svg, key), *e = s ? strstr(s, "</text>") : NULL;
	size_t n = s && e ? (size_t)(e - s) : 0;
	if (n >= size)
		n = size - 1;
	memcpy(buf, s ? s : "", n);
	buf[n] = '\0';
	return buf;
}

/* Only tab-free, newline-only, valid UTF-8 text. */
static bool clean_text(const char *s)
{
	size_t n = strlen(s), i = 0;
	while (i < n) {
		uint32_t cp;
		size_t len = ember_utf8_next((const unsigned char *)s + i, n - i, &cp);
		if ((cp < 0x20 && cp != '\n') || (cp == 0xfffd && memcmp(s + i, "\xef\xbf\xbd", 3)))
			return false;
		i += len;
	}
	return true;
}

static void test_mixed(void)
{
	struct ember_profile p;
	char buf[2048];
	CHECK(ember_profile_init(&p) == 0 && synth_mixed(&p) == 0);

	struct ember_export_opts flat = { 0 }, threads = { .threads = true }, icicle = { .icicle = true };
	char *svg = svg_of(&p, &flat);
	CHECK_STR(run_checker(svg, "--total 1000"), "frames=13 max_depth=6 total=1000\n");
	CHECK(clean_text(svg));
	CHECK(strstr(svg, "<title>cv::GaussianBlur(cv::_InputArray const&amp;, cv::_OutputArray const&amp;) "
			  "(700 samples, 70.00%)</title>"));
	CHECK(strstr(svg, "<title>all (1,000 samples, 100.00%)</title>"));
	CHECK(strstr(svg, "<title>ksys_read_[k] (50 samples, 5.00%)</title>"));
	/* kinds: classes and the legend */
	CHECK(strstr(svg, "<g class=\"k1\" s=\"0\" n=\"850\"><title>&lt;module&gt; (pipeline.py:40) (850"));
	CHECK(strstr(svg, "<g class=\"k3\" s=\"0\" n=\"700\"><title>_PyEval_EvalFrameDefault"));
	CHECK(strstr(svg, "<g class=\"k2\" s=\"800\" n=\"50\"><title>ksys_read_[k]"));
	CHECK(strstr(svg, "<g id=\"legend\">"));
	/* the rows the script pins to a scrolled window: after the frames, with
	 * the buttons and the details; the script knows the height */
	const char *frames = strstr(svg, "<g id=\"frames\">"), *header = strstr(svg, "<g id=\"header\"><rect class=\"bar\"");
	const char *footer = strstr(svg, "<g id=\"footer\"><rect class=\"bar\" x=\"0\" y=\"196.0\" width=\"1200.0\" height=\"34.0\"/>");
	CHECK(frames && header && footer && frames < header && header < footer);
	CHECK(header && strstr(header, "id=\"search\"") < footer && strstr(header, "id=\"unzoom\"") < footer);
	CHECK(footer && strstr(footer, "id=\"details\"") && strstr(footer, "id=\"matched\""));
	CHECK(strstr(svg, "height=\"230\" viewBox=\"0 0 1200 230\"") && strstr(svg, "{width: 1200, height: 230, "));
	for (const char *k = "Python\0native\0interpreter\0kernel\0special\0"; *k; k += strlen(k) + 1) {
		snprintf(buf, sizeof(buf), ">%s</text>", k);
		CHECK(strstr(svg, buf));
	}
	/* title and subtitle */
	CHECK(strstr(element(svg, "title", buf, sizeof(buf)), "ember: python3 pipeline.py --frames 100"));
	element(svg, "subtitle", buf, sizeof(buf));
	CHECK(strstr(buf, "2025-11-21 04:40:00 UTC"));
	CHECK(strstr(buf, "99 Hz"));
	CHECK(strstr(buf, "1,000 samples"));
	CHECK(strstr(buf, "5.00 s"));
	CHECK(strstr(buf, "lost 3"));
	CHECK(strstr(buf, "truncated 7"));
	CHECK(strstr(buf, "mismatched 2"));
	/* siblings sorted by name: <module> < start_thread < worker_main */
	const char *mod = strstr(svg, "<title>&lt;module&gt;"), *st = strstr(svg, "<title>start_thread"),
		   *wk = strstr(svg, "<title>worker_main");
	CHECK(mod && st && wk && mod < st && st < wk);
	CHECK(strstr(svg, "s=\"850\" n=\"100\"><title>start_thread"));
	CHECK(strstr(svg, "s=\"950\" n=\"50\"><title>worker_main"));
	/* labels cut to the box like flamegraph.pl: 118 px = 16 glyphs */
	CHECK(strstr(svg, ">relu (model.py..</text>"));
	CHECK(strstr(svg, ">cv::hlineSmooth</text>"));
	/* standalone: no external references, the script inline */
	CHECK(!strstr(svg, "href"));
	CHECK(count_of(svg, "http") == 2);
	CHECK(count_of(svg, "<script") == 1 && count_of(svg, "]]>") == 2);
	CHECK(strstr(svg, "total: 1000, inverted: false"));
	/* without --threads, no thread roots */
	CHECK(!strstr(svg, "(4242)"));
	/* deterministic */
	char *again = svg_of(&p, &flat);
	CHECK(again && strcmp(svg, again) == 0);
	free(again);
	free(svg);

	svg = svg_of(&p, &threads);
	CHECK_STR(run_checker(svg, "--total 1000"), "frames=16 max_depth=7 total=1000\n");
	CHECK(strstr(svg, "<title>python3 (4242) (850 samples, 85.00%)</title>"));
	CHECK(strstr(svg, "<title>blas-worker (4250) (100 samples, 10.00%)</title>"));
	CHECK(strstr(svg, "<title>python3 (4300) (50 samples, 5.00%)</title>"));
	CHECK(strstr(svg, "<g class=\"k4\" s=\"0\" n=\"100\"><title>blas-worker (4250)"));
	free(svg);

	svg = svg_of(&p, &icicle);
	CHECK_STR(run_checker(svg, "--total 1000 --icicle"), "frames=13 max_depth=6 total=1000\n");
	CHECK(strstr(svg, "<title>all (1,000 samples, 100.00%)</title><rect x=\"10.0\" y=\"84.0\""));
	CHECK(strstr(svg, "inverted: true"));
	free(svg);

	/* root at the bottom of a flame graph: height - 34 - 16 + 1 */
	struct ember_export_opts narrow = { .width_px = 300 };
	svg = svg_of(&p, &narrow);
	CHECK(strstr(svg, "width=\"300\" height=\"230\""));
	CHECK(strstr(svg, "<title>all (1,000 samples, 100.00%)</title><rect x=\"10.0\" y=\"181.0\" width=\"280.0\""));
	CHECK(strstr(svg, "<title>worker_main (multiprocessing/pool.py:125) (50 samples, 5.00%)</title>"
			  "<rect x=\"276.0\" y=\"165.0\" width=\"14.0\" height=\"15\""));
	CHECK(strstr(svg, "rx=\"2\"/><text/></g>"));   /* 14 px: no label */
	CHECK_STR(run_checker(svg, "--total 1000"), "frames=13 max_depth=6 total=1000\n");
	free(svg);

	/* a custom title, escaped */
	struct ember_export_opts titled = { .title = "a<b & \"c\"\x01" };
	svg = svg_of(&p, &titled);
	CHECK(strstr(svg, "<title>a&lt;b &amp; &quot;c&quot; </title>"));
	CHECK(!strstr(svg, "ember: python3"));
	free(svg);
	ember_profile_free(&p);
}

static void test_hostile(void)
{
	struct ember_profile p;
	CHECK(ember_profile_init(&p) == 0 && synth_hostile(&p) == 0);
	uint64_t total = ember_profile_total(&p);
	char args[64];
	snprintf(args, sizeof(args), "--total %llu", (unsigned long long)total);

	for (int threads = 0; threads <= 1; threads++) {
		struct ember_export_opts o = { .threads = threads };
		char *svg = svg_of(&p, &o);
		CHECK(strstr(run_checker(svg, args), "frames="));
		CHECK(clean_text(svg));
		CHECK(!strstr(svg, "<script>"));
		CHECK(!strstr(svg, "alert(\""));
		CHECK(strstr(svg, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"));
		/* ';' as folded prints it */
		CHECK(strstr(svg, "<title>quote&quot;apos&#39; ("));
		CHECK(strstr(svg, "<title>a&amp;b:c (dir/&lt;file&gt;&amp;&quot;x&quot;.py:2) ("));
		CHECK(strstr(svg, "<title>ctrl ("));               /* controls as spaces, trimmed */
		CHECK(strstr(svg, "nonascii_函数_ünï_😀"));
		CHECK(strstr(svg, "bad\xef\xbf\xbd\xef\xbf\xbdutf8"));
		CHECK(strstr(svg, "]]&gt;"));
		CHECK(count_of(svg, "]]>") == 2);
		/* the command in the title */
		CHECK(strstr(svg, "ember: ./evil --name=&#39;&lt;script&gt;alert(1)&lt;/script&gt;&#39; &amp; "
				  "&quot;quoted&quot;"));
		if (threads) {
			CHECK(strstr(svg, "<title>thr&lt;&amp;&gt;&quot;&#39; (2) ("));
			CHECK(strstr(svg, "<title>名前 (1) ("));
		}
		free(svg);
	}
	ember_profile_free(&p);
}

static void test_empty(void)
{
	struct ember_profile p;
	CHECK(ember_profile_init(&p) == 0 && synth_empty(&p) == 0);
	char buf[512];
	char *svg = svg_of(&p, NULL);
	CHECK_STR(run_checker(svg, ""), "frames=0 max_depth=0 total=0\n");
	CHECK(strstr(svg, ">No samples</text>"));
	CHECK(strstr(svg, "<g id=\"frames\">\n</g>"));
	CHECK(strstr(element(svg, "subtitle", buf, sizeof(buf)), "0 samples"));
	free(svg);
	ember_profile_free(&p);

	/* a stack with no frames prints as [unknown] */
	CHECK(ember_profile_init(&p) == 0);
	uint32_t st = ember_profile_stack(&p, NULL, 0), th = ember_profile_thread(&p, 1, 1, "t");
	CHECK(ember_profile_add(&p, st, th, 5) == 0);
	svg = svg_of(&p, NULL);
	CHECK(strstr(svg, "<title>[unknown] (5 samples, 100.00%)</title>"));
	CHECK(strstr(svg, "ember: flame graph"));
	CHECK_STR(run_checker(svg, "--total 5"), "frames=2 max_depth=1 total=5\n");
	free(svg);
	ember_profile_free(&p);
}

static void test_recursive(void)
{
	struct ember_profile p;
	CHECK(ember_profile_init(&p) == 0 && synth_recursive(&p, 20, 10) == 0);
	struct ember_export_opts o = { .icicle = true };
	char *svg = svg_of(&p, &o);
	/* main + 20 rec + leaf under the root; 20 depths x (10 + 6) samples */
	CHECK_STR(run_checker(svg, "--total 320 --icicle"), "frames=42 max_depth=22 total=320\n");
	CHECK(strstr(svg, "<title>rec (rec.py:9) (320 samples, 100.00%)</title>"));
	CHECK(strstr(svg, "<title>leaf (rec.py:3) (10 samples, 3.13%)</title>"));
	free(svg);
	ember_profile_free(&p);
}

static uint32_t native(struct ember_profile *p, const char *name)
{
	struct ember_frame f = { .kind = EMBER_FRAME_NATIVE, .name = name, .file = "", .module = "" };
	return ember_profile_frame(p, &f);
}

static void add(struct ember_profile *p, const uint32_t *ids, uint32_t n, uint64_t count)
{
	uint32_t th = ember_profile_thread(p, 1, 1, "main");
	CHECK(ember_profile_add(p, ember_profile_stack(p, ids, n), th, count) == 0);
}

static void test_pruning(void)
{
	struct ember_profile p;
	CHECK(ember_profile_init(&p) == 0);
	uint32_t a = native(&p, "big"), b = native(&p, "tiny_child"), c = native(&p, "tiny_root");
	uint32_t d = native(&p, "visible");
	add(&p, (uint32_t[]){ a }, 1, 1000000);
	add(&p, (uint32_t[]){ a, b }, 2, 1);
	add(&p, (uint32_t[]){ c }, 1, 1);
	add(&p, (uint32_t[]){ a, d }, 2, 1000);        /* 1.2 px */
	char *svg = svg_of(&p, NULL);
	/* 1 sample of 1,001,002 is 0.001 px: gone, but still counted above */
	CHECK(!strstr(svg, "tiny_child") && !strstr(svg, "tiny_root"));
	CHECK(strstr(svg, "<g class=\"k0\" s=\"0\" n=\"1001001\"><title>big (1,001,001 samples, 100.00%)"));
	/* after the hidden tiny_child (sorted first), whose sample keeps its place */
	CHECK(strstr(svg, "<g class=\"k0\" s=\"1\" n=\"1000\"><title>visible"));
	CHECK_STR(run_checker(svg, "--total 1001002"), "frames=3 max_depth=2 total=1001002\n");
	free(svg);

	/* min_width_px: everything under 1.5 px goes */
	struct ember_export_opts o = { .min_width_px = 1.5 };
	svg = svg_of(&p, &o);
	CHECK(!strstr(svg, "visible"));
	CHECK_STR(run_checker(svg, "--total 1001002 --min-width 1.5"), "frames=2 max_depth=1 total=1001002\n");
	free(svg);
	ember_profile_free(&p);

	/* and on the mixed profile: 200 px keeps the 70% tower and its parents */
	CHECK(ember_profile_init(&p) == 0 && synth_mixed(&p) == 0);
	o.min_width_px = 200;
	svg = svg_of(&p, &o);
	CHECK_STR(run_checker(svg, "--total 1000 --min-width 200"), "frames=7 max_depth=6 total=1000\n");
	CHECK(!strstr(svg, "relu") && !strstr(svg, "start_thread"));
	CHECK(strstr(svg, "width=\"1003.0\""));   /* <module>: 850 samples, pruned children included */
	free(svg);
	ember_profile_free(&p);
}

/* Frames that print alike merge; labels count CJK as wide. */
static void test_merge_and_labels(void)
{
	struct ember_profile p;
	CHECK(ember_profile_init(&p) == 0);
	struct ember_frame f1 = { .kind = EMBER_FRAME_PYTHON, .name = "run", .file = "a.py", .line = 3,
				  .first_line = 1, .module = "" };
	struct ember_frame f2 = f1;
	f2.first_line = 2;   /* not printed: the same frame on the graph */
	uint32_t x = ember_profile_frame(&p, &f1), y = ember_profile_frame(&p, &f2);
	uint32_t wide = native(&p, "漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字");
	CHECK(x != y);
	add(&p, (uint32_t[]){ x, wide }, 2, 10);
	add(&p, (uint32_t[]){ y, wide }, 2, 10);
	struct ember_export_opts o = { .width_px = 220 };  /* 200 px: 28 glyphs, 14 wide ones */
	char *svg = svg_of(&p, &o);
	CHECK(count_of(svg, "<title>run (a.py:3) (20 samples, 100.00%)</title>") == 1);
	CHECK(strstr(svg, ">漢字漢字漢字漢字漢字漢字漢..</text>"));
	CHECK_STR(run_checker(svg, "--total 20"), "frames=3 max_depth=2 total=20\n");
	free(svg);
	ember_profile_free(&p);
}

/* A frame whose caller was found by a stack scan says so in its tooltip
 * (after the numbers, which the script reads by the last " ("); the same
 * function without the mark is a box of its own. */
static void test_scanned_note(void)
{
	struct ember_profile p;
	CHECK(ember_profile_init(&p) == 0);
	uint32_t caller = native(&p, "dgemm_nn");
	struct ember_frame k = { .kind = EMBER_FRAME_NATIVE, .name = "dgemm_kernel", .file = "", .module = "",
				 .flags = EMBER_FRAME_CALLER_SCANNED };
	uint32_t scanned = ember_profile_frame(&p, &k);
	k.flags = 0;
	uint32_t plain = ember_profile_frame(&p, &k);
	add(&p, (uint32_t[]){ caller, scanned }, 2, 30);
	add(&p, (uint32_t[]){ caller, plain }, 2, 10);
	char *svg = svg_of(&p, NULL);
	CHECK(strstr(svg, "<title>dgemm_kernel (30 samples, 75.00%)\nno unwind info here: its caller was found by "
			  "scanning the stack</title>"));
	CHECK(strstr(svg, "<title>dgemm_kernel (10 samples, 25.00%)</title>"));
	CHECK(count_of(svg, "scanning the stack") == 1);
	CHECK_STR(run_checker(svg, "--total 40"), "frames=4 max_depth=2 total=40\n");
	free(svg);
	ember_profile_free(&p);
}

/* 70,000 siblings: labels beyond 16 bits sort in several radix passes. */
static void test_many_labels(void)
{
	struct ember_profile p;
	char name[16];
	CHECK(ember_profile_init(&p) == 0);
	for (uint32_t i = 70000; i-- > 0;) {   /* added in reverse name order */
		snprintf(name, sizeof(name), "f%05u", i);
		uint32_t id = native(&p, name);
		add(&p, &id, 1, i % 7000 == 0 ? 100000 : 1);
	}
	char *svg = svg_of(&p, NULL);
	/* f14000 comes after f00000..f13999: two big ones and 13,998 small */
	CHECK(strstr(svg, "s=\"213998\" n=\"100000\"><title>f14000 (100,000 samples"));
	CHECK(strstr(svg, "s=\"0\" n=\"100000\"><title>f00000 ("));
	CHECK(strstr(svg, "s=\"962991\" n=\"100000\"><title>f63000 ("));
	CHECK_STR(run_checker(svg, "--total 1069990"), "frames=11 max_depth=1 total=1069990\n");
	free(svg);
	ember_profile_free(&p);
}

/* One stack of 100,000 frames: the tree is built and drawn without
 * recursion (a C stack of 8 MiB held about 50,000 levels), every level is
 * a frame, and pre-order puts the whole tower before its sibling. */
static void test_deep_stack(void)
{
	enum { DEPTH = 100000 };
	struct ember_profile p;
	uint32_t *ids = malloc(DEPTH * sizeof(*ids));
	char name[32];

	CHECK(ids && ember_profile_init(&p) == 0);
	if (!ids)
		return;
	for (uint32_t i = 0; i < DEPTH - 1; i++) {
		snprintf(name, sizeof(name), "level%u", i % 1000);
		ids[i] = native(&p, name);
	}
	ids[DEPTH - 1] = native(&p, "deepest_leaf");
	add(&p, ids, DEPTH, 3);
	uint32_t m = native(&p, "main");
	add(&p, &m, 1, 1);
	for (int icicle = 0; icicle < 2; icicle++) {
		struct ember_export_opts o = { .icicle = icicle };
		char *svg = svg_of(&p, &o);
		char height[64];
		CHECK(svg && count_of(svg, "<g class=\"k") == 1 + DEPTH + 1);
		/* (depth + 1) rows of 16 px and the 84 + 34 px of text around them */
		snprintf(height, sizeof(height), " height=\"%u\" ", (DEPTH + 1) * 16 + 84 + 34);
		CHECK(svg && strstr(svg, height));
		const char *leaf = svg ? strstr(svg, "<title>deepest_leaf (3 samples, 75.00%)</title>") : NULL;
		const char *sib = svg ? strstr(svg, "s=\"3\" n=\"1\"><title>main (1 samples, 25.00%)</title>") : NULL;
		CHECK(leaf && sib && leaf < sib);
		CHECK(svg && count_of(svg, "<title>level999 (3 samples, 75.00%)</title>") == DEPTH / 1000 - 1);
		free(svg);
	}
	free(ids);
	ember_profile_free(&p);
}

/* Three stacks of 2^63 - 1 samples: the profile stops at that total (the
 * first stack fills it; profile.h), so the graph's percentages are of a
 * true total, never of one wrapped past 2^64. */
static void test_saturated_counts(void)
{
	struct ember_profile p;
	CHECK(ember_profile_init(&p) == 0);
	uint32_t a = native(&p, "a"), b = native(&p, "b"), c = native(&p, "c");
	add(&p, &a, 1, EMBER_COUNT_MAX);
	add(&p, &b, 1, EMBER_COUNT_MAX);
	add(&p, &c, 1, EMBER_COUNT_MAX);
	CHECK(ember_profile_saturated(&p));
	char *svg = svg_of(&p, NULL);
	CHECK(svg && strstr(svg, "<title>all (9,223,372,036,854,775,807 samples, 100.00%)</title>"));
	CHECK(svg && strstr(svg, "<title>a (9,223,372,036,854,775,807 samples, 100.00%)</title>"));
	CHECK(svg && !strstr(svg, "<title>b (") && !strstr(svg, "<title>c ("));
	CHECK_STR(run_checker(svg, "--total 9223372036854775807"), "frames=2 max_depth=1 total=9223372036854775807\n");
	free(svg);
	ember_profile_free(&p);
}

static void test_write_error(void)
{
	struct ember_profile p;
	CHECK(ember_profile_init(&p) == 0 && synth_mixed(&p) == 0);
	FILE *full = fopen("/dev/full", "w");
	if (full) {
		errno = 0;
		CHECK(ember_write_svg(full, &p, NULL) == -1);
		CHECK(errno != 0);
		fclose(full);
	}
	ember_profile_free(&p);
}

int main(int argc, char **argv)
{
	const char *write_to = NULL;
	struct ember_export_opts o = { 0 };
	bool hostile = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--checker") && i + 1 < argc)
			checker = argv[++i];
		else if (!strcmp(argv[i], "--python") && i + 1 < argc)
			python = argv[++i];
		else if (!strcmp(argv[i], "--write") && i + 1 < argc)
			write_to = argv[++i];
		else if (!strcmp(argv[i], "--threads"))
			o.threads = true;
		else if (!strcmp(argv[i], "--icicle"))
			o.icicle = true;
		else if (!strcmp(argv[i], "--hostile"))
			hostile = true;
	}
	if (write_to) {
		struct ember_profile p;
		FILE *f = fopen(write_to, "w");
		if (!f || ember_profile_init(&p) != 0 || (hostile ? synth_hostile(&p) : synth_mixed(&p)) != 0 ||
		    ember_write_svg(f, &p, &o) != 0 ||
		    fclose(f) != 0) {
			perror(write_to);
			return 1;
		}
		ember_profile_free(&p);
		return 0;
	}
	if (!checker) {
		fprintf(stderr, "usage: test_svg --checker check_svg.py [--python PYTHON]\n");
		return 2;
	}
	test_mixed();
	test_hostile();
	test_empty();
	test_recursive();
	test_pruning();
	test_merge_and_labels();
	test_scanned_note();
	test_many_labels();
	test_deep_stack();
	test_saturated_counts();
	test_write_error();
	return check_report();
}
