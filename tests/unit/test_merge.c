/* Unit tests: the merge of Python frames into native stacks
 * (python-stacks/merge/merge.c) and the classes of native frames it works from.
 * Each case builds a native stack of groups (frame ids 100 + k) and a read
 * of Python frames, and checks the merged stack item by item. */
#include <stdint.h>

#include "check.h"
#include "session.h"

#define N EMBER_MERGED_NATIVE
#define P EMBER_MERGED_PYTHON
#define U EMBER_MERGED_UNCERTAIN
#define C EMBER_MERGED_CUT

enum { ROOT, MAIN, EVAL, CALL, EVAL2, KERNEL, GIL, WRAP, NGROUPS };

/* The interpreter's call machinery (a name on machinery.c's list). */
#define MACH (EMBER_NATIVE_INTERP | EMBER_NATIVE_MACHINERY)

static const uint32_t group_ids[NGROUPS] = { 100, 101, 102, 103, 104, 105, 106, 107 };

static struct ember_native_group grp(int k, uint8_t cls)
{
	return (struct ember_native_group){ .ids = &group_ids[k], .n = 1, .cls = cls };
}

/* A typical 3.x thread: _start -> main -> eval -> call -> eval -> a C kernel. */
static void typical(struct ember_native_group *g)
{
	g[0] = grp(ROOT, EMBER_NATIVE_ROOT);
	g[1] = grp(MAIN, MACH);
	g[2] = grp(EVAL, EMBER_NATIVE_EVAL | EMBER_NATIVE_INTERP);
	g[3] = grp(CALL, MACH);
	g[4] = grp(EVAL2, EMBER_NATIVE_EVAL | EMBER_NATIVE_INTERP);
	g[5] = grp(KERNEL, 0);
}

/* Frames innermost first; start marks each run's outermost frame. */
static void frames(struct ember_py_frame *py, const bool *start, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		py[i] = (struct ember_py_frame){ .code = 10 + i, .line = 1, .activation_start = start[i] };
}

static bool same(const struct ember_merged *got, uint32_t n, const uint32_t (*want)[2], uint32_t nwant)
{
	if (n != nwant)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (got[i].kind != want[i][0] || (got[i].kind != U && got[i].value != want[i][1]))
			return false;
	return true;
}

static uint32_t merge(const struct ember_merge_opts *o, struct ember_merge_in *in, struct ember_merged *out,
		      bool *uncertain)
{
	return ember_py_merge(o, in, out, 64, uncertain);
}

static void test_paired(void)
{
	struct ember_native_group g[6];
	struct ember_py_frame py[3];
	struct ember_merged out[64];
	bool unc;
	typical(g);
	/* Three frames: run 0 (outer activation) = py[2]; run 1 = py[1], py[0]. */
	frames(py, (const bool[]){ false, true, true }, 3);
	struct ember_merge_in in = { g, 6, py, 3, 0, EMBER_NATIVE_EVAL, false, false };
	struct ember_merge_opts o = { 0 };
	uint32_t n = merge(&o, &in, out, &unc);
	/* Interpreter frames and roots hidden; each eval replaced by its run,
	 * root first; the C kernel kept. */
	static const uint32_t want[][2] = { { P, 2 }, { P, 1 }, { P, 0 }, { N, 105 } };
	CHECK(same(out, n, want, 4));
	CHECK(!unc);

	o.native_unfiltered = true;
	n = merge(&o, &in, out, &unc);
	static const uint32_t want_all[][2] = { { N, 100 }, { N, 101 }, { P, 2 }, { N, 102 }, { N, 103 },
						{ P, 1 }, { P, 0 }, { N, 104 }, { N, 105 } };
	CHECK(same(out, n, want_all, 9));

	o = (struct ember_merge_opts){ .python_only = true };
	n = merge(&o, &in, out, &unc);
	static const uint32_t want_py[][2] = { { P, 2 }, { P, 1 }, { P, 0 } };
	CHECK(same(out, n, want_py, 3));

	/* The cap drops the leaf side, never writes past it. */
	o = (struct ember_merge_opts){ 0 };
	n = ember_py_merge(&o, &in, out, 2, &unc);
	CHECK(n == 2 && out[0].value == 2 && out[1].value == 1);
}

