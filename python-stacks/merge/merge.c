/* Merging Python frames into a sample's native stack (py_merge.h has the
 * contract).
 *
 * The native stack, root first, is a list of groups: one per captured
 * address (a function and what was inlined into it). Each eval-loop
 * activation is replaced by the Python frames it was running: the reader
 * marks the outermost frame of each activation, so the Python frames split
 * into runs, one run per activation. The read happened just after the
 * native sample, while the thread ran on; when the counts disagree the
 * stack is aligned from the root (the part least likely to have changed),
 * or from the leaf when the native stack was cut off at the root (the
 * read's outer runs, which the native part lost, then come first: the
 * Python stack stays whole); a torn read (a call or return ran while it
 * was read) keeps all runs but the innermost; and an UNCERTAIN item marks
 * where trust ends.  The interpreter's own native frames are hidden only
 * where Python frames stand for them: a read with nothing to place leaves
 * the native stack whole but for the eval-loop activations. */
#include <string.h>

#include "py_merge.h"

#define MAX_RUNS 1024

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

uint8_t ember_py_native_class(const char *function, const char *module, bool named)
{
	const char *name = function ? function : "", *mod = module ? module : "";
	uint8_t cls = 0;
	/* CPython's perf trampolines (-X perf, 3.12+): JIT code named
	 * "py::qualname:file" that only calls the eval loop. */
	if (strcmp(mod, "[jit]") == 0 && starts_with(name, "py::"))
		cls |= EMBER_NATIVE_INTERP;
	if (strcmp(name, "_PyEval_EvalFrameDefault") == 0 || starts_with(name, "_PyEval_EvalFrameDefault."))
		cls |= EMBER_NATIVE_EVAL;
	if (strcmp(name, "PyEval_EvalFrameEx") == 0)
		cls |= EMBER_NATIVE_EVAL_EX;
	/* The interpreter's own module: python3.11, python2.7, libpython3.12.so.1.0. */
	if (starts_with(mod, "python") || starts_with(mod, "libpython"))
		cls |= EMBER_NATIVE_INTERP;
	if (starts_with(name, "take_gil"))
		cls |= EMBER_NATIVE_TAKE_GIL;
	static const char *const roots[] = { "_start", "__libc_start_main", "__libc_start_call_main",
					     "clone3", "clone", "start_thread" };
	for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
		if (strcmp(name, roots[i]) == 0)
			cls |= EMBER_NATIVE_ROOT;
	if (!named && starts_with(mod, "libc.so"))
		cls |= EMBER_NATIVE_LIBC_ANON;
	if (!named)
		cls |= EMBER_NATIVE_ANON;
	else if ((cls & EMBER_NATIVE_INTERP) && ember_py_machinery(name))
		cls |= EMBER_NATIVE_MACHINERY;
	/* (a perf trampoline only calls the eval loop) */
	if (strcmp(mod, "[jit]") == 0 && starts_with(name, "py::"))
		cls |= EMBER_NATIVE_MACHINERY;
	return cls;
}

void ember_py_root_groups(struct ember_native_group *g, uint32_t n, bool whole)
{
	if (whole && n > 0 && (g[0].cls & EMBER_NATIVE_LIBC_ANON))
		g[0].cls |= EMBER_NATIVE_ROOT;
	for (uint32_t i = 1; i < n; i++)
		if ((g[i].cls & EMBER_NATIVE_LIBC_ANON) && (g[i - 1].cls & EMBER_NATIVE_ROOT))
			g[i].cls |= EMBER_NATIVE_ROOT;
}

/* Which native groups are hidden on a Python thread (Python frames stand
 * for the interpreter's machinery): the machinery and the roots by name;
 * an interpreter's frame that no symbol names by its callee, the group
 * after it, whose call it made: hidden when that is hidden, the eval loop
 * or code outside the interpreter (a call into an extension goes through
 * the machinery), shown when that is the interpreter's shown work, or when
 * it is the leaf itself. Decided from the leaf up into hidden[]. */
static void hide_machinery(const struct ember_merge_in *in, bool *hidden)
{
	const struct ember_native_group *g = in->groups;
	/* Before the first activation, the interpreter's frames are its start
	 * (main, Py_BytesMain, Py_InitializeFromConfig running the frozen
	 * getpath, a thread's bootstrap): all of them go. */
	uint32_t first_eval = 0;
	while (first_eval < in->ngroups && !(g[first_eval].cls & in->eval_class))
		first_eval++;
	if (first_eval == in->ngroups)
		first_eval = 0;
	for (uint32_t i = in->ngroups; i-- > 0;) {
		uint8_t c = g[i].cls;
		if (c & EMBER_NATIVE_TAKE_GIL)
			hidden[i] = false;   /* waiting for the GIL is what the user needs to see */
		else if ((c & (EMBER_NATIVE_MACHINERY | EMBER_NATIVE_ROOT | in->eval_class)) ||
			 (i < first_eval && (c & EMBER_NATIVE_INTERP)))
			hidden[i] = true;
		else if ((c & EMBER_NATIVE_INTERP) && (c & EMBER_NATIVE_ANON) && i + 1 < in->ngroups)
			hidden[i] = hidden[i + 1] || !(g[i + 1].cls & EMBER_NATIVE_INTERP);
		else
			hidden[i] = false;
	}
}

