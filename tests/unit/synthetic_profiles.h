/* Synthetic profiles with known contents, shared by the exporter tests.
 * Header-only: each test program includes it once.
 *
 *   synth_mixed      Python + native + interpreter + kernel frames, 3 threads
 *                    in 2 processes, recursion, a timeline; 1000 samples.
 *   synth_hostile    frame names with XML/JSON/shell metacharacters, control
 *                    characters, ';', tabs, non-ASCII and invalid UTF-8.
 *   synth_empty      no samples at all.
 *   synth_recursive  main -> rec x N -> leaf, for pstats/total invariants.
 *
 * Every builder returns 0 or -1 (OOM). */
#ifndef EMBER_SYNTHETIC_PROFILES_H
#define EMBER_SYNTHETIC_PROFILES_H

#include <string.h>

#include "profile.h"

static inline uint32_t synth_frame(struct ember_profile *p, enum ember_frame_kind kind, const char *name,
			    const char *file, uint32_t line, uint32_t first_line, const char *module)
{
	struct ember_frame f = { .kind = kind, .name = name, .file = file ? file : "", .line = line,
				 .first_line = first_line, .module = module ? module : "" };
	return ember_profile_frame(p, &f);
}

static inline void synth_meta(struct ember_profile *p, const char *command)
{
	p->meta.command = ember_profile_cstr(p, command);
	p->meta.source = ember_profile_cstr(p, "synthetic");
	p->meta.pid = 4242;
	p->meta.freq_hz = 99;
	p->meta.start_unix_ns = 1763700000ull * 1000000000ull;
	p->meta.duration_ns = 5ull * 1000000000ull;
}

/* Python main thread: <module> -> main -> Model.forward -> [native] cv::GaussianBlur
 * (70%), Model.forward -> relu (10%), plus a kernel syscall stack (5%);
 * a worker thread "blas-worker" with native frames only (10%); a second process
 * (pid 4300) with one thread (5%).  Timeline: samples every 10 ms per thread. */
static inline int synth_mixed(struct ember_profile *p)
{
	synth_meta(p, "python3 pipeline.py --frames 100");
	uint32_t mod = synth_frame(p, EMBER_FRAME_PYTHON, "<module>", "pipeline.py", 40, 1, NULL);
	uint32_t mainf = synth_frame(p, EMBER_FRAME_PYTHON, "main", "pipeline.py", 33, 30, NULL);
	uint32_t fwd = synth_frame(p, EMBER_FRAME_PYTHON, "Model.forward", "model.py", 12, 10, NULL);
	uint32_t relu = synth_frame(p, EMBER_FRAME_PYTHON, "relu", "model.py", 5, 4, NULL);
	uint32_t eval = synth_frame(p, EMBER_FRAME_INTERP, "_PyEval_EvalFrameDefault", "ceval.c", 0, 0, "python3.11");
	uint32_t blur = synth_frame(p, EMBER_FRAME_NATIVE, "cv::GaussianBlur(cv::_InputArray const&, cv::_OutputArray const&)",
				    "smooth.dispatch.cpp", 617, 0, "libopencv_imgproc.so.406");
	uint32_t row = synth_frame(p, EMBER_FRAME_NATIVE, "cv::hlineSmooth", "smooth.simd.hpp", 1200, 0,
				   "libopencv_imgproc.so.406");
	uint32_t rd = synth_frame(p, EMBER_FRAME_NATIVE, "read", "", 0, 0, "libc.so.6");
	uint32_t ksys = synth_frame(p, EMBER_FRAME_KERNEL, "ksys_read", "", 0, 0, "[kernel.kallsyms]");
	uint32_t start = synth_frame(p, EMBER_FRAME_NATIVE, "start_thread", "", 0, 0, "libc.so.6");
	uint32_t gemm = synth_frame(p, EMBER_FRAME_NATIVE, "dgemm_kernel_SKYLAKEX", "", 0, 0, "libopenblasp-r0.3.21.so");
	uint32_t child = synth_frame(p, EMBER_FRAME_PYTHON, "worker_main", "multiprocessing/pool.py", 125, 114, NULL);
	if (mod == UINT32_MAX || child == UINT32_MAX)
		return -1;

	uint32_t s_blur[] = { mod, mainf, fwd, eval, blur, row };
	uint32_t s_relu[] = { mod, mainf, fwd, relu };
	uint32_t s_read[] = { mod, mainf, rd, ksys };
	uint32_t s_gemm[] = { start, gemm };
	uint32_t s_child[] = { child };
	struct { const uint32_t *ids; uint32_t n; uint32_t pid, tid; const char *tname; uint64_t count; } rows[] = {
		{ s_blur, 6, 4242, 4242, "python3", 700 },
		{ s_relu, 4, 4242, 4242, "python3", 100 },
		{ s_read, 4, 4242, 4242, "python3", 50 },
		{ s_gemm, 2, 4242, 4250, "blas-worker", 100 },
		{ s_child, 1, 4300, 4300, "python3", 50 },
	};
	uint64_t t = 1000000000ull;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		uint32_t st = ember_profile_stack(p, rows[i].ids, rows[i].n);
		uint32_t th = ember_profile_thread(p, rows[i].pid, rows[i].tid, rows[i].tname);
		if (st == UINT32_MAX || th == UINT32_MAX || ember_profile_add(p, st, th, rows[i].count) != 0)
			return -1;
		for (uint64_t k = 0; k < rows[i].count; k++)
			if (ember_profile_add_timed(p, t + k * 10000000ull + i, st, th) != 0)
				return -1;
	}
	ember_profile_sort_timeline(p);
	p->meta.samples = 1000;
	p->meta.lost = 3;
	p->meta.truncated = 7;
	p->meta.mismatched = 2;
	return 0;
}