static void test_disagree(void)
{
	struct ember_native_group g[6];
	struct ember_py_frame py[3];
	struct ember_merged out[64];
	struct ember_merge_opts o = { 0 };
	bool unc;
	typical(g);
	/* One run for two activations (the thread returned before the read):
	 * paired from the root, trust ends at the second activation. */
	frames(py, (const bool[]){ true }, 1);
	struct ember_merge_in in = { g, 6, py, 1, 0, EMBER_NATIVE_EVAL, false, false };
	uint32_t n = merge(&o, &in, out, &unc);
	static const uint32_t want[][2] = { { P, 0 }, { U, 0 }, { N, 105 } };
	CHECK(same(out, n, want, 3));
	CHECK(unc);

	/* Torn read: all runs but the innermost. */
	frames(py, (const bool[]){ true, true }, 2);
	in.npy = 2;
	in.pyflags = EMBER_PY_TORN;
	n = merge(&o, &in, out, &unc);
	static const uint32_t want_torn[][2] = { { P, 1 }, { U, 0 }, { N, 105 } };
	CHECK(same(out, n, want_torn, 3));
	CHECK(unc);

	/* Unreadable: no run pairs, so nothing stands for the interpreter's
	 * frames: every native frame stays but the eval-loop activations, the
	 * first of which becomes the mark. */
	in.pyflags = EMBER_PY_UNREADABLE;
	n = merge(&o, &in, out, &unc);
	static const uint32_t want_unr[][2] = { { N, 100 }, { N, 101 }, { U, 0 }, { N, 103 }, { N, 105 } };
	CHECK(same(out, n, want_unr, 5));
	CHECK(unc);

	/* Torn with one run: the innermost is dropped, nothing is left to place. */
	in.npy = 1;
	in.pyflags = EMBER_PY_TORN;
	n = merge(&o, &in, out, &unc);
	CHECK(same(out, n, want_unr, 5));

	/* Truncated read (more frames than the reader walks): uncertain at the end. */
	in.npy = 2;
	in.pyflags = EMBER_PY_TRUNCATED;
	n = merge(&o, &in, out, &unc);
	static const uint32_t want_trunc[][2] = { { P, 1 }, { P, 0 }, { N, 105 }, { U, 0 } };
	CHECK(same(out, n, want_trunc, 4));
	CHECK(unc);
}

static void test_cut(void)
{
	/* A read cut inside one activation (3.11+ recursion): the typical
	 * stack's outer activation runs frames 3 (root side) and 2, the inner
	 * one 1 and 0; frames left out between 2 and 1 ran in the outer one. */
	struct ember_native_group g[6];
	typical(g);
	struct ember_py_frame py[4];
	struct ember_merged out[64];
	struct ember_merge_opts o = { 0 };
	bool unc;
	frames(py, (const bool[]){ true, false, false, true }, 4);
	py[1].cut = true;
	py[1].cut_spans = true;
	struct ember_merge_in in = { g, 6, py, 4, EMBER_PY_CUT, EMBER_NATIVE_EVAL, false, false };
	/* runs: [3 2 | cut | 1] outer, [0] inner: 2 native activations */
	uint32_t n = merge(&o, &in, out, &unc);
	static const uint32_t want_span[][2] = { { P, 3 }, { P, 2 }, { C, 0 }, { P, 1 }, { P, 0 }, { N, 105 } };
	CHECK(same(out, n, want_span, 6));
	CHECK(!unc);

	/* Cut apart: the left-out frames ran one activation of their own, whose
	 * eval frame (group 2 of three) gives way to the cut; the native frames
	 * around it stay. */
	struct ember_native_group g3[8];
	typical(g3);
	g3[5] = grp(CALL, MACH);
	g3[6] = grp(EVAL2, EMBER_NATIVE_EVAL | EMBER_NATIVE_INTERP);
	g3[7] = grp(KERNEL, 0);
	frames(py, (const bool[]){ true, true }, 2);   /* root side: frame 1; leaf side: frame 0 */
	py[0].cut = true;
	py[0].cut_runs = 1;
	in = (struct ember_merge_in){ g3, 8, py, 2, EMBER_PY_CUT, EMBER_NATIVE_EVAL, false, false };
	n = merge(&o, &in, out, &unc);
	static const uint32_t want_apart[][2] = { { P, 1 }, { C, 0 }, { P, 0 }, { N, 105 } };
	CHECK(same(out, n, want_apart, 4));
	CHECK(!unc);

	/* Unreadable: nothing pairs, the cut is still said, before the mark. */
	in.pyflags = EMBER_PY_CUT | EMBER_PY_UNREADABLE;
	n = merge(&o, &in, out, &unc);
	CHECK(n >= 2 && out[2].kind == C && out[3].kind == U);
	CHECK(unc);
}

