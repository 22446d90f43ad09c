/* Unit tests: the speedscope, pprof and Chrome trace exporters.
 *
 * Writes every format from every synthetic profile into a directory, checks
 * what C can check (return codes, determinism, write errors, JSON escaping,
 * a large profile), then runs the format validators of tests/exporters/
 * (Python, standard library) on each file.  The speedscope JSON Schema check
 * is a separate test (validate_speedscope.js, Node), which runs this program
 * with --write-only.
 *
 * usage: test_formats --validators DIR --out DIR [--python PATH]
 *        test_formats --write-only DIR */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "exporters.h"
#include "json_out.h"
#include "synthetic_profiles.h"

typedef int (*writer_fn)(FILE *, const struct ember_profile *, const struct ember_export_opts *);

static const struct {
	const char *suffix, *checker;
	writer_fn write;
} formats[] = {
	{ "speedscope.json", "check_speedscope.py", ember_write_speedscope },
	{ "pb.gz", "check_pprof.py", ember_write_pprof },
	{ "trace.json", "check_chrome.py", ember_write_chrome_trace },
};
#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

static int build_mixed(struct ember_profile *p) { return synth_mixed(p); }
static int build_hostile(struct ember_profile *p) { return synth_hostile(p); }
static int build_empty(struct ember_profile *p) { return synth_empty(p); }
static int build_recursive(struct ember_profile *p) { return synth_recursive(p, 5, 10); }

/* synth_mixed without its timeline: the writers lay the counts out. */
static int build_mixed_notimeline(struct ember_profile *p)
{
	int rc = synth_mixed(p);

	p->ntimeline = 0;
	return rc;
}

/* Native frames with an inline chain (foo <- bar <- baz inlined), the same
 * function without it, and an empty stack. */
static int build_inline(struct ember_profile *p)
{
	struct ember_frame f[] = {
		{ .kind = EMBER_FRAME_NATIVE, .name = "main", .file = "app.c", .line = 5, .module = "app" },
		{ .kind = EMBER_FRAME_NATIVE, .name = "foo", .file = "foo.c", .line = 10, .module = "app" },
		{ .kind = EMBER_FRAME_NATIVE, .name = "bar", .file = "foo.c", .line = 20, .module = "app", .inlined = true },
		{ .kind = EMBER_FRAME_NATIVE, .name = "baz", .file = "foo.c", .line = 30, .module = "app", .inlined = true },
	};
	uint32_t ids[4];

	synth_meta(p, "./app");
	for (int i = 0; i < 4; i++)
		if ((ids[i] = ember_profile_frame(p, &f[i])) == UINT32_MAX)
			return -1;
	uint32_t th = ember_profile_thread(p, 1, 1, "app");
	uint32_t full = ember_profile_stack(p, ids, 4), part = ember_profile_stack(p, ids, 2);
	uint32_t none = ember_profile_stack(p, ids, 0);
	if (th == UINT32_MAX || full == UINT32_MAX || part == UINT32_MAX || none == UINT32_MAX ||
	    ember_profile_add(p, full, th, 5) || ember_profile_add(p, part, th, 3) || ember_profile_add(p, none, th, 2))
		return -1;
	p->meta.samples = 10;
	return 0;
}

static const struct {
	const char *name;
	int (*build)(struct ember_profile *);
} profiles[] = {
	{ "mixed", build_mixed },
	{ "mixed_notimeline", build_mixed_notimeline },
	{ "hostile", build_hostile },
	{ "empty", build_empty },
	{ "recursive", build_recursive },
	{ "inline", build_inline },
};
#define NPROFILES (sizeof(profiles) / sizeof(profiles[0]))

/* The bytes a writer produces; caller frees. */
static char *render(writer_fn w, const struct ember_profile *p, size_t *len)
{
	char *buf = NULL;
	FILE *out = open_memstream(&buf, len);

	if (!out)
		return NULL;
	int rc = w(out, p, NULL);
	CHECK(rc == 0);
	fclose(out);
	return buf;
}

static int write_all(const char *dir)
{
	char path[4096];
	int bad = 0;

	for (size_t i = 0; i < NPROFILES; i++) {
		struct ember_profile p;
		if (ember_profile_init(&p) != 0 || profiles[i].build(&p) != 0) {
			fprintf(stderr, "building %s failed\n", profiles[i].name);
			return -1;
		}
		for (size_t f = 0; f < NFORMATS; f++) {
			snprintf(path, sizeof(path), "%s/%s.%s", dir, profiles[i].name, formats[f].suffix);
			FILE *out = fopen(path, "wb");
			int rc = out ? formats[f].write(out, &p, NULL) : -1;
			if (out && fclose(out) != 0)
				rc = -1;
			if (rc != 0) {
				fprintf(stderr, "writing %s: %s\n", path, strerror(errno));
				bad++;
			}
		}
		ember_profile_free(&p);
	}
	return bad ? -1 : 0;
}