static inline int synth_hostile(struct ember_profile *p)
{
	synth_meta(p, "./evil --name='<script>alert(1)</script>' & \"quoted\"");
	const char *names[] = {
		"<script>alert(\"x\")</script>", "a&b;c", "quote\"apos'", "tab\there", "new\nline",
		"ctrl\x01\x1f\x7f", "nonascii_函数_ünï_😀", "bad\xff\xfeutf8", "trailing 123", "", "  spaced  ",
		"]]>", "\\backslash\\", "{\"json\": [1,2]}",
	};
	uint32_t ids[16];
	uint32_t n = 0;
	ids[n++] = synth_frame(p, EMBER_FRAME_NATIVE, "main", "", 0, 0, "evil");
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		ids[n] = synth_frame(p, i % 2 ? EMBER_FRAME_PYTHON : EMBER_FRAME_NATIVE, names[i],
				     i % 2 ? "dir/<file>&\"x\".py" : "", (uint32_t)i + 1, 1, "mod<&>");
		if (ids[n] == UINT32_MAX)
			return -1;
		uint32_t st = ember_profile_stack(p, ids, n + 1);
		uint32_t th = ember_profile_thread(p, 1, 1 + (uint32_t)(i % 2), i % 2 ? "thr<&>\"'" : "名前");
		if (st == UINT32_MAX || th == UINT32_MAX || ember_profile_add(p, st, th, 10 + i) != 0)
			return -1;
		if (ember_profile_add_timed(p, 1000 + i, st, th) != 0)
			return -1;
		n = n < 12 ? n + 1 : 1;
	}
	p->meta.samples = ember_profile_total(p);
	return 0;
}

static inline int synth_empty(struct ember_profile *p)
{
	synth_meta(p, "true");
	return 0;
}

/* main -> rec x depth -> leaf, count samples, for each depth 1..maxdepth. */
static inline int synth_recursive(struct ember_profile *p, uint32_t maxdepth, uint64_t count)
{
	synth_meta(p, "python3 rec.py");
	uint32_t mainf = synth_frame(p, EMBER_FRAME_PYTHON, "main", "rec.py", 20, 18, NULL);
	uint32_t rec = synth_frame(p, EMBER_FRAME_PYTHON, "rec", "rec.py", 9, 7, NULL);
	uint32_t leaf = synth_frame(p, EMBER_FRAME_PYTHON, "leaf", "rec.py", 3, 2, NULL);
	uint32_t ids[66];
	if (maxdepth > 64)
		maxdepth = 64;
	uint32_t th = ember_profile_thread(p, 7, 7, "MainThread");
	for (uint32_t d = 1; d <= maxdepth; d++) {
		uint32_t n = 0;
		ids[n++] = mainf;
		for (uint32_t k = 0; k < d; k++)
			ids[n++] = rec;
		ids[n++] = leaf;
		uint32_t st = ember_profile_stack(p, ids, n);
		if (st == UINT32_MAX || th == UINT32_MAX || ember_profile_add(p, st, th, count) != 0)
			return -1;
		/* and some self time in rec itself */
		st = ember_profile_stack(p, ids, n - 1);
		if (st == UINT32_MAX || ember_profile_add(p, st, th, count / 2 + 1) != 0)
			return -1;
	}
	p->meta.samples = ember_profile_total(p);
	return 0;
}

#endif
