/* SVG flame graph rendering speed: a synthetic profile of deep mixed
 * Python + native stacks (default 200,000 unique stacks, 40-60 frames each,
 * a realistic call graph), then ember_write_svg alone is timed.
 *
 *   svg_bench [--stacks N] [--skew K] [--runs N] [--out FILE.svg] [--folded FILE]
 *
 * --skew is the exponent of the callee choice (3: a few hot paths, the
 * default; 1: uniform, many more frames wide enough to draw).
 * --folded also writes the profile as folded stacks, to compare with
 * flamegraph.pl on the same input.  Results: bench/RESULTS.md,
 * "SVG flame graph rendering". */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exporters.h"

#define NPY 2500         /* Python functions, 1-3 line variants each */
#define NNATIVE 9000     /* native functions */
#define NKERNEL 300
#define NCALLEES 6

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double skew = 3;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

/* 0..n-1, skewed towards 0 (a few hot callees, a long tail) */
static uint32_t skewed(uint32_t n)
{
	double u = (rnd() & 0xffffff) / 16777216.0;
	return (uint32_t)(n * pow(u, skew));
}

static uint32_t hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352d;
	x ^= x >> 15;
	x *= 0x846ca68b;
	return x ^ (x >> 16);
}

struct gen {
	struct ember_profile *p;
	uint32_t py[NPY][3], npy_lines[NPY];
	uint32_t native[NNATIVE], kernel[NKERNEL], interp[3];
};

static uint32_t frame(struct ember_profile *p, enum ember_frame_kind kind, const char *name, const char *file,
		      uint32_t line, const char *module)
{
	struct ember_frame f = { .kind = kind, .name = name, .file = file, .line = line, .module = module };
	uint32_t id = ember_profile_frame(p, &f);

	if (id == UINT32_MAX) {
		fprintf(stderr, "svg_bench: out of memory\n");
		exit(1);
	}
	return id;
}

static void make_frames(struct gen *g)
{
	static const char *const verbs[] = { "load", "run", "forward", "step", "apply", "encode", "decode",
					     "transform", "update", "compute", "fetch", "parse" };
	static const char *const libs[] = { "libopencv_imgproc.so.406", "libtorch_cpu.so", "libc.so.6",
					    "libopenblasp-r0.3.21.so", "libstdc++.so.6", "_multiarray_umath.so" };
	char name[160], file[64];

	for (uint32_t f = 0; f < NPY; f++) {
		snprintf(name, sizeof(name), f ? "%s_%s_%u" : "<module>", verbs[f % 12], verbs[(f / 12) % 12], f);
		snprintf(file, sizeof(file), "pkg%u/module%u.py", f % 40, f % 300);
		g->npy_lines[f] = 1 + hash32(f) % 3;
		for (uint32_t k = 0; k < g->npy_lines[f]; k++)
			g->py[f][k] = frame(g->p, EMBER_FRAME_PYTHON, name, file, 10 + f % 200 + 7 * k, "");
	}
	for (uint32_t f = 0; f < NNATIVE; f++) {
		if (f % 3 == 0)
			snprintf(name, sizeof(name), "cv::impl::%s%u<float, %u>(cv::Mat const&, cv::Mat&)",
				 verbs[f % 12], f, f % 4);
		else if (f % 3 == 1)
			snprintf(name, sizeof(name), "at::native::%s_kernel_%u", verbs[f % 12], f);
		else
			snprintf(name, sizeof(name), "%s_%u", verbs[f % 12], f);
		g->native[f] = frame(g->p, EMBER_FRAME_NATIVE, name, "", 0, libs[f % 6]);
	}
	for (uint32_t f = 0; f < NKERNEL; f++) {
		snprintf(name, sizeof(name), "__x64_sys_%s%u", verbs[f % 12], f);
		g->kernel[f] = frame(g->p, EMBER_FRAME_KERNEL, name, "", 0, "[kernel.kallsyms]");
	}
	g->interp[0] = frame(g->p, EMBER_FRAME_INTERP, "_PyEval_EvalFrameDefault", "ceval.c", 0, "python3.11");
	g->interp[1] = frame(g->p, EMBER_FRAME_INTERP, "cfunction_call", "methodobject.c", 0, "python3.11");
	g->interp[2] = frame(g->p, EMBER_FRAME_INTERP, "_PyObject_MakeTpCall", "call.c", 0, "python3.11");
}

/* One stack: a walk down a fixed call graph, Python first, then native
 * code entered through the interpreter, sometimes a system call. */
