/* Checking a read against the native sample (see python_stacks.h): what
 * each eval-loop activation ran at the sample (calib.c) against the runs of
 * the read's frames, one per activation.  A matching read is checked (and
 * gets the sample's lines); a stale one is corrected: frames the thread
 * pushed since are dropped, a sibling call is replaced by the sampled
 * function under the callers the read found, and on <= 3.10 (one frame per
 * activation) a torn or misaligned read is rebuilt from the sample alone.
 * On <= 3.10 an activation whose instruction pointer is not known is
 * resolved from its frame object instead (resolve_by_frames). */
#include <string.h>

#include "py_check.h"

#define PROMPT_NS 1000000ull          /* reads later than this do not teach */
#define MAX_RUNS 1024
#define MAX_ACTIVATIONS 64

/* One reconcile: the read, the sample's activations and what they say. */
struct recon {
	struct ember_python *py;
	const struct ember_py_evidence *ev;
	uint32_t nev;
	bool native_truncated;
	struct ember_py_frame *fr;
	int n, max;
	uint32_t *flags;
	bool one_per_activation;       /* <= 3.10: PyFrameObject chains */
	bool unreadable, broken;
	bool have_addrs;               /* py->fr->addrs lines up with fr */
	uint32_t lo[MAX_RUNS], hi[MAX_RUNS], nruns;   /* the read's runs, root first */
	struct py_resolved res[MAX_ACTIVATIONS];     /* the sample's, root first */
	uint32_t known;
};

/* Whether the read has a frame running code base. */
static bool in_read(const struct ember_python *py, const struct ember_py_frame *fr, int n, uint32_t base)
{
	for (int i = 0; i < n; i++)
		if (py_code_base(py, fr[i].code) == base)
			return true;
	return false;
}

/* The sampled code as the read named it, when the read has a frame of it
 * (<= 3.10 class variants: "Model.forward" rather than "forward"). */
static uint32_t named_like_read(const struct ember_python *py, const struct ember_py_frame *fr, int n, uint32_t base)
{
	for (int i = 0; i < n; i++)
		if (fr[i].code != base && py_code_base(py, fr[i].code) == base)
			return fr[i].code;
	return base;
}

/* Learn from prompt reads that pair up with the sample.  A native stack
 * cut off at the root pairs from the leaf, when the frames are the ones
 * copied at the sample (the read's extra runs are then the root side it
 * lost, not calls made since). */
static void learn(struct recon *r, uint64_t read_lag_ns)
{
	uint32_t cut = r->native_truncated && r->nruns > r->nev && (*r->flags & EMBER_PY_AT_SAMPLE)
			       ? r->nruns - r->nev : 0;
	if (r->broken || r->nruns != r->nev + cut || read_lag_ns >= PROMPT_NS)
		return;
	for (uint32_t k = 0; k < r->nev; k++) {
		uint32_t at = r->lo[k + cut];
		uint64_t frame = r->have_addrs && at < PY_FRAME_ADDRS ? r->py->fr->addrs[at] : 0;
		py_calib_update(r->py, &r->ev[k], &r->fr[at], frame);
	}
}

/* <= 3.10: resolve activations res[k] left unknown from their frame
 * objects as they are now.  A frame that returned keeps its code and f_back
 * (3.9 and older keep one "zombie" frame per code object for its next call;
 * a traceback keeps a raising frame alive), so it is accepted only when its
 * f_back is the frame of the activation below it in the sample (or NULL for
 * the outermost): a frame reused by another call fails that.  Returns how
 * many it resolved. */
static uint32_t resolve_by_frames(struct recon *r)
{
	uint64_t f[MAX_ACTIVATIONS], read_root_first[MAX_ACTIVATIONS];
	uint32_t nread = 0, added = 0;
	for (uint32_t q = 0; r->have_addrs && !r->broken && q < r->nruns && q < MAX_ACTIVATIONS && r->lo[q] < PY_FRAME_ADDRS;
	     q++)
		read_root_first[nread++] = r->py->fr->addrs[r->lo[q]];
	for (uint32_t k = 0; k < r->nev; k++)
		f[k] = py_frame_of(r->py, &r->ev[k]);
	for (uint32_t k = 0; k < r->nev; k++) {
		if (!f[k])
			continue;
		/* the parent's frame: from the sample, else where the read has it */
		if (k > 0 && !f[k - 1] && k - 1 < nread)
			f[k - 1] = read_root_first[k - 1];
		if (r->res[k].code || !f[k] || (k > 0 && !f[k - 1]))
			continue;
		uint64_t back = 0;
		uint32_t line = 0;
		uint32_t id = py_frame_object_code(r->py, f[k], &back, &line);
		if (!id || back != (k > 0 ? f[k - 1] : 0))
			continue;
		r->res[k] = (struct py_resolved){ .code = py_code_base(r->py, id), .line = line };
		added++;
	}
	return added;
}

