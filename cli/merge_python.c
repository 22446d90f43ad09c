/* Merging Python frames into a sample's native stack (cold path).
 *
 * The native stack, root first, is a list of groups: one per captured
 * address (a function and what was inlined into it).  Each eval-loop
 * activation (_PyEval_EvalFrameDefault; PyEval_EvalFrameEx on 2.7) is
 * replaced by the Python frames it was running: the reader marks the
 * outermost frame of each activation, so the Python frames split into runs,
 * one run per activation.  The read happened just after the native sample,
 * while the thread ran on; when the counts disagree the stack is aligned
 * from the root (the part least likely to have changed), or from the leaf
 * when the native stack was cut off at the root (the read's outer frames,
 * which the native part lost, then come first: the Python stack stays
 * whole); a torn read (a call or
 * return ran while it was read) keeps all runs but the innermost; and a
 * "[python frames uncertain]" frame marks where trust ends.  Never drops a
 * sample. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "python_stacks.h"

#define MAX_RUNS 1024

static uint32_t special(struct ember_profile *p, const char *name)
{
	struct ember_frame f = { .kind = EMBER_FRAME_SPECIAL, .name = name };
	return ember_profile_frame(p, &f);
}

static uint32_t python_frame(struct ember_profile *p, const struct ember_python *py, const struct ember_py_frame *pf,
			     bool full_filenames)
{
	const struct ember_py_code *c = py ? ember_python_code(py, pf->code) : NULL;
	struct ember_frame f = {
		.kind = EMBER_FRAME_PYTHON,
		.name = c ? c->qualname : "?",
		.file = c ? (full_filenames ? c->filename : c->short_filename) : "",
		.line = pf->line,
		.first_line = c ? c->first_line : 0,
	};
	return ember_profile_frame(p, &f);
}

static bool is_eval(uint8_t cls, bool py2)
{
	return py2 ? (cls & GROUP_EVAL_EX) != 0 : (cls & GROUP_EVAL_DEFAULT) != 0;
}

/* Whether a native group is shown in the default (filtered) view. */
static bool keep_native(const struct merge_opts *o, uint8_t cls, bool has_python)
{
	if (o->python_only)
		return false;
	if (o->native_unfiltered || !has_python)
		return true;
	if (cls & GROUP_TAKE_GIL)
		return true;   /* waiting for the GIL is what the user needs to see */
	return !(cls & (GROUP_INTERP | GROUP_ROOT));
}

uint32_t merge_stack(struct ember_profile *p, const struct merge_opts *o, const struct native_group *g,
		     uint32_t ng, const struct ember_py_frame *py, uint32_t npy, uint32_t pyflags,
		     const struct ember_python *handle, bool native_truncated, uint32_t *out, uint32_t cap,
		     bool *uncertain)
{
	uint32_t n = 0;
	*uncertain = false;
#define EMIT(id) do { if (n < cap) out[n++] = (id); } while (0)

	bool py2 = handle && ember_python_version(handle)[0] == '2';
	/* unreadable: the chain broke, the frames read are the innermost ones
	 * and the root side is missing -- nothing pairs reliably */
	bool unreadable = (pyflags & EMBER_PY_UNREADABLE) != 0;
	bool torn = unreadable || (pyflags & EMBER_PY_TORN) != 0;
	uint32_t nevals = 0;
	for (uint32_t i = 0; i < ng; i++)
		nevals += is_eval(g[i].cls, py2);
	/* A thread of a Python process that was running Python code: by its
	 * frames, or by eval-loop activations on its native stack (then a read
	 * that found no frames disagrees with it).  Other threads (BLAS, OpenMP
	 * workers) keep their whole native stacks. */
	bool has_python = handle && (npy > 0 || nevals > 0);

	/* Python runs, root first: run r is py[run_lo[r] .. run_hi[r]] read
	 * backwards (py is innermost first). */
	uint32_t run_lo[MAX_RUNS], run_hi[MAX_RUNS];
	uint32_t nruns = has_python ? ember_python_runs(py, npy, run_lo, run_hi, MAX_RUNS) : 0;
	/* Pair activation e (root first) with run e + shift. */
	uint32_t paired = nevals < nruns ? nevals : nruns;
	int shift = 0;
	if (native_truncated && nruns > nevals)
		shift = (int)(nruns - nevals);      /* the root side of the native stack is missing */
	/* Cut off at the root (stack copy, frame cap: deep C -> Python -> C
	 * chains, an import inside an extension's init): the read's outer runs
	 * are the part the native stack lost.  When the sample confirmed every
	 * activation it has, the stack is whole and certain; else uncertain. */
	bool root_runs = has_python && !torn && shift > 0;
	bool explained = root_runs && (pyflags & EMBER_PY_CHECKED);
	if (has_python && (torn || (nevals != nruns && !explained) || (pyflags & EMBER_PY_TRUNCATED)))
		*uncertain = true;
	if (!has_python || unreadable)
		paired = 0;
	else if (torn && paired)
		paired--;   /* a call or return ran during the read: trust the outer runs only */

	if (root_runs)
		for (uint32_t r = 0; r < (uint32_t)shift; r++)
			for (uint32_t k = run_hi[r] + 1; k-- > run_lo[r];)
				EMIT(python_frame(p, handle, &py[k], o->full_filenames));
	bool marked = false;
	uint32_t e = 0;
	for (uint32_t i = 0; i < ng; i++) {
		if (has_python && is_eval(g[i].cls, py2)) {
			uint32_t r = (uint32_t)((int)e + shift);
			if (e < paired && r < nruns) {
				for (uint32_t k = run_hi[r] + 1; k-- > run_lo[r];)
					EMIT(python_frame(p, handle, &py[k], o->full_filenames));
			} else if (!marked) {
				EMIT(special(p, "[python frames uncertain]"));
				marked = true;
			}
			e++;
			/* The eval frame itself is interpreter machinery. */
			if (o->native_unfiltered && !o->python_only)
				for (uint32_t k = 0; k < g[i].n; k++)
					EMIT(g[i].ids[k]);
			continue;
		}
		if (keep_native(o, g[i].cls, has_python))
			for (uint32_t k = 0; k < g[i].n; k++)
				EMIT(g[i].ids[k]);
	}
	/* Python frames the native stack had no activation for (the thread went
	 * deeper after the sample, or no eval frame was recognised, e.g. a
	 * stripped interpreter): keep them only as uncertain. */
	if (has_python && !torn && !root_runs && nevals == 0 && nruns > 0) {
		/* (torn: nothing to pair them with; root_runs: already above) */
		for (uint32_t r = 0; r < nruns; r++)
			for (uint32_t k = run_hi[r] + 1; k-- > run_lo[r];)
				EMIT(python_frame(p, handle, &py[k], o->full_filenames));
		EMIT(special(p, "[python frames uncertain]"));
	} else if (*uncertain && !marked) {
		EMIT(special(p, "[python frames uncertain]"));
	}
#undef EMIT
	return n;
}