static uint32_t make_stack(struct gen *g, uint32_t *ids)
{
	uint32_t depth = 40 + rnd() % 21, n = 0;
	uint32_t py_depth = depth * (40 + rnd() % 21) / 100;
	uint32_t f = 0;

	while (n < py_depth) {
		ids[n++] = g->py[f][skewed(g->npy_lines[f])];
		f = hash32(f * NCALLEES + skewed(NCALLEES) + 1) % NPY;
	}
	for (uint32_t k = 0; k < 3; k++)
		ids[n++] = g->interp[k];
	uint32_t nf = hash32(f) % NNATIVE;
	uint32_t kernel = rnd() % 5 == 0 ? 1 + rnd() % 4 : 0;
	while (n < depth - kernel) {
		ids[n++] = g->native[nf];
		nf = hash32(nf * NCALLEES + skewed(NCALLEES) + 7) % NNATIVE;
	}
	uint32_t kf = hash32(nf) % NKERNEL;
	while (n < depth) {
		ids[n++] = g->kernel[kf];
		kf = hash32(kf + 1) % NKERNEL;
	}
	return n;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* VmRSS or VmHWM of this process, kB */
static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			kb = strtol(line + strlen(key) + 1, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/* Reset the peak RSS to the current RSS (Linux >= 4.0). */
static void reset_peak(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

int main(int argc, char **argv)
{
	uint32_t nstacks = 200000, runs = 3;
	const char *out_path = "/dev/null", *folded_path = NULL;
	struct ember_profile p;
	static struct gen g;
	uint32_t ids[80], threads[8];

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--stacks"))
			nstacks = (uint32_t)strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--skew"))
			skew = strtod(argv[i + 1], NULL);
		else if (!strcmp(argv[i], "--runs"))
			runs = (uint32_t)strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--out"))
			out_path = argv[i + 1];
		else if (!strcmp(argv[i], "--folded"))
			folded_path = argv[i + 1];
	}
	if (ember_profile_init(&p) != 0)
		return 1;
	g.p = &p;
	make_frames(&g);
	for (uint32_t t = 0; t < 8; t++)
		threads[t] = ember_profile_thread(&p, 100, 100 + t, t ? "worker" : "python3");
	uint64_t frames_total = 0;
	while (p.nstacks < nstacks) {
		uint32_t n = make_stack(&g, ids), st = ember_profile_stack(&p, ids, n);
		uint64_t count = 1 + (rnd() % 8 == 0 ? rnd() % 50 : 0);
		if (st == UINT32_MAX || ember_profile_add(&p, st, threads[rnd() % 8], count) != 0)
			return 1;
		frames_total += n;
	}
	p.meta.command = ember_profile_cstr(&p, "python3 synthetic.py");
	p.meta.freq_hz = 99;
	p.meta.samples = ember_profile_total(&p);

	uint32_t used = 0;
	for (uint32_t s = 0; s < p.nstacks; s++)
		used += p.stack_len[s];
	printf("profile: %u unique stacks, %u rows, %u frames, %" PRIu64 " samples, %.1f frames/stack\n",
	       p.nstacks, p.nrows, p.nframes, ember_profile_total(&p), (double)used / p.nstacks);
	(void)frames_total;

	if (folded_path) {
		FILE *f = fopen(folded_path, "w");
		struct ember_export_opts o = { 0 };
		if (!f || ember_write_folded(f, &p, &o) != 0 || fclose(f) != 0) {
			perror(folded_path);
			return 1;
		}
	}

	static const struct { const char *what; struct ember_export_opts o; } modes[] = {
		{ "flame", { 0 } },
		{ "flame --threads", { .threads = true } },
		{ "icicle", { .icicle = true } },
	};
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		double best = 1e9;
		long size = 0, rss0 = 0, peak = 0;
		for (uint32_t r = 0; r < runs; r++) {
			reset_peak();
			rss0 = status_kb("VmRSS");
			FILE *f = fopen(out_path, "w");
			if (!f) {
				perror(out_path);
				return 1;
			}
			double t0 = now();
			if (ember_write_svg(f, &p, &modes[m].o) != 0) {
				perror("ember_write_svg");
				return 1;
			}
			fflush(f);
			double t = now() - t0;
			size = ftell(f);
			fclose(f);
			if (t < best)
				best = t;
			if (status_kb("VmHWM") - rss0 > peak)
				peak = status_kb("VmHWM") - rss0;
		}
		printf("%-16s best of %u: %.3f s, output %.1f MB, writer peak memory %.1f MB (profile: %.1f MB)\n",
		       modes[m].what, runs, best, size / 1e6, peak / 1024.0, rss0 / 1024.0);
	}
	ember_profile_free(&p);
	return 0;
}
