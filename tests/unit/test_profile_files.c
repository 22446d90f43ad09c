/* .ember round trips and corruption, frame flags and what older readers
 * make of them, and the tolerant folded reader. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "test_files.h"
#include "exporters.h"
#include "profile_internal.h"
#include "synthetic_profiles.h"

/* Two profiles hold the same data, compared through their folded text
 * (threads on), their meta and their timelines. */
static char *folded_text(const struct ember_profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ember_export_opts o = { .threads = true };
	ember_write_folded(f, p, &o);
	fclose(f);
	return buf;
}

static void same_profile(const struct ember_profile *a, const struct ember_profile *b)
{
	char *ta = folded_text(a), *tb = folded_text(b);
	CHECK_STR(ta, tb);
	free(ta), free(tb);
	CHECK(a->nframes == b->nframes && a->nstacks == b->nstacks && a->nthreads == b->nthreads);
	for (uint32_t i = 0; i < a->nframes && i < b->nframes; i++) {
		const struct ember_frame *x = &a->frames[i], *y = &b->frames[i];
		CHECK(x->kind == y->kind && !strcmp(x->name, y->name) && !strcmp(x->file, y->file) &&
		      x->line == y->line && x->first_line == y->first_line && !strcmp(x->module, y->module) &&
		      !strcmp(x->build_id, y->build_id) && x->inlined == y->inlined && x->flags == y->flags);
	}
	CHECK_STR(a->meta.command, b->meta.command);
	CHECK(a->meta.samples == b->meta.samples && a->meta.lost == b->meta.lost &&
	      a->meta.truncated == b->meta.truncated && a->meta.mismatched == b->meta.mismatched &&
	      a->meta.freq_hz == b->meta.freq_hz && a->meta.start_unix_ns == b->meta.start_unix_ns &&
	      a->meta.duration_ns == b->meta.duration_ns);
	CHECK(a->ntimeline == b->ntimeline);
	if (a->ntimeline == b->ntimeline && a->ntimeline)
		CHECK(memcmp(a->timeline, b->timeline, a->ntimeline * sizeof(*a->timeline)) == 0);
}

static void test_round_trip(int (*build)(struct ember_profile *), const char *name)
{
	struct ember_profile a, b;
	char err[512];
	ember_profile_init(&a);
	CHECK(build(&a) == 0);
	if (a.nframes)   /* a build-id survives too */
		a.frames[0].build_id = ember_profile_cstr(&a, "0123abcd");
	CHECK(ember_profile_save(&a, tmp(name), err, sizeof err) == 0);
	CHECK(ember_profile_is_ember_file(tmp(name)));
	ember_profile_init(&b);
	int rc = ember_profile_load(&b, tmp(name), 1, NULL, err, sizeof err);
	CHECK(rc == EMBER_LOAD_OK);
	if (rc)
		fprintf(stderr, "  %s\n", err);
	else
		same_profile(&a, &b);
	ember_profile_free(&a);
	ember_profile_free(&b);
}

static int build_mixed(struct ember_profile *p) { return synth_mixed(p); }
static int build_hostile(struct ember_profile *p) { return synth_hostile(p); }
static int build_empty(struct ember_profile *p) { return synth_empty(p); }

/* Every way to damage a file gives an error with the file name, never a
 * crash (this runs under ASan in `make test`). */