/* What every activation ran, by its instruction pointer, and on <= 3.10,
 * when the read disagrees, by its frame object for those whose pointer is
 * not known (DWARF has gaps, e.g. on exception paths, where next_instr is
 * dead) where DWARF or learning says which candidate holds it. */
/* 3.11+, frames copied at the sample: an activation whose instruction
 * pointer nothing gives (a call site where the eval loop keeps it only in
 * the frame, in memory: Debian's 3.14 at most calls) is confirmed when the
 * frame it held at the sample is the frame the copy has for it -- one
 * instant, so the same frame runs the same code.  Confirms, never changes. */
static uint32_t resolve_by_frame_slots(struct recon *r)
{
	uint32_t cut = r->native_truncated && r->nruns > r->nev ? r->nruns - r->nev : 0, n = 0;
	if (r->one_per_activation || r->broken || !r->have_addrs || !(*r->flags & EMBER_PY_AT_SAMPLE) ||
	    r->nruns != r->nev + cut)
		return 0;
	for (uint32_t k = 0; k < r->nev; k++) {
		uint32_t at = r->lo[k + cut];
		uint64_t held = r->res[k].code ? 0 : py_frame_of(r->py, &r->ev[k]);
		if (!held || at >= PY_FRAME_ADDRS || held != r->py->fr->addrs[at])
			continue;
		r->res[k] = (struct py_resolved){ .code = py_code_base(r->py, r->fr[at].code), .line = r->fr[at].line };
		n++;
	}
	return n;
}

static void resolve_all(struct recon *r)
{
	r->known = 0;
	for (uint32_t k = 0; k < r->nev; k++) {
		r->res[k] = py_resolve(r->py, &r->ev[k], r->fr, r->unreadable ? 0 : r->n);
		r->known += r->res[k].code != 0;
	}
	if (r->known < r->nev)
		r->known += resolve_by_frame_slots(r);
	if (r->one_per_activation && r->known < r->nev && (r->broken || r->nruns != r->nev))
		r->known += resolve_by_frames(r);
}

/* A torn read (the chain changed while it was read) that the sample
 * confirms activation by activation was read before the change reached the
 * frames that matter: keep it. */
static void keep_confirmed_torn(struct recon *r)
{
	if (!r->broken || r->unreadable || r->nruns != r->nev || r->known != r->nev)
		return;
	for (uint32_t k = 0; k < r->nev; k++)
		if (py_code_base(r->py, r->fr[r->lo[k]].code) != r->res[k].code)
			return;
	*r->flags &= ~(uint32_t)EMBER_PY_TORN;
	r->broken = false;
}

/* <= 3.10: the sample alone gives the whole Python stack when every
 * activation is known; rebuild it when the read disagrees (unless the
 * native stack was cut off and the read has the root side it lacks).  A
 * guess counts only where the read has its activation and agrees with it:
 * what the read lacks comes from learnt sites alone.  Whether the
 * reconcile is over (r->n is its answer). */