/* Whether native group i is shown: a Python thread's Python frames stand
 * for the interpreter's machinery (hide_interp). */
static bool keep_native(const struct ember_merge_opts *o, const bool *hidden, uint32_t i, bool hide_interp)
{
	if (o->python_only)
		return false;
	if (o->native_unfiltered || !hide_interp)
		return true;
	return !hidden[i];
}

struct merge_out {
	struct ember_merged *items;
	uint32_t n, cap;
	bool cut_done;              /* the CUT item is out */
};

static void emit(struct merge_out *m, uint32_t kind, uint32_t value, uint32_t group)
{
	if (m->n < m->cap)
		m->items[m->n++] = (struct ember_merged){ .kind = kind, .value = value, .group = group };
	m->cut_done = m->cut_done || kind == EMBER_MERGED_CUT;
}

/* A read's runs, root first: run r is py[lo[r] .. hi[r]]. With a cut,
 * runs 0..root_side are the root side (the last of them ends at the cut)
 * and the rest the leaf side; the activations of the frames left out
 * count as runs too (empty ones), so that the count is the stack's. */
struct runs {
	uint32_t lo[MAX_RUNS], hi[MAX_RUNS];
	uint32_t n;                 /* runs read */
	uint32_t count;             /* runs the stack had: n, plus the cut's whole ones, less one
	                             * when the cut ran inside one activation */
	bool cut;
	uint32_t root_side;         /* with a cut: the runs on its root side */
	uint32_t middle;            /* ... the activations left out whole */
	bool spans;                 /* ... the cut lies inside one activation */
};

static void runs_of(const struct ember_merge_in *in, bool has_python, struct runs *rs)
{
	rs->n = has_python ? ember_python_runs(in->py, in->npy, rs->lo, rs->hi, MAX_RUNS) : 0;
	rs->count = rs->n;
	rs->cut = false;
	if (!rs->n || !(in->pyflags & EMBER_PY_CUT))
		return;
	uint32_t c = 0;
	while (c < in->npy && !in->py[c].cut)
		c++;
	if (c >= in->npy)
		return;
	rs->root_side = 0;
	while (rs->root_side < rs->n && rs->lo[rs->root_side] > c)
		rs->root_side++;
	if (!rs->root_side || rs->root_side == rs->n)
		return;
	rs->cut = true;
	rs->spans = in->py[c].cut_spans;
	rs->middle = rs->spans ? 0 : in->py[c].cut_runs;
	rs->count = rs->n + rs->middle - rs->spans;
}

static void emit_frames(struct merge_out *m, const struct runs *rs, uint32_t r, uint32_t group)
{
	for (uint32_t k = rs->hi[r] + 1; k-- > rs->lo[r];)
		emit(m, EMBER_MERGED_PYTHON, k, group);
}

/* Run r of the stack's count (root first), at group: its frames; for the
 * last run of a cut's root side, the CUT item after them (and the leaf
 * side's first run when the cut lies inside that activation); nothing for
 * an activation the cut left out. */
static void emit_run(struct merge_out *m, const struct runs *rs, uint32_t r, uint32_t group)
{
	if (!rs->cut) {
		emit_frames(m, rs, r, group);
		return;
	}
	if (r < rs->root_side) {
		emit_frames(m, rs, r, group);
		if (r + 1 == rs->root_side) {
			emit(m, EMBER_MERGED_CUT, 0, group);
			if (rs->spans)
				emit_frames(m, rs, rs->root_side, group);
		}
		return;
	}
	/* the leaf side's run j stands at r = root_side + middle + j - spans */
	uint32_t j = r + rs->spans - rs->root_side;
	if (j >= rs->middle + rs->spans)
		emit_frames(m, rs, rs->root_side + j - rs->middle, group);
}

static void emit_group(struct merge_out *m, const struct ember_native_group *g, uint32_t group)
{
	for (uint32_t k = 0; k < g->n; k++)
		emit(m, EMBER_MERGED_NATIVE, g->ids[k], group);
}

/* Where trust ends: the UNCERTAIN item, after the CUT item of a cut read
 * whose root side did not come out (the frames left out are among those
 * it stands for). */
static void mark_uncertain(struct merge_out *m, const struct runs *rs, uint32_t group)
{
	if (rs->cut && !m->cut_done)
		emit(m, EMBER_MERGED_CUT, 0, group);
	emit(m, EMBER_MERGED_UNCERTAIN, 0, group);
}

/* How a read's runs meet the native stack's eval-loop activations. */
struct merge_plan {
	uint32_t paired;          /* activation e (root first) takes run e + shift, for e < paired */
	uint32_t shift;
	bool root_runs;           /* runs 0..shift go first: the native stack lost its root */
	bool trailing;            /* the runs follow the native frames: no activation to pair */
	bool hide_interp;         /* Python frames stand for the interpreter's own */
	bool uncertain;
};