static void test_corruption(void)
{
	struct ember_profile a;
	char err[512];
	ember_profile_init(&a);
	synth_mixed(&a);
	const char *good = tmp("good.ember");
	ember_profile_save(&a, good, err, sizeof err);
	ember_profile_free(&a);

	/* the decompressed content */
	gzFile gz = gzopen(good, "rb");
	static uint8_t raw[1 << 20];
	int n = gzread(gz, raw, sizeof raw);
	gzclose(gz);
	CHECK(n > 100);
	FILE *f = fopen(good, "rb");
	static uint8_t zipped[1 << 20];
	size_t zn = fread(zipped, 1, sizeof zipped, f);
	fclose(f);

	int bad = 0, total = 0;
	/* truncated compressed files */
	for (size_t cut = 1; cut < zn; cut += zn / 40 + 1) {
		write_file(tmp("cut.ember"), zipped, cut);
		struct ember_profile p;
		ember_profile_init(&p);
		err[0] = 0;
		int rc = ember_profile_load_ember(&p, tmp("cut.ember"), err, sizeof err);
		total++;
		bad += rc != EMBER_LOAD_OK && strstr(err, "cut.ember") != NULL;
		if (!(rc != EMBER_LOAD_OK && strstr(err, "cut.ember")))
			fprintf(stderr, "  cut at %zu of %zu: rc %d, %s\n", cut, zn, rc, err);
		ember_profile_free(&p);
	}
	/* truncated and bit-flipped content, recompressed */
	for (int i = 0; i < 200; i++) {
		static uint8_t copy[1 << 20];
		memcpy(copy, raw, (size_t)n);
		size_t len = (size_t)n;
		if (i < 100)
			len = 8 + (size_t)i * ((size_t)n - 9) / 100;
		else
			copy[8 + (size_t)(i * 7919) % ((size_t)n - 8)] ^= (uint8_t)(1 + i % 255);
		gzFile w = gzopen(tmp("flip.ember"), "wb");
		gzwrite(w, copy, (unsigned)len);
		gzclose(w);
		struct ember_profile p;
		ember_profile_init(&p);
		int rc = ember_profile_load_ember(&p, tmp("flip.ember"), err, sizeof err);
		if (i < 100) {
			total++;
			bad += rc == EMBER_LOAD_BADDATA;
			if (rc != EMBER_LOAD_BADDATA)
				fprintf(stderr, "  content cut to %zu of %d: rc %d\n", len, n, rc);
		}
		ember_profile_free(&p);
	}
	CHECK(bad == total);
	printf("corrupt files rejected: %d of %d\n", bad, total);

	/* a newer format version */
	raw[8] = 9;
	gz = gzopen(tmp("new.ember"), "wb");
	gzwrite(gz, raw, (unsigned)n);
	gzclose(gz);
	struct ember_profile p;
	ember_profile_init(&p);
	CHECK(ember_profile_load_ember(&p, tmp("new.ember"), err, sizeof err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "newer") != NULL);
	ember_profile_free(&p);
	ember_profile_init(&p);
	CHECK(ember_profile_load(&p, tmp("missing.ember"), 1, NULL, err, sizeof err) == EMBER_LOAD_NOINPUT);
	ember_profile_free(&p);
}

/* ---- frame flags: the X section, and what an older reader sees ---- */

static size_t read_content(const char *path, uint8_t *raw, size_t cap)
{
	gzFile gz = gzopen(path, "rb");
	int n = gz ? gzread(gz, raw, (unsigned)cap) : -1;
	if (gz)
		gzclose(gz);
	return n > 0 ? (size_t)n : 0;
}

static uint64_t uvarint(const uint8_t *b, size_t *pos)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t c = b[(*pos)++];
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
	}
	return v;
}

/* The content without its X section, as a reader that skips it sees it. */
static size_t strip_section(uint8_t *raw, size_t n, uint8_t tag, bool *found)
{
	size_t pos = 8;
	uvarint(raw, &pos);                      /* version */
	*found = false;
	while (pos < n) {
		size_t start = pos;
		uint8_t t = raw[pos++];
		uint64_t len = uvarint(raw, &pos);
		if (t == tag) {
			memmove(raw + start, raw + pos + len, n - (pos + len));
			*found = true;
			return n - (pos + len - start);
		}
		pos += len;
	}
	return n;
}

/* The file raw[0..n) without its section tag, as an older writer or
 * reader would have it, written to name and loaded into b (initialised
 * here): whether the section was there and the rest loads. */
static bool load_without(uint8_t *raw, size_t n, uint8_t tag, const char *name, struct ember_profile *b)
{
	char err[256];
	bool found;
	size_t m = strip_section(raw, n, tag, &found);
	gzFile w = gzopen(tmp(name), "wb");
	gzwrite(w, raw, (unsigned)m);
	gzclose(w);
	ember_profile_init(b);
	return found && ember_profile_load_ember(b, tmp(name), err, sizeof err) == EMBER_LOAD_OK;
}