static void test_native_truncated(void)
{
	/* The native stack lost its root: one activation left, three runs read.
	 * The outer runs come first; checked by the sample, the stack is whole. */
	struct ember_native_group g[2] = { grp(EVAL, EMBER_NATIVE_EVAL | EMBER_NATIVE_INTERP), grp(KERNEL, 0) };
	struct ember_py_frame py[3];
	struct ember_merged out[64];
	struct ember_merge_opts o = { 0 };
	bool unc;
	frames(py, (const bool[]){ true, true, true }, 3);
	struct ember_merge_in in = { g, 2, py, 3, EMBER_PY_CHECKED, EMBER_NATIVE_EVAL, true, false };
	uint32_t n = merge(&o, &in, out, &unc);
	static const uint32_t want[][2] = { { P, 2 }, { P, 1 }, { P, 0 }, { N, 105 } };
	CHECK(same(out, n, want, 4));
	CHECK(!unc);
	/* Unchecked: the same frames, marked uncertain. */
	in.pyflags = 0;
	n = merge(&o, &in, out, &unc);
	static const uint32_t want_unc[][2] = { { P, 2 }, { P, 1 }, { P, 0 }, { N, 105 }, { U, 0 } };
	CHECK(same(out, n, want_unc, 5));
	CHECK(unc);
}

static void test_other_threads(void)
{
	struct ember_native_group g[6];
	struct ember_merged out[64];
	struct ember_merge_opts o = { 0 };
	bool unc;
	typical(g);
	/* Not a Python process: every native frame, nothing uncertain. */
	struct ember_merge_in in = { g, 6, NULL, 0, 0, 0, false, false };
	uint32_t n = merge(&o, &in, out, &unc);
	CHECK(n == 6 && !unc);
	for (uint32_t i = 0; i < n && i < 6; i++)
		CHECK(out[i].kind == N && out[i].value == 100 + i);

	/* A worker thread of a Python process (no eval frame, no Python
	 * frames): its whole native stack. */
	struct ember_native_group w[3] = { grp(ROOT, EMBER_NATIVE_ROOT), grp(GIL, EMBER_NATIVE_INTERP | 0),
					   grp(KERNEL, 0) };
	struct ember_merge_in win = { w, 3, NULL, 0, 0, EMBER_NATIVE_EVAL, false, false };
	n = merge(&o, &win, out, &unc);
	CHECK(n == 3 && !unc);

	/* Python frames but no eval frame recognised (a stripped interpreter):
	 * kept after the native frames, marked uncertain. */
	struct ember_py_frame py[1];
	frames(py, (const bool[]){ true }, 1);
	struct ember_native_group s[2] = { grp(MAIN, MACH), grp(KERNEL, 0) };
	struct ember_merge_in sin = { s, 2, py, 1, 0, EMBER_NATIVE_EVAL, false, false };
	n = merge(&o, &sin, out, &unc);
	static const uint32_t want[][2] = { { N, 105 }, { P, 0 }, { U, 0 } };
	CHECK(same(out, n, want, 3));
	CHECK(unc);

	/* The same with an unwind that stopped short of the root (a BLAS
	 * kernel's caller not found): the Python frames, copied at the
	 * sample, are the callers, so they come first and the native frames
	 * known follow; certain when copied at the sample. */
	struct ember_native_group k[2] = { grp(MAIN, 0), grp(KERNEL, 0) };
	struct ember_merge_in kin = { k, 2, py, 1, EMBER_PY_AT_SAMPLE, EMBER_NATIVE_EVAL, false, true };
	n = merge(&o, &kin, out, &unc);
	static const uint32_t want_inc[][2] = { { P, 0 }, { N, 101 }, { N, 105 } };
	CHECK(same(out, n, want_inc, 3));
	CHECK(!unc);
	kin.pyflags = 0;   /* read after the sample: the thread may have moved on */
	n = merge(&o, &kin, out, &unc);
	CHECK(unc);

	/* Waiting for the GIL is shown even on a Python thread. */
	struct ember_native_group t[3] = { grp(EVAL, EMBER_NATIVE_EVAL | EMBER_NATIVE_INTERP),
					   grp(GIL, EMBER_NATIVE_TAKE_GIL | EMBER_NATIVE_INTERP), grp(KERNEL, 0) };
	struct ember_merge_in tin = { t, 3, py, 1, 0, EMBER_NATIVE_EVAL, false, false };
	n = merge(&o, &tin, out, &unc);
	static const uint32_t want_gil[][2] = { { P, 0 }, { N, 106 }, { N, 105 } };
	CHECK(same(out, n, want_gil, 3));
}