static struct merge_plan plan_merge(const struct ember_merge_in *in, bool has_python, uint32_t nevals,
				    uint32_t nruns)
{
	struct merge_plan p = { .paired = nevals < nruns ? nevals : nruns };
	/* unreadable: the chain broke, the frames read are the innermost ones
	 * and the root side is missing -- nothing pairs reliably */
	bool unreadable = (in->pyflags & EMBER_PY_UNREADABLE) != 0;
	bool torn = unreadable || (in->pyflags & EMBER_PY_TORN) != 0;
	bool cut = in->native_truncated || in->native_incomplete;
	p.shift = cut && nruns > nevals ? nruns - nevals : 0;
	/* Cut off at the root (stack copy, frame cap: deep C -> Python -> C
	 * chains, an import inside an extension's init; or an unwind that
	 * stopped short of the root): the read's outer runs are the part the
	 * native stack lost. When the sample confirmed every activation it
	 * has, or the frames were copied at the sample and the unwind just
	 * stopped early, the stack is whole and certain; else uncertain. */
	p.root_runs = has_python && !torn && p.shift > 0;
	bool explained = p.root_runs && ((in->pyflags & EMBER_PY_CHECKED) ||
					 (in->native_incomplete && (in->pyflags & EMBER_PY_AT_SAMPLE)));
	p.uncertain = has_python && (torn || (nevals != nruns && !explained) || (in->pyflags & EMBER_PY_TRUNCATED));
	if (!has_python || unreadable)
		p.paired = 0;
	else if (torn && p.paired)
		p.paired--;   /* a call or return ran during the read: trust the outer runs only */
	/* No eval frame recognised (a stripped interpreter), or the thread went
	 * deeper after the sample. */
	p.trailing = has_python && !torn && !p.root_runs && nevals == 0 && nruns > 0;
	/* A read that yields no frame to place (the interpreter's state was
	 * unreadable, garbage, or not there yet) costs the Python frames, never
	 * the native ones: the interpreter's frames stay, as nothing stands for
	 * them, and only its eval-loop activations give way to the mark. */
	p.hide_interp = has_python && (p.root_runs || p.paired > 0 || p.trailing);
	return p;
}

uint32_t ember_py_merge(const struct ember_merge_opts *o, const struct ember_merge_in *in, struct ember_merged *out,
			uint32_t cap, bool *uncertain)
{
	struct merge_out m = { .items = out, .cap = cap };
	const struct ember_native_group *g = in->groups;
	uint32_t nevals = 0;
	for (uint32_t i = 0; i < in->ngroups; i++)
		nevals += (g[i].cls & in->eval_class) != 0;
	/* A thread of a Python process that was running Python code: by its
	 * frames, or by eval-loop activations on its native stack (then a read
	 * that found no frames disagrees with it). Other threads (BLAS, OpenMP
	 * workers) keep their whole native stacks. */
	bool has_python = in->eval_class && (in->npy > 0 || nevals > 0);
	struct runs rs;
	runs_of(in, has_python, &rs);
	uint32_t nruns = rs.count;
	struct merge_plan p = plan_merge(in, has_python, nevals, nruns);
	*uncertain = p.uncertain;

	bool hidden[EMBER_MERGE_MAX_GROUPS];
	if (in->ngroups > EMBER_MERGE_MAX_GROUPS)
		return 0;
	if (p.hide_interp)
		hide_machinery(in, hidden);
	if (p.root_runs)
		for (uint32_t r = 0; r < p.shift; r++)
			emit_run(&m, &rs, r, EMBER_MERGED_BEFORE);
	bool marked = false;
	uint32_t e = 0;
	for (uint32_t i = 0; i < in->ngroups; i++) {
		if (has_python && (g[i].cls & in->eval_class)) {
			uint32_t r = e + p.shift;
			if (e < p.paired && r < nruns) {
				emit_run(&m, &rs, r, i);
			} else if (!marked) {
				mark_uncertain(&m, &rs, i);
				marked = true;
			}
			e++;
			/* The eval frame itself is interpreter machinery. */
			if (o->native_unfiltered && !o->python_only)
				emit_group(&m, &g[i], i);
			continue;
		}
		if (keep_native(o, hidden, i, p.hide_interp))
			emit_group(&m, &g[i], i);
	}
	/* Python frames the native stack had no activation for: kept only as
	 * uncertain. (Torn: nothing to pair them with; root_runs: already above.) */
	if (p.trailing) {
		for (uint32_t r = 0; r < nruns; r++)
			emit_run(&m, &rs, r, in->ngroups);
		emit(&m, EMBER_MERGED_UNCERTAIN, 0, in->ngroups);
	} else if (p.uncertain && !marked) {
		mark_uncertain(&m, &rs, in->ngroups);
	}
	if (rs.cut && !m.cut_done)   /* a cut read whose runs found no place: still said */
		emit(&m, EMBER_MERGED_CUT, 0, in->ngroups);
	return m.n;
}