static uint32_t frame_named(const struct ember_profile *p, const char *name, uint8_t flags)
{
	for (uint32_t i = 0; i < p->nframes; i++)
		if (!strcmp(p->frames[i].name, name) && p->frames[i].flags == flags)
			return i;
	return UINT32_MAX;
}

static void test_frame_flags(void)
{
	struct ember_profile a, b;
	char err[512];
	static uint8_t raw[1 << 16];
	ember_profile_init(&a);
	struct ember_frame caller = { .kind = EMBER_FRAME_NATIVE, .name = "dgemm_nn", .module = "libopenblas.so" };
	struct ember_frame kernel = { .kind = EMBER_FRAME_NATIVE, .name = "dgemm_kernel", .module = "libopenblas.so",
				      .flags = EMBER_FRAME_CALLER_SCANNED };
	uint32_t ids[2] = { ember_profile_frame(&a, &caller), ember_profile_frame(&a, &kernel) };
	uint32_t th = ember_profile_thread(&a, 1, 1, "main");
	ember_profile_add(&a, ember_profile_stack(&a, ids, 2), th, 7);
	CHECK(ember_profile_save(&a, tmp("flags.ember"), err, sizeof err) == 0);

	/* Version 1: older readers read it, the mark apart. */
	size_t n = read_content(tmp("flags.ember"), raw, sizeof raw);
	CHECK(n > 9 && raw[8] == 1);
	ember_profile_init(&b);
	CHECK(ember_profile_load_ember(&b, tmp("flags.ember"), err, sizeof err) == EMBER_LOAD_OK);
	CHECK(frame_named(&b, "dgemm_kernel", EMBER_FRAME_CALLER_SCANNED) != UINT32_MAX);
	CHECK(frame_named(&b, "dgemm_nn", 0) != UINT32_MAX);
	same_profile(&a, &b);
	ember_profile_free(&b);

	CHECK(load_without(raw, n, 'X', "noflags.ember", &b));
	CHECK(frame_named(&b, "dgemm_kernel", 0) != UINT32_MAX && ember_profile_total(&b) == 7);
	ember_profile_free(&b);

	/* The same function once with, once without the mark: two frames, which
	 * a version 1 reader would take for one -- so the file says version 2. */
	struct ember_frame plain = kernel;
	plain.flags = 0;
	uint32_t alone = ember_profile_frame(&a, &plain);
	CHECK(alone != ids[1]);
	ember_profile_add(&a, ember_profile_stack(&a, &alone, 1), th, 2);
	CHECK(ember_profile_save(&a, tmp("twins.ember"), err, sizeof err) == 0);
	n = read_content(tmp("twins.ember"), raw, sizeof raw);
	CHECK(n > 9 && raw[8] == 2);
	ember_profile_init(&b);
	CHECK(ember_profile_load_ember(&b, tmp("twins.ember"), err, sizeof err) == EMBER_LOAD_OK);
	CHECK(frame_named(&b, "dgemm_kernel", 0) != UINT32_MAX &&
	      frame_named(&b, "dgemm_kernel", EMBER_FRAME_CALLER_SCANNED) != UINT32_MAX);
	same_profile(&a, &b);
	ember_profile_free(&b);
	ember_profile_free(&a);
}

/* The row of stack on thread th with flags, or NULL. */
static const struct ember_sample_row *row_of(const struct ember_profile *p, uint32_t stack, uint32_t th,
					     uint32_t flags)
{
	for (uint32_t i = 0; i < p->nrows; i++)
		if (p->rows[i].stack == stack && p->rows[i].thread == th && p->rows[i].flags == flags)
			return &p->rows[i];
	return NULL;
}

/* Off-CPU rows (record --idle): the same stack and thread on and off CPU
 * are two rows; the file keeps them apart (version 3, only then), and a
 * file without the row-flags section is still read. */