/* A program that looks like CPython but whose interpreter state is
 * garbage (or not set up yet): its eval loop is on the stack, every read
 * finds nothing, and all its code is "the interpreter's" by its module's
 * name.  The Python frames are lost, never the native ones. */
static void test_state_unreadable(void)
{
	struct ember_native_group g[4] = { grp(ROOT, EMBER_NATIVE_ROOT), grp(MAIN, MACH),
					   grp(EVAL, EMBER_NATIVE_EVAL | EMBER_NATIVE_INTERP),
					   grp(CALL, MACH) };
	struct ember_merged out[64];
	struct ember_merge_opts o = { 0 };
	bool unc;
	struct ember_merge_in in = { g, 4, NULL, 0, 0, EMBER_NATIVE_EVAL, false, false };
	uint32_t n = merge(&o, &in, out, &unc);
	static const uint32_t want[][2] = { { N, 100 }, { N, 101 }, { U, 0 }, { N, 103 } };
	CHECK(same(out, n, want, 4));
	CHECK(unc);
	/* --python-only asked for Python frames alone: the mark is all there is. */
	o.python_only = true;
	n = merge(&o, &in, out, &unc);
	CHECK(n == 1 && out[0].kind == U);
}

static void test_python2(void)
{
	/* 2.7: PyEval_EvalFrameEx is the eval loop; one frame a call. */
	struct ember_native_group g[4] = { grp(EVAL, EMBER_NATIVE_EVAL_EX | EMBER_NATIVE_INTERP),
					   grp(CALL, MACH),
					   grp(EVAL2, EMBER_NATIVE_EVAL_EX | EMBER_NATIVE_INTERP), grp(KERNEL, 0) };
	struct ember_py_frame py[2];
	struct ember_merged out[64];
	struct ember_merge_opts o = { 0 };
	bool unc;
	frames(py, (const bool[]){ true, true }, 2);
	struct ember_merge_in in = { g, 4, py, 2, 0, EMBER_NATIVE_EVAL_EX, false, false };
	uint32_t n = merge(&o, &in, out, &unc);
	static const uint32_t want[][2] = { { P, 1 }, { P, 0 }, { N, 105 } };
	CHECK(same(out, n, want, 3));
	CHECK(!unc);
	/* On 3.x, PyEval_EvalFrameEx is a wrapper: not an activation. */
	g[0].cls = EMBER_NATIVE_EVAL_EX | MACH;
	g[2].cls = EMBER_NATIVE_EVAL | MACH;
	in.eval_class = EMBER_NATIVE_EVAL;
	in.npy = 1;
	n = merge(&o, &in, out, &unc);
	static const uint32_t want3[][2] = { { P, 0 }, { N, 105 } };
	CHECK(same(out, n, want3, 2));
	CHECK(!unc);
}