/* Same profile, same bytes; JSON ends with a newline; /dev/full fails. */
static void test_writers(void)
{
	for (size_t i = 0; i < NPROFILES; i++) {
		struct ember_profile p;
		CHECK(ember_profile_init(&p) == 0 && profiles[i].build(&p) == 0);
		for (size_t f = 0; f < NFORMATS; f++) {
			size_t la = 0, lb = 0;
			char *a = render(formats[f].write, &p, &la), *b = render(formats[f].write, &p, &lb);
			CHECK(a && b && la == lb && la > 0 && memcmp(a, b, la) == 0);
			if (a && f != 1)
				CHECK(la >= 3 && memcmp(a + la - 2, "}\n", 2) == 0);
			if (a && f == 1)
				CHECK(la > 18 && (unsigned char)a[0] == 0x1f && (unsigned char)a[1] == 0x8b);
			free(a);
			free(b);

			FILE *full = fopen("/dev/full", "w");
			if (full) {
				errno = 0;
				int rc = formats[f].write(full, &p, NULL);
				CHECK(rc == -1 && errno == ENOSPC);
				fclose(full);
			}
		}
		ember_profile_free(&p);
	}
}

static char *json_of(const char *s, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	ember_json_strn(out, s, n);
	fclose(out);
	return buf;
}

static void test_json_text(void)
{
	char *t;
	static const char in[] = "a\"b\\c/\n\t\r\b\f\x01\x1f\x7f" "\xc2\x85" "\xe2\x80\xa8" "\xe2\x80\xa9"
				 "\xff" "\xed\xa0\x80" "\xc3" "\xe6\x97\xa5\xf0\x9f\x98\x80" "\xef\xbf\xbd";
	static const char want[] = "\"a\\\"b\\\\c/\\n\\t\\r\\b\\f\\u0001\\u001f\\u007f\\u0085\\u2028\\u2029"
				   "\xef\xbf\xbd" "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "\xef\xbf\xbd"
				   "\xe6\x97\xa5\xf0\x9f\x98\x80" "\xef\xbf\xbd\"";

	CHECK_STR((t = json_of(in, sizeof(in) - 1)), want);
	free(t);
	CHECK_STR((t = json_of("plain ascii", 11)), "\"plain ascii\"");
	free(t);
	CHECK_STR((t = json_of("", 0)), "\"\"");
	free(t);
	CHECK_STR((t = json_of("cut\xe6\x97", 5)), "\"cut\xef\xbf\xbd\"");  /* truncated at the end */
	free(t);

	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	ember_json_us(out, 1234567);
	putc(' ', out);
	ember_json_us(out, 5);
	putc(' ', out);
	ember_json_u64(out, UINT64_MAX);
	fclose(out);
	CHECK_STR(buf, "1234.567 0.005 18446744073709551615");
	free(buf);
}

static void test_layout(void)
{
	struct ember_profile p;

	CHECK(ember_profile_init(&p) == 0 && synth_mixed(&p) == 0);
	CHECK(ember_export_interval_ns(&p) == 10101010);
	CHECK(ember_export_timeline_complete(&p));
	p.ntimeline--;   /* one sample short: not complete */
	CHECK(!ember_export_timeline_complete(&p));
	p.ntimeline = 0;
	CHECK(!ember_export_timeline_complete(&p));
	p.meta.interval_ns = 1000;
	CHECK(ember_export_interval_ns(&p) == 1000);
	ember_profile_free(&p);

	CHECK(ember_profile_init(&p) == 0 && synth_hostile(&p) == 0);
	CHECK(!ember_export_timeline_complete(&p));   /* one timed sample per row */
	ember_profile_free(&p);
}

static ssize_t count_write(void *cookie, const char *buf, size_t n)
{
	(void)buf;
	*(size_t *)cookie += n;
	return (ssize_t)n;
}