static void test_off_cpu_rows(void)
{
	struct ember_profile a, b;
	char err[512];
	static uint8_t raw[1 << 16];
	ember_profile_init(&a);
	struct ember_frame f = { .kind = EMBER_FRAME_PYTHON, .name = "napping", .file = "idle.py", .line = 3 };
	uint32_t id = ember_profile_frame(&a, &f);
	uint32_t st = ember_profile_stack(&a, &id, 1), th = ember_profile_thread(&a, 1, 1, "main");
	CHECK(ember_profile_add_row(&a, st, th, EMBER_ROW_OFF_CPU, 900) == 0);
	CHECK(ember_profile_add_row(&a, st, th, 0, 100) == 0);
	CHECK(ember_profile_add_row(&a, st, th, EMBER_ROW_OFF_CPU, 100) == 0);
	CHECK(ember_profile_add_row(&a, st, th, 1u << 7, 1) == -1);   /* unknown flag */
	CHECK(a.nrows == 2 && ember_profile_total(&a) == 1100 && a.off_cpu_total == 1000);
	a.meta.wall_clock = true;
	a.meta.interval_ns = 1000;
	CHECK(ember_profile_save(&a, tmp("idle.ember"), err, sizeof err) == 0);
	size_t n = read_content(tmp("idle.ember"), raw, sizeof raw);
	CHECK(n > 9 && raw[8] == 3);
	ember_profile_init(&b);
	CHECK(ember_profile_load_ember(&b, tmp("idle.ember"), err, sizeof err) == EMBER_LOAD_OK);
	CHECK(b.nrows == 2 && b.off_cpu_total == 1000 && ember_profile_total(&b) == 1100);
	CHECK(b.meta.wall_clock && b.meta.interval_ns == 1000);
	const struct ember_sample_row *off = row_of(&b, 0, 0, EMBER_ROW_OFF_CPU), *on = row_of(&b, 0, 0, 0);
	CHECK(off && off->count == 1000 && on && on->count == 100);
	ember_profile_free(&b);

	/* Without the row-flags section the two rows are one row written
	 * twice: a corrupt file, refused. */
	bool found;
	size_t m = strip_section(raw, n, 'W', &found);
	CHECK(found);
	gzFile w = gzopen(tmp("noroflags.ember"), "wb");
	gzwrite(w, raw, (unsigned)m);
	gzclose(w);
	ember_profile_init(&b);
	CHECK(ember_profile_load_ember(&b, tmp("noroflags.ember"), err, sizeof err) == EMBER_LOAD_BADDATA);
	ember_profile_free(&b);

	/* The report splits the time; the SVG colours the off-CPU frame and
	 * says so in its legend and tooltip. */
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	ember_report_print(out, &a, EMBER_REPORT_BY_FUNCTION, 5);
	fclose(out);
	CHECK(text && strstr(text, "wall-clock profile: 0.000 s on CPU (9.1%), 0.001 s off CPU (90.9%)"));
	CHECK(text && strstr(text, "ms  function"));
	free(text);
	out = open_memstream(&text, &len);
	CHECK(ember_write_svg(out, &a, NULL) == 0);
	fclose(out);
	CHECK(text && strstr(text, "id=\"offcpulegend\""));
	CHECK(text && strstr(text, "1,100 us, 100.00%, 91% off CPU"));
	free(text);
	ember_profile_free(&a);

	/* A profile without off-CPU rows is written as before. */
	ember_profile_init(&a);
	id = ember_profile_frame(&a, &f);
	ember_profile_add(&a, ember_profile_stack(&a, &id, 1), ember_profile_thread(&a, 1, 1, "main"), 5);
	CHECK(ember_profile_save(&a, tmp("oncpu.ember"), err, sizeof err) == 0);
	n = read_content(tmp("oncpu.ember"), raw, sizeof raw);
	CHECK(n > 9 && raw[8] == 1);
	ember_profile_free(&a);
}

/* Attributed rows (a pool thread's samples under its dispatcher's stack):
 * the file keeps how many frames are the dispatcher's, in a section older
 * readers skip (the version stays 1: they read the same stacks); the SVG
 * names the worker thread in the tooltips of the frames it ran; a depth
 * past the stack is refused. */