static void test_classes(void)
{
	CHECK(ember_py_native_class("_PyEval_EvalFrameDefault", "libpython3.12.so.1.0", true) ==
	      (EMBER_NATIVE_EVAL | MACH));
	CHECK(ember_py_native_class("_PyEval_EvalFrameDefault.cold", "python3.11", true) == (EMBER_NATIVE_EVAL | MACH));
	CHECK(ember_py_native_class("PyEval_EvalFrameEx", "python2.7", true) == (EMBER_NATIVE_EVAL_EX | MACH));
	/* The machinery, by name: every call goes through it */
	CHECK(ember_py_native_class("_PyObject_MakeTpCall", "python3.11", true) == MACH);
	CHECK(ember_py_native_class("cfunction_vectorcall_FASTCALL_KEYWORDS.lto_priv.0", "python3.11", true) == MACH);
	CHECK(ember_py_native_class("main", "python3.11", true) == MACH);
	/* the C API's calls of Python objects from C (an import opening its file through io.open) */
	CHECK(ember_py_native_class("_PyObject_CallMethod", "python3.11", true) == MACH);
	CHECK(ember_py_native_class("_PyObject_CallFunction_SizeT", "python3.11", true) == MACH);
	CHECK(ember_py_native_class("callmethod.lto_priv.0", "python3.11", true) == MACH);
	CHECK(ember_py_native_class("PyObject_CallFinalizerFromDealloc", "python3.11", true) == MACH);   /* __del__ */
	CHECK(ember_py_native_class("PyObject_Calloc", "python3.11", true) == EMBER_NATIVE_INTERP);   /* the allocator */
	CHECK(ember_py_native_class("main", "app", true) == 0);   /* an embedder's main is its own */
	/* ... and the interpreter's work, shown: the collector, built-ins, the compiler */
	CHECK(ember_py_native_class("gc_collect_main.lto_priv.0", "python3.11", true) == EMBER_NATIVE_INTERP);
	CHECK(ember_py_native_class("list_sort_impl", "libpython3.12.so.1.0", true) == EMBER_NATIVE_INTERP);
	CHECK(ember_py_native_class("builtin_compile", "python3.11", true) == EMBER_NATIVE_INTERP);
	CHECK(ember_py_native_class("take_gil", "libpython3.9.so.1.0", true) == (EMBER_NATIVE_TAKE_GIL | EMBER_NATIVE_INTERP));
	CHECK(ember_py_native_class("start_thread", "libc.so.6", true) == EMBER_NATIVE_ROOT);
	CHECK(ember_py_native_class("_start", "python3.11", true) == (EMBER_NATIVE_ROOT | MACH));
	CHECK(ember_py_native_class("py::main:/x.py", "[jit]", true) == MACH);
	CHECK(ember_py_native_class("dgemm_kernel_HASWELL", "libopenblas.so.0", true) == 0);
	CHECK(ember_py_native_class("jit_kernel", "[jit]", true) == 0);
	CHECK(ember_py_native_class(NULL, NULL, true) == 0);
	/* An unnamed address of libc is the rest of the root only when a root
	 * calls it (the libc of Debian sid has no symbol table). */
	uint8_t anon = ember_py_native_class("[libc.so.6+0x29fb9]", "libc.so.6", false);
	CHECK(anon == (EMBER_NATIVE_LIBC_ANON | EMBER_NATIVE_ANON));
	CHECK(ember_py_native_class("[libz.so.1+0x4b20]", "libz.so.1", false) == EMBER_NATIVE_ANON);
	struct ember_native_group g[4] = { grp(ROOT, EMBER_NATIVE_ROOT), grp(MAIN, anon), grp(MAIN, 0), grp(MAIN, anon) };
	ember_py_root_groups(g, 4, true);
	CHECK(g[1].cls == (anon | EMBER_NATIVE_ROOT));
	CHECK(g[2].cls == 0);
	CHECK(g[3].cls == anon);
	/* A thread's clone3 and start_thread in a libc without symbols: the
	 * outermost frames of an unwind that reached its end; not so when the
	 * unwind stopped short (the outermost frame known is any libc code). */
	struct ember_native_group t[3] = { grp(ROOT, anon), grp(ROOT, anon), grp(MAIN, 0) };
	ember_py_root_groups(t, 3, true);
	CHECK(t[0].cls == (anon | EMBER_NATIVE_ROOT) && t[1].cls == (anon | EMBER_NATIVE_ROOT) && t[2].cls == 0);
	struct ember_native_group u[2] = { grp(ROOT, anon), grp(MAIN, 0) };
	ember_py_root_groups(u, 2, false);
	CHECK(u[0].cls == anon && u[1].cls == 0);
}