static bool rebuild_from_sample(struct recon *r)
{
	struct ember_python *py = r->py;
	bool read_has_more_root = r->native_truncated && r->nruns > r->nev;
	for (uint32_t k = 0; k < r->nev; k++)
		if (r->res[k].guess && (r->broken || k >= r->nruns || py_code_base(py, r->fr[r->lo[k]].code) != r->res[k].code))
			return false;
	if (!r->one_per_activation || r->known != r->nev || !(r->broken || r->nruns != r->nev) || read_has_more_root)
		return false;
	if ((int)r->nev > r->max)
		return true;
	for (uint32_t k = 0; k < r->nev; k++)
		if (!in_read(py, r->fr, r->n, r->res[k].code) && !py_code_still_there(py, r->res[k].code))
			return true;   /* the sample points at code that has gone */
	uint32_t named[MAX_ACTIVATIONS];
	for (uint32_t k = 0; k < r->nev; k++)
		named[k] = named_like_read(py, r->fr, r->n, r->res[k].code);
	for (uint32_t k = 0; k < r->nev; k++)
		r->fr[r->nev - 1 - k] = (struct ember_py_frame){ .code = named[k], .line = r->res[k].line,
								 .activation_start = true };
	*r->flags &= ~(uint32_t)(EMBER_PY_TORN | EMBER_PY_UNREADABLE | EMBER_PY_TRUNCATED);
	*r->flags |= EMBER_PY_CHECKED | EMBER_PY_CORRECTED;
	py->chk->checked++;
	py->chk->corrected++;
	r->n = (int)r->nev;
	return true;
}

/* 3.11+: the read lacks the sample's innermost activation (a generator
 * that sum() or join() resumed had yielded by the time of the read).  Put
 * it back when the sample says which code and frame it ran, and that frame,
 * read now, still runs that code and is a whole activation by itself (see
 * py_frame_starts_activation): then the activation was that one frame.
 * The read's innermost frame address is one the lost frame cannot be. */
static bool restore_lost_leaf(struct recon *r)
{
	const struct py_resolved *rs = &r->res[r->nev - 1];
	uint64_t read_inner = r->have_addrs && r->nruns ? r->py->fr->addrs[r->lo[r->nruns - 1]] : 0;
	if (r->one_per_activation || r->nruns + 1 != r->nev || !rs->code || rs->guess || r->n >= r->max)
		return false;
	uint64_t f = py_frame_of(r->py, &r->ev[r->nev - 1]);
	if (!f || f == read_inner || !py_frame_starts_activation(r->py, f, rs->code))
		return false;
	memmove(r->fr + 1, r->fr, (size_t)r->n * sizeof *r->fr);
	r->fr[0] = (struct ember_py_frame){ .code = named_like_read(r->py, r->fr + 1, r->n, rs->code), .line = rs->line,
					    .activation_start = true };
	r->n++;
	return true;
}

/* Pair activation k (root first) with run k + *shift: drop the runs the
 * thread went into after the sample, or put back the one it left.  false
 * when they cannot be paired (the read stays as it is). */
static bool align_runs(struct recon *r, int *shift)
{
	*shift = 0;
	if (r->nruns > r->nev) {
		*shift = (int)(r->nruns - r->nev);
		if (r->native_truncated)
			return true;
		/* The thread went deeper after the sample: the extra runs are the
		 * innermost ones -- if the innermost sampled activation's code is
		 * found in the run it would pair with. */
		const struct py_resolved *in = &r->res[r->nev - 1];
		uint32_t q = r->nev - 1;
		bool found = false;
		for (uint32_t i = r->lo[q]; in->code && i <= r->hi[q] && !found; i++)
			found = py_code_base(r->py, r->fr[i].code) == in->code;
		if (!found)
			return false;
		/* drop frames of the extra runs: indices [0, lo[q]) */
		uint32_t drop = r->lo[q];
		memmove(r->fr, r->fr + drop, (size_t)(r->n - (int)drop) * sizeof *r->fr);
		r->n -= (int)drop;
		for (uint32_t k = 0; k < r->nev; k++) {
			r->lo[k] -= drop;
			r->hi[k] -= drop;
		}
		*shift = 0;
		r->nruns = r->nev;
		r->have_addrs = false;
		*r->flags |= EMBER_PY_CORRECTED;
	} else if (r->nruns < r->nev) {
		/* The thread left activations: their frames are gone -- unless it
		 * is only the innermost one and it ran a single frame. */
		if (!restore_lost_leaf(r))
			return false;
		r->nruns = ember_python_runs(r->fr, (uint32_t)r->n, r->lo, r->hi, MAX_RUNS);
		r->have_addrs = false;
		*r->flags |= EMBER_PY_CORRECTED;
	}
	return true;
}

/* Run q's innermost frame (at in) ran something else at the sample.
 * Whether it could be corrected. */