static void test_attributed_rows(void)
{
	struct ember_profile a, b;
	char err[512];
	static uint8_t raw[1 << 16];
	ember_profile_init(&a);
	struct ember_frame fr[3] = {
		{ .kind = EMBER_FRAME_PYTHON, .name = "matmul", .file = "app.py", .line = 9 },
		{ .kind = EMBER_FRAME_NATIVE, .name = "exec_blas", .module = "libopenblas.so.0" },
		{ .kind = EMBER_FRAME_NATIVE, .name = "dgemm_kernel", .module = "libopenblas.so.0" },
	};
	uint32_t ids[3];
	for (int i = 0; i < 3; i++)
		ids[i] = ember_profile_frame(&a, &fr[i]);
	uint32_t st = ember_profile_stack(&a, ids, 3);
	uint32_t main_th = ember_profile_thread(&a, 7, 7, "MainThread"), worker = ember_profile_thread(&a, 7, 8, "blas");
	CHECK(ember_profile_add_row(&a, st, main_th, 0, 30) == 0);
	CHECK(ember_profile_add_row_depth(&a, st, worker, 0, 2, 10) == 0);
	CHECK(ember_profile_add_row_depth(&a, st, worker, 0, 2, 5) == 0);   /* the same row */
	CHECK(ember_profile_add_row_depth(&a, st, worker, 0, 4, 1) == -1);  /* past the stack */
	CHECK(a.nrows == 2 && a.rows[1].depth == 2 && (a.rows[1].flags & EMBER_ROW_ATTRIBUTED) && a.rows[1].count == 15);
	CHECK(ember_profile_save(&a, tmp("attr.ember"), err, sizeof err) == 0);
	size_t n = read_content(tmp("attr.ember"), raw, sizeof raw);
	CHECK(n > 9 && raw[8] == 1);
	ember_profile_init(&b);
	CHECK(ember_profile_load_ember(&b, tmp("attr.ember"), err, sizeof err) == EMBER_LOAD_OK);
	CHECK(b.nrows == 2 && b.rows[1].depth == 2 && (b.rows[1].flags & EMBER_ROW_ATTRIBUTED) && b.rows[1].count == 15);
	CHECK(b.rows[0].depth == 0 && !(b.rows[0].flags & EMBER_ROW_ATTRIBUTED));
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	CHECK(ember_write_svg(out, &b, NULL) == 0);
	fclose(out);
	/* the kernel ran 15 of its 45 samples on the worker; the dispatcher's
	 * frames none */
	CHECK(text && strstr(text, "dgemm_kernel (45 samples, 100.00%)\n15 samples of it ran on worker thread blas (8)"));
	CHECK(text && !strstr(text, "exec_blas (45 samples, 100.00%)\n"));
	free(text);
	ember_profile_free(&b);

	/* An older reader skips the section: the same file without it reads
	 * as the same stacks, counts and threads. */
	CHECK(load_without(raw, n, 'A', "noattr.ember", &b));
	CHECK(b.nrows == 2 && ember_profile_total(&b) == 45 && b.rows[1].depth == 0);
	ember_profile_free(&b);
	ember_profile_free(&a);

	/* ember's marks read back from folded stacks as marks (no function of
	 * a report); code without a symbol does not. */
	static const char *const marks[] = { "[truncated]", "[native stack incomplete]", "[python frames uncertain]",
					     "[dispatcher unknown]", "[OpenMP wait]", "[TBB dispatch]",
					     "[native thread blas worker]" };
	for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
		CHECK_MSG(ember_mark_name(marks[i], strlen(marks[i])), marks[i]);
	CHECK(!ember_mark_name("[libz.so.1+0x4a26]", 18) && !ember_mark_name("[unknown]", 9) &&
	      !ember_mark_name("wait]", 5) && ember_mark_wait("[OpenBLAS wait]") && !ember_mark_wait("[TBB dispatch]"));
}