/* Only the machinery is hidden: the interpreter's work under a Python
 * frame is shown (the collector run by an allocation, a built-in sort); an
 * interpreter frame no symbol names (a stripped python3) goes with its
 * callee: hidden before an extension's code or the eval loop, shown
 * before the interpreter's shown work and at the leaf. */
static void test_interpreter_work(void)
{
	enum { EV, VC, GC, VISIT, ANON1, EXT, ANON2, NG };
	static const uint32_t ids[NG] = { 200, 201, 202, 203, 204, 205, 206 };
	struct ember_native_group g[6];
	struct ember_py_frame py[1];
	struct ember_merged out[64];
	struct ember_merge_opts o = { 0 };
	bool unc;
	frames(py, (const bool[]){ true }, 1);
#define G(k, c) ((struct ember_native_group){ .ids = &ids[k], .n = 1, .cls = (c) })
	/* eval -> vectorcall -> gc_collect_main -> [unnamed] -> visit (leaf) */
	g[0] = G(EV, EMBER_NATIVE_EVAL | MACH);
	g[1] = G(VC, MACH);
	g[2] = G(GC, EMBER_NATIVE_INTERP);
	g[3] = G(ANON1, EMBER_NATIVE_INTERP | EMBER_NATIVE_ANON);
	g[4] = G(VISIT, EMBER_NATIVE_INTERP);
	struct ember_merge_in in = { g, 5, py, 1, EMBER_PY_AT_SAMPLE, EMBER_NATIVE_EVAL, false, false };
	uint32_t n = merge(&o, &in, out, &unc);
	static const uint32_t want[][2] = { { P, 0 }, { N, 202 }, { N, 204 }, { N, 203 } };
	CHECK(same(out, n, want, 4) && !unc);
	/* eval -> [unnamed] -> an extension's code: the unnamed frame is a
	 * call's way there, hidden; eval -> [unnamed] (leaf): shown */
	g[1] = G(ANON2, EMBER_NATIVE_INTERP | EMBER_NATIVE_ANON);
	g[2] = G(EXT, 0);
	in.ngroups = 3;
	n = merge(&o, &in, out, &unc);
	static const uint32_t want_ext[][2] = { { P, 0 }, { N, 205 } };
	CHECK(same(out, n, want_ext, 2));
	in.ngroups = 2;
	n = merge(&o, &in, out, &unc);
	static const uint32_t want_leaf[][2] = { { P, 0 }, { N, 206 } };
	CHECK(same(out, n, want_leaf, 2));
	/* Before the first activation the interpreter's frames are its start,
	 * whatever their names (Py_InitializeFromConfig running the frozen
	 * getpath module): hidden */
	g[0] = G(GC, EMBER_NATIVE_INTERP);
	g[1] = G(EV, EMBER_NATIVE_EVAL | MACH);
	g[2] = G(VISIT, EMBER_NATIVE_INTERP);
	in.ngroups = 3;
	n = merge(&o, &in, out, &unc);
	static const uint32_t want_start[][2] = { { P, 0 }, { N, 203 } };
	CHECK(same(out, n, want_start, 2));
#undef G
}

int main(void)
{
	test_interpreter_work();
	test_paired();
	test_disagree();
	test_native_truncated();
	test_cut();
	test_other_threads();
	test_state_unreadable();
	test_python2();
	test_classes();
	return check_report();
}