/* Seconds writer w takes on p, output counted, not kept. */
static double timed_write(writer_fn w, const struct ember_profile *p, size_t *len)
{
	struct timespec a, b;
	FILE *out = fopencookie(len, "w", (cookie_io_functions_t){ .write = count_write });

	*len = 0;
	if (!out)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	CHECK(w(out, p, NULL) == 0);
	fclose(out);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

/* Many stacks, deep, a long timeline: every writer finishes in reasonable
 * time (linear-ish; generous bound for sanitizer builds). */
static void test_large(void)
{
	struct ember_profile p;
	enum { NFRAMES = 2000, NSTACKS = 20000, DEPTH = 48, NTIMED = 200000 };
	uint32_t ids[DEPTH], st[64];
	char name[32];

	CHECK(ember_profile_init(&p) == 0);
	synth_meta(&p, "large");
	uint32_t th[4];
	for (int t = 0; t < 4; t++)
		th[t] = ember_profile_thread(&p, 100, 100 + (uint32_t)t, "worker");
	uint32_t fr0 = 0;
	for (int i = 0; i < NFRAMES; i++) {
		snprintf(name, sizeof(name), "fn_%d", i);
		uint32_t id = synth_frame(&p, i % 3 ? EMBER_FRAME_NATIVE : EMBER_FRAME_PYTHON, name, "f.c",
					  (uint32_t)i, 1, i % 3 ? "lib.so" : NULL);
		if (i == 0)
			fr0 = id;
	}
	uint64_t x = 12345;
	for (int s = 0; s < NSTACKS; s++) {
		for (int d = 0; d < DEPTH; d++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			/* shared prefixes: the first frames vary slowly */
			ids[d] = fr0 + (uint32_t)(d < 8 ? (uint64_t)(s >> (8 - d)) % NFRAMES : (x >> 33) % NFRAMES);
		}
		uint32_t sid = ember_profile_stack(&p, ids, DEPTH);
		CHECK(sid != UINT32_MAX && ember_profile_add(&p, sid, th[s % 4], 1 + (uint64_t)(s % 7)) == 0);
		if (s < 64)
			st[s] = sid;
	}
	/* no timeline: the synthetic layout; the timeline path comes next */
	for (size_t f = 0; f < NFORMATS; f++) {
		size_t len;
		double s = timed_write(formats[f].write, &p, &len);
		printf("large (%d stacks x %d frames), %s: %zu bytes in %.2f s\n", NSTACKS, DEPTH, formats[f].suffix, len, s);
		CHECK(s >= 0 && s < 30);
	}
	ember_profile_free(&p);

	/* timeline: NTIMED samples over 64 stacks and 4 threads */
	CHECK(ember_profile_init(&p) == 0);
	synth_meta(&p, "large timeline");
	for (int i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "t_%d", i);
		ids[0] = synth_frame(&p, EMBER_FRAME_NATIVE, "root", "", 0, 0, "a.out");
		ids[1] = synth_frame(&p, EMBER_FRAME_NATIVE, name, "", 0, 0, "a.out");
		ids[2] = synth_frame(&p, EMBER_FRAME_NATIVE, name + 2, "", 0, 0, "a.out");
		st[i] = ember_profile_stack(&p, ids, 3);
	}
	for (int t = 0; t < 4; t++)
		th[t] = ember_profile_thread(&p, 100, 100 + (uint32_t)t, "worker");
	for (int k = 0; k < NTIMED; k++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t s = st[(x >> 40) % 64], t = th[k % 4];
		CHECK(ember_profile_add(&p, s, t, 1) == 0 && ember_profile_add_timed(&p, (uint64_t)k * 2500000, s, t) == 0);
	}
	CHECK(ember_export_timeline_complete(&p));
	for (size_t f = 0; f < NFORMATS; f++) {
		size_t len;
		double s = timed_write(formats[f].write, &p, &len);
		printf("large timeline (%d samples), %s: %zu bytes in %.2f s\n", NTIMED, formats[f].suffix, len, s);
		CHECK(s >= 0 && s < 30);
	}
	ember_profile_free(&p);
}

/* Run argv; its exit status, or -1. */
static int run(char *const argv[])
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void run_validators(const char *python, const char *vdir, const char *outdir)
{
	char script[4096], file[4096];

	for (size_t i = 0; i < NPROFILES; i++)
		for (size_t f = 0; f < NFORMATS; f++) {
			snprintf(script, sizeof(script), "%s/%s", vdir, formats[f].checker);
			snprintf(file, sizeof(file), "%s/%s.%s", outdir, profiles[i].name, formats[f].suffix);
			char *argv[] = { (char *)python, script, file, "--profile", (char *)profiles[i].name,
					 f == 1 ? "--go" : NULL, NULL };
			int rc = run(argv);
			if (rc != 0)
				fprintf(stderr, "validator failed (%d): %s %s\n", rc, formats[f].checker, file);
			CHECK(rc == 0);
		}
}