static int load_text(struct ember_profile *p, const char *text, int column, struct ember_load_warnings *w,
		     char *err)
{
	write_file(tmp("in.folded"), text, strlen(text));
	ember_profile_init(p);
	return ember_profile_load(p, tmp("in.folded"), column, w, err, 512);
}

static void test_folded_reader(void)
{
	struct ember_profile p;
	struct ember_load_warnings w;
	char err[512];

	CHECK(load_text(&p, "main;a;b 3\r\nmain;a 2\r\nmain;a;b 4\r\n", 1, &w, err) == 0);
	CHECK(ember_profile_total(&p) == 9 && w.crlf == 3 && p.nstacks == 2);
	ember_profile_free(&p);

	CHECK(load_text(&p, "main;a 2.5\nmain;b 0.4\nmain;c\t7\n", 1, &w, err) == 0);
	CHECK(ember_profile_total(&p) == 10 && w.fractional == 2);   /* 3 + 0 + 7 */
	ember_profile_free(&p);

	/* two columns: BASE NEW */
	CHECK(load_text(&p, "main;a 10 20\nmain;b 5 0\n", 1, &w, err) == 0);
	CHECK(ember_profile_total(&p) == 20 && w.two_column == 2);
	ember_profile_free(&p);
	CHECK(load_text(&p, "main;a 10 20\nmain;b 5 0\n", 0, &w, err) == 0);
	CHECK(ember_profile_total(&p) == 15);
	ember_profile_free(&p);

	/* kinds */
	CHECK(load_text(&p, "[truncated];<module> (app.py:3);run (app.py:10);read;ksys_read_[k] 4\n", 1, &w, err) == 0);
	CHECK(p.nframes == 5);
	CHECK(p.frames[0].kind == EMBER_FRAME_SPECIAL);
	CHECK(p.frames[1].kind == EMBER_FRAME_PYTHON && !strcmp(p.frames[1].name, "<module>") &&
	      !strcmp(p.frames[1].file, "app.py") && p.frames[1].line == 3);
	CHECK(p.frames[3].kind == EMBER_FRAME_NATIVE && !strcmp(p.frames[3].name, "read"));
	CHECK(p.frames[4].kind == EMBER_FRAME_KERNEL && !strcmp(p.frames[4].name, "ksys_read"));
	ember_profile_free(&p);

	/* C++ names with parentheses stay native */
	CHECK(load_text(&p, "main;cv::resize(cv::Mat const&, int) 1\n", 1, &w, err) == 0);
	CHECK(p.frames[1].kind == EMBER_FRAME_NATIVE);
	ember_profile_free(&p);

	/* invalid UTF-8 is kept and counted; comments and blank lines skipped */
	CHECK(load_text(&p, "# austin: 3.6\n\nmain;bad\xff 2\nno count here\n", 1, &w, err) == 0);
	CHECK(w.invalid_utf8 == 1 && w.skipped == 1 && w.first_skipped_line == 4 && ember_profile_total(&p) == 2);
	ember_profile_free(&p);

	/* errors: empty, nothing usable, only zeros; the message names file and line */
	CHECK(load_text(&p, "", 1, &w, err) == EMBER_LOAD_BADDATA && strstr(err, "empty"));
	ember_profile_free(&p);
	CHECK(load_text(&p, "hello\nworld\n", 1, &w, err) == EMBER_LOAD_BADDATA && strstr(err, "in.folded:1:"));
	ember_profile_free(&p);
	CHECK(load_text(&p, "a;b 0\n", 1, &w, err) == EMBER_LOAD_BADDATA);
	ember_profile_free(&p);
	/* a file cut mid-line still reads what is whole */
	CHECK(load_text(&p, "main;a 5\nmain;b 3\nmain;c", 1, &w, err) == 0 && ember_profile_total(&p) == 8);
	ember_profile_free(&p);

	/* our own folded output reads back to the same folded output */
	struct ember_profile a;
	ember_profile_init(&a);
	synth_mixed(&a);
	struct ember_export_opts o = { 0 };
	FILE *f = fopen(tmp("mixed.folded"), "w");
	ember_write_folded(f, &a, &o);
	fclose(f);
	ember_profile_init(&p);
	CHECK(ember_profile_load(&p, tmp("mixed.folded"), 1, &w, err, sizeof err) == 0);
	char *x, *y;
	size_t xl, yl;
	FILE *fx = open_memstream(&x, &xl), *fy = open_memstream(&y, &yl);
	ember_write_folded(fx, &a, &o);
	ember_write_folded(fy, &p, &o);
	fclose(fx), fclose(fy);
	CHECK_STR(x, y);
	free(x), free(y);
	ember_profile_free(&a);
	ember_profile_free(&p);
}