static bool correct_run(struct recon *r, uint32_t k, uint32_t q)
{
	struct ember_python *py = r->py;
	const struct py_resolved *rs = &r->res[k];
	uint32_t in = r->lo[q], j = in + 1;
	while (j <= r->hi[q] && py_code_base(py, r->fr[j].code) != rs->code)
		j++;
	if (j <= r->hi[q]) {
		/* went deeper inside the activation: drop the newer frames */
		uint32_t drop = j - in;
		r->have_addrs = false;
		memmove(&r->fr[in], &r->fr[j], (size_t)(r->n - (int)j) * sizeof *r->fr);
		r->n -= (int)drop;
		for (uint32_t p = 0; p < r->nruns; p++) {
			if (r->lo[p] > in)
				r->lo[p] -= drop;
			if (r->hi[p] >= j)
				r->hi[p] -= drop;
		}
		r->fr[in].line = rs->line;
		return true;
	}
	/* Returned and called something else: the sample's function, under
	 * the callers the read found.  From 3.11 on, only when the frame
	 * pointers show the same frame slot (a call that replaced the read's
	 * innermost one, as compress_step replaces decompress_step): the
	 * sample's code may as well be a callee of the read's innermost frame
	 * run in the same activation (`rng.choice` inside a generator
	 * expression), and the frames between them are unknown. */
	if (!r->one_per_activation) {
		uint64_t fs = py_frame_of(py, &r->ev[k]);
		uint64_t fread = r->have_addrs && in < PY_FRAME_ADDRS ? py->fr->addrs[in] : 0;
		if (!fs || fs != fread)
			return false;
	}
	if (!in_read(py, r->fr, r->n, rs->code) && !py_code_still_there(py, rs->code))
		return false;
	r->fr[in].code = named_like_read(py, r->fr, r->n, rs->code);
	r->fr[in].line = rs->line;
	return true;
}

/* Each activation against its run, root to leaf (removing frames of run q
 * shifts only outer runs' indices). */
static void correct_runs(struct recon *r, int shift)
{
	struct ember_python *py = r->py;
	bool corrected = false, all = true;
	for (uint32_t k = 0; k < r->nev; k++) {
		uint32_t q = k + (uint32_t)shift;
		if (q >= r->nruns)
			break;
		const struct py_resolved *rs = &r->res[k];
		if (!rs->code) {
			all = false;
			continue;
		}
		uint32_t in = r->lo[q];
		if (py_code_base(py, r->fr[in].code) == rs->code) {
			if (rs->lines)
				r->fr[in].line = rs->line;
			continue;
		}
		if (rs->guess || !correct_run(r, k, q)) {   /* a guess is not trusted to change the read */
			all = false;
			continue;
		}
		corrected = true;
	}
	if (all)
		*r->flags |= EMBER_PY_CHECKED;
	if (corrected)
		*r->flags |= EMBER_PY_CORRECTED;
	py->chk->checked += all;
	py->chk->corrected += (*r->flags & EMBER_PY_CORRECTED) != 0;
}

int ember_python_reconcile(struct ember_python *py, const struct ember_py_evidence *ev, uint32_t nev,
			   bool native_truncated, uint64_t read_lag_ns, struct ember_py_frame *fr, int n, int max,
			   uint32_t *flags)
{
	if (!py || !nev || n < 0)
		return n;
	struct recon r;   /* (its arrays are filled as far as they are used) */
	r.py = py;
	r.ev = ev;
	r.nev = nev;
	r.native_truncated = native_truncated;
	r.fr = fr;
	r.n = n;
	r.max = max;
	r.flags = flags;
	r.one_per_activation = py->rt.off.ts_frame >= 0;
	r.unreadable = (*flags & EMBER_PY_UNREADABLE) != 0;
	r.broken = r.unreadable || (*flags & EMBER_PY_TORN);
	r.nruns = r.unreadable ? 0 : ember_python_runs(fr, (uint32_t)n, r.lo, r.hi, MAX_RUNS);
	r.have_addrs = py->fr->naddrs == (uint32_t)n;
	learn(&r, read_lag_ns);
	if (nev > MAX_ACTIVATIONS)
		return n;
	resolve_all(&r);
	if (!r.known)
		return n;
	keep_confirmed_torn(&r);
	if (rebuild_from_sample(&r))
		return r.n;
	if (r.broken || !r.nruns)
		return r.n;
	int shift;
	if (!align_runs(&r, &shift))
		return r.n;
	correct_runs(&r, shift);
	return r.n;
}