/* The bytes of a gzip stream, inflated; NULL on error.  Caller frees. */
static unsigned char *gunzip(const char *gz, size_t gzlen, size_t *len)
{
	z_stream z = { .next_in = (unsigned char *)gz, .avail_in = (uInt)gzlen };
	size_t cap = 1 << 16;
	unsigned char *out = malloc(cap);
	int rc = Z_OK;

	*len = 0;
	if (!out || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		free(out);
		return NULL;
	}
	while (rc == Z_OK) {
		if (*len == cap) {
			unsigned char *bigger = realloc(out, cap *= 2);
			if (!bigger)
				break;
			out = bigger;
		}
		z.next_out = out + *len;
		z.avail_out = (uInt)(cap - *len);
		rc = inflate(&z, Z_NO_FLUSH);
		*len = cap - z.avail_out;
	}
	inflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	return out;
}

static size_t put_varint(unsigned char *b, uint64_t v)
{
	size_t n = 0;
	for (; v >= 0x80; v >>= 7)
		b[n++] = (unsigned char)(v | 0x80);
	b[n++] = (unsigned char)v;
	return n;
}

/* Counts near the limit (profile.h: a profile's rows add up to at most
 * 2^63 - 1): 5e18 + 1e18 samples at 99 Hz are 6e25 ns, beyond 64 bits.
 * Weights and times stop at their largest value instead of wrapping to
 * small numbers; counts stay exact. */
static void test_huge_counts(void)
{
	struct ember_profile p;
	const uint64_t big = 5000000000000000000ull, less = 1000000000000000000ull;
	size_t len;

	CHECK(ember_profile_init(&p) == 0);
	synth_meta(&p, "huge");
	uint32_t a = synth_frame(&p, EMBER_FRAME_NATIVE, "a", "a.c", 1, 1, "app");
	uint32_t b = synth_frame(&p, EMBER_FRAME_NATIVE, "b", "b.c", 1, 1, "app");
	uint32_t th = ember_profile_thread(&p, 1, 1, "main");
	uint32_t ab[] = { a, b };
	CHECK(ember_profile_add(&p, ember_profile_stack(&p, ab, 1), th, big) == 0);
	CHECK(ember_profile_add(&p, ember_profile_stack(&p, ab, 2), th, less) == 0);
	CHECK(ember_profile_total(&p) == big + less && !ember_profile_saturated(&p));

	char *ss = render(ember_write_speedscope, &p, &len);
	CHECK(ss && strstr(ss, "\"endValue\":18446744073709551615"));
	CHECK(ss && strstr(ss, "\"weights\":[18446744073709551615,18446744073709551615]"));
	free(ss);

	/* the synthetic timeline: a from 0, b once a's own samples are over;
	 * every timestamp after the one before, the last at the largest */
	char *ct = render(ember_write_chrome_trace, &p, &len);
	double prev = -1;
	int events = 0;
	bool ordered = true;
	for (const char *t = ct; t && (t = strstr(t, "\"ts\":")); t += 5, events++) {
		double ts = strtod(t + 5, NULL);
		ordered = ordered && ts >= prev;
		prev = ts;
	}
	CHECK(ct && events == 4 && ordered);
	CHECK(ct && strstr(ct, "\"ts\":18446744073709551.615"));
	free(ct);

	/* pprof: [count, cpu] of each sample, int64s; cpu stops at 2^63 - 1 */
	char *gz = render(ember_write_pprof, &p, &len);
	size_t n = 0;
	unsigned char *pb = gz ? gunzip(gz, len, &n) : NULL;
	for (int i = 0; i < 2; i++) {
		unsigned char want[32];
		size_t k = 2;
		k += put_varint(want + k, i ? less : big);
		k += put_varint(want + k, EMBER_COUNT_MAX);
		want[0] = 0x12;   /* field 2 (value), length-delimited: packed */
		want[1] = (unsigned char)(k - 2);
		CHECK(pb && memmem(pb, n, want, k) != NULL);
	}
	free(pb);
	free(gz);
	ember_profile_free(&p);
}

int main(int argc, char **argv)
{
	const char *vdir = NULL, *outdir = NULL, *python = "python3";

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--write-only") == 0) {
			mkdir(argv[i + 1], 0755);
			return write_all(argv[i + 1]) == 0 ? 0 : 1;
		} else if (strcmp(argv[i], "--validators") == 0) {
			vdir = argv[i + 1];
		} else if (strcmp(argv[i], "--out") == 0) {
			outdir = argv[i + 1];
		} else if (strcmp(argv[i], "--python") == 0) {
			python = argv[i + 1];
		}
	}

	test_json_text();
	test_layout();
	test_writers();
	test_large();
	test_huge_counts();
	if (vdir && outdir) {
		mkdir(outdir, 0755);
		CHECK(write_all(outdir) == 0);
		run_validators(python, vdir, outdir);
	} else {
		fprintf(stderr, "no --validators/--out: format validators not run\n");
		check_failed++;
	}
	return check_report();
}