/* Frames without symbols: the mark survives an .ember file, and the folded
 * reader gives it (and the module) to the names ember and perf write for
 * them, "[MODULE+0xHEX]" and "[unknown]", and to nothing else. */
static void test_no_symbol_frames(void)
{
	struct ember_profile a, b;
	char err[512];
	ember_profile_init(&a);
	struct ember_frame leaf = { .kind = EMBER_FRAME_NATIVE, .name = "[libz.so.1.2.13+0x4a26]",
				    .module = "libz.so.1.2.13", .flags = EMBER_FRAME_NO_SYMBOL };
	uint32_t id = ember_profile_frame(&a, &leaf);
	ember_profile_add(&a, ember_profile_stack(&a, &id, 1), ember_profile_thread(&a, 1, 1, "main"), 3);
	CHECK(ember_profile_save(&a, tmp("nosym.ember"), err, sizeof err) == 0);
	ember_profile_init(&b);
	CHECK(ember_profile_load_ember(&b, tmp("nosym.ember"), err, sizeof err) == EMBER_LOAD_OK);
	CHECK(frame_named(&b, "[libz.so.1.2.13+0x4a26]", EMBER_FRAME_NO_SYMBOL) != UINT32_MAX);
	same_profile(&a, &b);
	ember_profile_free(&b);
	ember_profile_free(&a);

	CHECK(load_text(&b, "main;[libz.so.1.2.13+0x4a26] 5\nmain;[unknown] 2\nmain;[a+b+0x1f] 1\n"
			    "main;[truncated] 1\nmain;[libz+0x] 1\nmain;[x+0x12g] 1\nmain;[+0x12] 1\n"
			    "main;crc32_z 1\n", 1, NULL, err) == EMBER_LOAD_OK);
	uint32_t z = frame_named(&b, "[libz.so.1.2.13+0x4a26]", EMBER_FRAME_NO_SYMBOL);
	CHECK(z != UINT32_MAX && !strcmp(b.frames[z].module, "libz.so.1.2.13"));
	uint32_t u = frame_named(&b, "[unknown]", EMBER_FRAME_NO_SYMBOL);
	CHECK(u != UINT32_MAX && !strcmp(b.frames[u].module, ""));
	uint32_t ab = frame_named(&b, "[a+b+0x1f]", EMBER_FRAME_NO_SYMBOL);
	CHECK(ab != UINT32_MAX && !strcmp(b.frames[ab].module, "a+b"));
	CHECK(frame_named(&b, "[truncated]", 0) != UINT32_MAX && frame_named(&b, "[libz+0x]", 0) != UINT32_MAX &&
	      frame_named(&b, "[x+0x12g]", 0) != UINT32_MAX && frame_named(&b, "[+0x12]", 0) != UINT32_MAX &&
	      frame_named(&b, "crc32_z", 0) != UINT32_MAX);
	struct ember_unsym us;
	CHECK(ember_report_unsymbolized(&b, &us) == 0 && us.count == 8 && us.of == 13 && us.nmodules == 3);
	ember_unsym_free(&us);
	ember_profile_free(&b);
}

int main(void)
{
	if (!test_dir_make("files"))
		return 1;
	test_round_trip(build_mixed, "mixed.ember");
	test_round_trip(build_hostile, "hostile.ember");
	test_round_trip(build_empty, "empty.ember");
	test_corruption();
	test_frame_flags();
	test_off_cpu_rows();
	test_attributed_rows();
	test_folded_reader();
	test_no_symbol_frames();
	if (!test_dir_remove())
		return 1;
	return check_report();
}
