/* Checking a read against the native sample (see python_stacks.h).
 *
 * Each eval-loop activation keeps the instruction it runs in a register or
 * a stack slot: which one is up to the compiler (Debian's 3.11: r15; pyenv
 * 3.12: a slot 46 words below the frame's CFA).  Where the interpreter's
 * DWARF says so (eval_dwarf.c), that is used at every pc.  Elsewhere it is
 * learnt per call site: every read whose activations pair up with the
 * sample is a trial: each candidate word that points into the bytecode of
 * the read's running code object scores a code hit, and a line hit when it
 * also gives the read's line.  The candidate with most line hits wins once
 * it has enough of both (a word holding the first instruction scores code
 * hits but rarely line hits).  Reads that lag the sample only add noise to
 * the counts.  Which candidate holds the activation's frame is learnt the
 * same way, by exact match with the frame address the read found.
 *
 * From then on, each activation's candidate word is looked up among the
 * bytecode ranges of the code objects the reader has seen (recently
 * validated ones only: a freed range may hold something else now), which
 * gives the code object and line running at the sample.  A site with only
 * a few trials whose one candidate agreed every time is used provisionally:
 * it may confirm a read (a torn one included), never change one.  On
 * <= 3.10 an activation whose instruction pointer is not known is resolved
 * from its frame object instead (resolve_by_frames). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "py_internal.h"

#define CALIB_MIN_TRIALS 8
#define FRAME_MIN_TRIALS 3            /* frame holders match exactly: fewer trials */
#define PROVISIONAL_TRIALS 2         /* a site's candidate may confirm reads from here */
#define CALIB_DECAY_AT 256            /* halve the counts: later behaviour counts more */
#define CALIB_MAX_SITES 8192
#define PROMPT_NS 1000000ull          /* reads later than this do not teach */
#define RECENT_NS 2000000000ull       /* a code object validated this recently is trusted */
#define MAX_RUNS 1024

bool ember_python_is_eval(const struct ember_python *py, uint64_t pc)
{
	for (uint32_t i = 0; i < py->neval; i++)
		if (pc >= py->eval_lo[i] && pc < py->eval_hi[i])
			return true;
	return false;
}

bool ember_python_is_eval_vaddr(const struct ember_python *py, const char *path, uint64_t vaddr)
{
	return py && path && strcmp(path, py->rt_path) == 0 && ember_python_is_eval(py, vaddr + py->rt_bias);
}

/* ------------------------------------------------------- bytecode index */

void py_bc_add(struct ember_python *py, uint32_t id)
{
	const struct py_code_entry *c = py->codes[id - 1];
	if (!c->bc_start || c->ninstr_bytes <= 0)
		return;
	if (py->nbc == py->bc_cap) {
		size_t nc = py->bc_cap ? py->bc_cap * 2 : 256;
		struct py_bc_range *v = realloc(py->bc, nc * sizeof *v);
		if (!v)
			return;   /* not indexed: its activations stay unchecked */
		py->bc = v;
		py->bc_cap = nc;
	}
	struct py_bc_range r = { c->bc_start, c->bc_start + (uint64_t)c->ninstr_bytes, id };
	size_t lo = 0, hi = py->nbc;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (py->bc[mid].start <= r.start)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(&py->bc[lo + 1], &py->bc[lo], (py->nbc - lo) * sizeof r);
	py->bc[lo] = r;
	py->nbc++;
}

/* The code id whose bytecode holds addr, validated recently; 0 if none.
 * Ranges of freed code objects overlap later ones at the same address:
 * one in the read (fr, n: the frames of the sample's instant when copied
 * at the sample) wins, else the most recently validated. */
static uint32_t bc_lookup(const struct ember_python *py, uint64_t addr, const struct ember_py_frame *fr, int n)
{
	size_t lo = 0, hi = py->nbc;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (py->bc[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t best = 0;
	uint64_t best_ns = 0;
	for (size_t i = lo, k = 0; i-- > 0 && k < 16; k++) {
		const struct py_bc_range *r = &py->bc[i];
		if (addr >= r->end)
			continue;
		for (int j = 0; j < n; j++)
			if (py_code_base(py, fr[j].code) == r->code)
				return r->code;
		uint64_t ns = py->codes[r->code - 1]->checked_ns;
		if (!best || ns > best_ns) {
			best = r->code;
			best_ns = ns;
		}
	}
	if (best && py->read_ns > best_ns && py->read_ns - best_ns > RECENT_NS)
		return 0;
	return best;
}

/* Line of the instruction before the one addr points at (the evidence is
 * the "next instruction" pointer of a call in progress), or -1. */
static int line_at(const struct ember_python *py, uint32_t id, uint64_t addr)
{
	const struct py_code_entry *c = py->codes[id - 1];
	uint64_t off = addr - c->bc_start;
	if (off > 0)
		off--;
	if (py->major == 3)
		off &= ~1ull;   /* 2-byte code units from 3.6 */
	int l = py_lines_lookup(&c->lines, (int)off);
	return l < 0 ? 0 : l;
}

/* ---------------------------------------------------------- calibration */

/* Each call site of the eval loop has its own register allocation, so the
 * holder of the instruction pointer is learnt per site (pc). */
static struct py_calib *calib_get(struct ember_python *py, uint64_t pc, bool create)
{
	if (!pc)
		return NULL;
	if (create && (py->calib_n + 1) * 2 > py->calib_cap) {
		if (py->calib_cap >= CALIB_MAX_SITES)
			create = false;
		else {
			size_t nc = py->calib_cap ? py->calib_cap * 2 : 64;
			struct py_calib *t = calloc(nc, sizeof *t);
			if (!t)
				return NULL;
			for (size_t i = 0; i < py->calib_cap; i++) {
				if (!py->calib[i].pc)
					continue;
				size_t h = (py->calib[i].pc * 0x9e3779b97f4a7c15ull >> 20) & (nc - 1);
				while (t[h].pc)
					h = (h + 1) & (nc - 1);
				t[h] = py->calib[i];
			}
			free(py->calib);
			py->calib = t;
			py->calib_cap = nc;
		}
	}
	if (!py->calib_cap)
		return NULL;
	size_t h = (pc * 0x9e3779b97f4a7c15ull >> 20) & (py->calib_cap - 1);
	while (py->calib[h].pc && py->calib[h].pc != pc)
		h = (h + 1) & (py->calib_cap - 1);
	if (py->calib[h].pc == pc)
		return &py->calib[h];
	if (!create)
		return NULL;
	py->calib[h].pc = pc;
	py->calib[h].cand = -1;
	py->calib[h].fcand = -1;
	py->calib_n++;
	return &py->calib[h];
}

/* Count one trial of site cb and pick its candidate.  Returns the change in
 * the number of sites with a candidate (-1, 0, +1). */
static int calib_trial(struct ember_python *py, struct py_calib *cb, const struct ember_py_evidence *ev,
		       uint32_t code, uint32_t line)
{
	const struct py_code_entry *c = py->codes[code - 1];
	uint64_t lo = c->bc_start, hi = c->bc_start + (uint64_t)c->ninstr_bytes;
	cb->trials++;
	for (uint32_t j = 0; j < ev->n && j < EMBER_PY_EVIDENCE_MAX; j++) {
		uint64_t v = ev->vals[j];
		if (v < lo || v > hi)   /* a "next instruction" may point just past the end */
			continue;
		cb->code_hits[j]++;
		if (line_at(py, code, v) == (int)line)
			cb->line_hits[j]++;
	}
	if (cb->trials < CALIB_MIN_TRIALS)
		return 0;
	int32_t best = -1;
	for (uint32_t j = 0; j < EMBER_PY_EVIDENCE_MAX; j++)
		if (cb->code_hits[j] * 10 >= cb->trials * 9 &&
		    (best < 0 || cb->line_hits[j] > cb->line_hits[best]))
			best = (int32_t)j;
	/* A word that points into the bytecode but seldom at the read's line
	 * (the first instruction, a stale spill) is not the instruction pointer. */
	if (best >= 0 && cb->line_hits[best] * 10 < cb->trials * 5)
		best = -1;
	int change = (best >= 0) == (cb->cand >= 0) ? 0 : best >= 0 ? 1 : -1;
	cb->cand = (int16_t)best;
	cb->lines = best >= 0 && cb->line_hits[best] * 10 >= cb->trials * 8;
	if (cb->trials >= CALIB_DECAY_AT) {
		cb->trials /= 2;
		for (uint32_t j = 0; j < EMBER_PY_EVIDENCE_MAX; j++) {
			cb->code_hits[j] /= 2;
			cb->line_hits[j] /= 2;
		}
	}
	return change;
}

/* One trial of which candidate holds the frame at address frame (exact
 * equality), counted in trials/hits; halved now and then like the sites'. */
static void count_frame_hits(uint16_t *trials, uint16_t *hits, const struct ember_py_evidence *ev, uint64_t frame)
{
	(*trials)++;
	for (uint32_t j = 0; j < ev->n && j < EMBER_PY_EVIDENCE_MAX; j++)
		hits[j] += ev->vals[j] == frame;
	if (*trials >= CALIB_DECAY_AT) {
		*trials /= 2;
		for (uint32_t j = 0; j < EMBER_PY_EVIDENCE_MAX; j++)
			hits[j] /= 2;
	}
}

/* A site's frame holder: the first candidate that held it in 90% of at
 * least a few trials (exact matches: few suffice). */
static void frame_trial(struct py_calib *cb, const struct ember_py_evidence *ev, uint64_t frame)
{
	count_frame_hits(&cb->ftrials, cb->frame_hits, ev, frame);
	cb->fcand = -1;
	for (uint32_t j = 0; j < EMBER_PY_EVIDENCE_MAX && cb->ftrials >= FRAME_MIN_TRIALS; j++)
		if (cb->frame_hits[j] * 10 >= cb->ftrials * 9) {
			cb->fcand = (int16_t)j;
			break;
		}
}

/* frame: the address of the read's (innermost) frame for this activation,
 * 0 if unknown. */
static void calib_update(struct ember_python *py, const struct ember_py_evidence *ev, const struct ember_py_frame *f,
			 uint64_t frame)
{
	bool dw_instr = py_eval_dwarf_cand(py, ev->pc, PY_EVAL_NEXT_INSTR) >= 0;
	bool want_frame = frame && py_eval_dwarf_cand(py, ev->pc, PY_EVAL_FRAME) < 0;
	if (want_frame && ev->leaf && py->off.ts_frame >= 0)
		count_frame_hits(&py->leaf_ftrials, py->leaf_fhits, ev, frame);
	if (dw_instr && !want_frame)
		return;   /* known from DWARF: nothing to learn */
	struct py_calib *cb = calib_get(py, ev->pc, true);
	if (!cb)
		return;
	if (want_frame)
		frame_trial(cb, ev, frame);
	uint32_t code = py_code_base(py, f->code);
	const struct py_code_entry *c = py->codes[code - 1];
	if (!dw_instr && c->bc_start && c->ninstr_bytes > 0)
		py->calib_learnt += (uint64_t)(int64_t)calib_trial(py, cb, ev, code, f->line);
}

/* ------------------------------------------------------------ reconcile */

struct resolved {
	uint32_t code;    /* 0: unknown */
	uint32_t line;
	bool lines;       /* the line is trusted over the read's */
	bool guess;       /* a site not learnt yet: may confirm a read, never change it */
};

/* What candidate cand of ev names: code and line, or code 0. */
static struct resolved resolve_with(const struct ember_python *py, const struct ember_py_evidence *ev,
				    int32_t cand, bool lines, bool guess, const struct ember_py_frame *fr, int n)
{
	struct resolved r = { .guess = guess };
	if (cand < 0 || (uint32_t)cand >= ev->n)
		return r;
	uint64_t v = ev->vals[cand];
	uint32_t id = v ? bc_lookup(py, v, fr, n) : 0;
	if (!id)
		return r;
	r.code = id;
	r.line = (uint32_t)line_at(py, id, v);
	r.lines = lines && !guess;
	return r;
}

/* The instruction pointer's holder at ev->pc: from the interpreter's DWARF
 * when it has some (exact, at every pc, the sampled frame's too), else
 * learnt per site.  fr, n: the read (whose code objects win an address
 * range that several have held). */
static struct resolved resolve(struct ember_python *py, const struct ember_py_evidence *ev,
			       const struct ember_py_frame *fr, int n)
{
	struct resolved r = { 0 };
	int32_t cand = py_eval_dwarf_cand(py, ev->pc, PY_EVAL_NEXT_INSTR);
	if (cand >= 0)
		return resolve_with(py, ev, cand, true, false, fr, n);
	const struct py_calib *cb = calib_get(py, ev->pc, false);
	if (!cb)
		return r;
	cand = cb->cand;
	if (cand < 0 && cb->trials >= PROVISIONAL_TRIALS && cb->trials < CALIB_MIN_TRIALS) {
		/* Too few trials to learn the site, but one candidate agreed with
		 * every read so far: good enough to confirm a read. */
		for (uint32_t j = 0; j < EMBER_PY_EVIDENCE_MAX && cand < 0; j++)
			if (cb->line_hits[j] == cb->trials)
				cand = (int32_t)j;
		return resolve_with(py, ev, cand, false, true, fr, n);
	}
	return resolve_with(py, ev, cand, cb->lines, false, fr, n);
}

/* The frame object activation ev ran, per DWARF or learnt; 0 if unknown. */
static uint64_t frame_of(struct ember_python *py, const struct ember_py_evidence *ev)
{
	int c = py_eval_dwarf_cand(py, ev->pc, PY_EVAL_FRAME);
	if (c < 0) {
		const struct py_calib *cb = calib_get(py, ev->pc, false);
		c = cb ? cb->fcand : -1;
	}
	if (c < 0 && ev->leaf && py->off.ts_frame >= 0 && py->leaf_ftrials >= CALIB_MIN_TRIALS) {
		/* the pooled leaf holder, when it held the frame in most trials */
		uint32_t best = 0;
		for (uint32_t j = 1; j < EMBER_PY_EVIDENCE_MAX; j++)
			if (py->leaf_fhits[j] > py->leaf_fhits[best])
				best = j;
		if (py->leaf_fhits[best] * 2 >= py->leaf_ftrials)
			c = (int)best;
	}
	return c >= 0 && (uint32_t)c < ev->n ? ev->vals[c] : 0;
}

/* <= 3.10: resolve activations res[k] left unknown from their frame
 * objects as they are now.  A frame that returned keeps its code and f_back
 * (3.9 and older keep one "zombie" frame per code object for its next call;
 * a traceback keeps a raising frame alive), so it is accepted only when its
 * f_back is the frame of the activation below it in the sample (or NULL for
 * the outermost): a frame reused by another call fails that.  Returns how
 * many it resolved. */
static uint32_t resolve_by_frames(struct ember_python *py, const struct ember_py_evidence *ev, uint32_t nev,
				  struct resolved *res, const uint64_t *read_root_first, uint32_t nread)
{
	uint64_t f[64];
	uint32_t added = 0;
	for (uint32_t k = 0; k < nev; k++)
		f[k] = frame_of(py, &ev[k]);
	for (uint32_t k = 0; k < nev; k++) {
		if (!f[k])
			continue;
		/* the parent's frame: from the sample, else where the read has it */
		if (k > 0 && !f[k - 1] && k - 1 < nread)
			f[k - 1] = read_root_first[k - 1];
		if (res[k].code || !f[k] || (k > 0 && !f[k - 1]))
			continue;
		uint64_t back = 0;
		uint32_t line = 0;
		uint32_t id = py_frame_object_code(py, f[k], &back, &line);
		if (!id || back != (k > 0 ? f[k - 1] : 0))
			continue;
		res[k] = (struct resolved){ .code = py_code_base(py, id), .line = line };
		added++;
	}
	return added;
}

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

/* 3.11+: the read lacks the sample's innermost activation (a generator
 * that sum() or join() resumed had yielded by the time of the read).  Put
 * it back when the sample says which code and frame it ran, and that frame,
 * read now, still runs that code and is a whole activation by itself (see
 * py_frame_starts_activation): then the activation was that one frame.
 * read_inner: the read's innermost frame address, which the lost frame
 * cannot be. */
static bool restore_lost_leaf(struct ember_python *py, const struct ember_py_evidence *ev, uint32_t nev,
			      const struct resolved *res, uint64_t read_inner, struct ember_py_frame *fr, int *n,
			      int max, uint32_t nruns)
{
	const struct resolved *rs = &res[nev - 1];
	if (py->off.ts_frame >= 0 || nruns + 1 != nev || !rs->code || rs->guess || *n >= max)
		return false;
	uint64_t f = frame_of(py, &ev[nev - 1]);
	if (!f || f == read_inner || !py_frame_starts_activation(py, f, rs->code))
		return false;
	memmove(fr + 1, fr, (size_t)*n * sizeof *fr);
	fr[0] = (struct ember_py_frame){ .code = named_like_read(py, fr + 1, *n, rs->code), .line = rs->line,
					 .activation_start = true };
	(*n)++;
	return true;
}

int ember_python_reconcile(struct ember_python *py, const struct ember_py_evidence *ev, uint32_t nev,
			   bool native_truncated, uint64_t read_lag_ns, struct ember_py_frame *fr, int n, int max,
			   uint32_t *flags)
{
	if (!py || !nev || n < 0)
		return n;
	bool one_per_activation = py->off.ts_frame >= 0;   /* <= 3.10: PyFrameObject chains */
	bool unreadable = (*flags & EMBER_PY_UNREADABLE) != 0;
	bool broken = unreadable || (*flags & EMBER_PY_TORN);
	uint32_t lo[MAX_RUNS], hi[MAX_RUNS];
	uint32_t nruns = unreadable ? 0 : ember_python_runs(fr, (uint32_t)n, lo, hi, MAX_RUNS);

	/* Learn from prompt reads that pair up with the sample.  A native stack
	 * cut off at the root pairs from the leaf, when the frames are the
	 * ones copied at the sample (the read's extra runs are then the root
	 * side it lost, not calls made since). */
	bool have_addrs = py->nfr_addrs == (uint32_t)n;
	uint32_t cut = native_truncated && nruns > nev && (*flags & EMBER_PY_AT_SAMPLE) ? nruns - nev : 0;
	if (!broken && nruns == nev + cut && read_lag_ns < PROMPT_NS)
		for (uint32_t k = 0; k < nev; k++) {
			uint32_t at = lo[k + cut];
			calib_update(py, &ev[k], &fr[at], have_addrs && at < PY_FRAME_ADDRS ? py->fr_addrs[at] : 0);
		}

	struct resolved res[64];
	if (nev > 64)
		return n;
	uint32_t known = 0;
	for (uint32_t k = 0; k < nev; k++) {
		res[k] = resolve(py, &ev[k], fr, unreadable ? 0 : n);
		known += res[k].code != 0;
	}
	/* <= 3.10, when the read disagrees: activations whose instruction
	 * pointer is not known (DWARF has gaps, e.g. on exception paths, where
	 * next_instr is dead) by their frame object, where DWARF or learning
	 * says which candidate holds it. */
	if (one_per_activation && known < nev && (broken || nruns != nev)) {
		uint64_t read_addrs[64];
		uint32_t nread = 0;
		for (uint32_t r = 0; have_addrs && !broken && r < nruns && r < 64 && lo[r] < PY_FRAME_ADDRS; r++)
			read_addrs[nread++] = py->fr_addrs[lo[r]];
		known += resolve_by_frames(py, ev, nev, res, read_addrs, nread);
	}
	if (!known)
		return n;

	/* A torn read (the chain changed while it was read) that the sample
	 * confirms activation by activation was read before the change reached
	 * the frames that matter: keep it. */
	if (broken && !unreadable && nruns == nev && known == nev) {
		bool all = true;
		for (uint32_t k = 0; k < nev && all; k++)
			all = py_code_base(py, fr[lo[k]].code) == res[k].code;
		if (all) {
			*flags &= ~(uint32_t)EMBER_PY_TORN;
			broken = false;
		}
	}

	/* <= 3.10: the sample alone gives the whole Python stack when every
	 * activation is known; rebuild it when the read disagrees (unless the
	 * native stack was cut off and the read has the root side it lacks).
	 * A guess counts only where the read has its activation and agrees
	 * with it: what the read lacks comes from learnt sites alone. */
	bool read_has_more_root = native_truncated && nruns > nev;
	bool guesses_agree = true;
	for (uint32_t k = 0; k < nev; k++)
		if (res[k].guess && (broken || k >= nruns || py_code_base(py, fr[lo[k]].code) != res[k].code))
			guesses_agree = false;
	if (one_per_activation && known == nev && guesses_agree && (broken || nruns != nev) && !read_has_more_root) {
		if ((int)nev > max || nev > 64)
			return n;
		for (uint32_t k = 0; k < nev; k++)
			if (!in_read(py, fr, n, res[k].code) && !py_code_still_there(py, res[k].code))
				return n;   /* the sample points at code that has gone */
		uint32_t named[64];
		for (uint32_t k = 0; k < nev; k++)
			named[k] = named_like_read(py, fr, n, res[k].code);
		for (uint32_t k = 0; k < nev; k++)
			fr[nev - 1 - k] = (struct ember_py_frame){ .code = named[k], .line = res[k].line,
								   .activation_start = true };
		*flags &= ~(uint32_t)(EMBER_PY_TORN | EMBER_PY_UNREADABLE | EMBER_PY_TRUNCATED);
		*flags |= EMBER_PY_CHECKED | EMBER_PY_CORRECTED;
		py->st.checked++;
		py->st.corrected++;
		return (int)nev;
	}
	if (broken || !nruns)
		return n;

	/* Pair activation k (root first) with run k + shift. */
	int shift = 0;
	if (nruns > nev) {
		shift = (int)(nruns - nev);
		if (!native_truncated) {
			/* The thread went deeper after the sample: the extra runs are
			 * the innermost ones -- if the innermost sampled activation's
			 * code is found in the run it would pair with. */
			const struct resolved *in = &res[nev - 1];
			uint32_t r = nev - 1;
			bool found = false;
			for (uint32_t i = lo[r]; in->code && i <= hi[r] && !found; i++)
				found = py_code_base(py, fr[i].code) == in->code;
			if (!found)
				return n;
			/* drop frames of the extra runs: indices [0, lo[r]) */
			uint32_t drop = lo[r];
			memmove(fr, fr + drop, (size_t)(n - (int)drop) * sizeof *fr);
			n -= (int)drop;
			for (uint32_t q = 0; q < nev; q++) {
				lo[q] -= drop;
				hi[q] -= drop;
			}
			shift = 0;
			nruns = nev;
			have_addrs = false;   /* fr_addrs no longer lines up with fr */
			*flags |= EMBER_PY_CORRECTED;
		}
	} else if (nruns < nev) {
		/* The thread left activations: their frames are gone -- unless it
		 * is only the innermost one and it ran a single frame. */
		if (!restore_lost_leaf(py, ev, nev, res, have_addrs && nruns ? py->fr_addrs[lo[nruns - 1]] : 0, fr, &n,
				       max, nruns))
			return n;
		nruns = ember_python_runs(fr, (uint32_t)n, lo, hi, MAX_RUNS);
		have_addrs = false;
		*flags |= EMBER_PY_CORRECTED;
	}

	bool corrected = false, all = true;
	/* Root to leaf: removing frames of run r shifts only outer runs' indices. */
	for (uint32_t k = 0; k < nev; k++) {
		uint32_t r = k + (uint32_t)shift;
		if (r >= nruns)
			break;
		const struct resolved *rs = &res[k];
		if (!rs->code) {
			all = false;
			continue;
		}
		uint32_t in = lo[r];
		if (py_code_base(py, fr[in].code) == rs->code) {
			if (rs->lines)
				fr[in].line = rs->line;
			continue;
		}
		if (rs->guess) {   /* disagrees: not trusted enough to change the read */
			all = false;
			continue;
		}
		uint32_t j = in + 1;
		while (j <= hi[r] && py_code_base(py, fr[j].code) != rs->code)
			j++;
		if (j <= hi[r]) {
			/* went deeper inside the activation: drop the newer frames */
			uint32_t drop = j - in;
			have_addrs = false;
			memmove(&fr[in], &fr[j], (size_t)(n - (int)j) * sizeof *fr);
			n -= (int)drop;
			for (uint32_t q = 0; q < nruns; q++) {
				if (lo[q] > in)
					lo[q] -= drop;
				if (hi[q] >= j)
					hi[q] -= drop;
			}
			fr[in].line = rs->line;
		} else {
			/* returned and called something else: the sample's function,
			 * under the callers the read found.  From 3.11 on, only when
			 * the frame pointers show the same frame slot (a call that
			 * replaced the read's innermost one, as compress_step replaces
			 * decompress_step): the sample's code may as well be a callee
			 * of the read's innermost frame run in the same activation
			 * (`rng.choice` inside a generator expression), and the frames
			 * between them are unknown. */
			if (!one_per_activation) {
				uint64_t fs = frame_of(py, &ev[k]);
				uint64_t fread = have_addrs && in < PY_FRAME_ADDRS ? py->fr_addrs[in] : 0;
				if (!fs || fs != fread) {
					all = false;
					continue;
				}
			}
			if (!in_read(py, fr, n, rs->code) && !py_code_still_there(py, rs->code)) {
				all = false;
				continue;
			}
			fr[in].code = named_like_read(py, fr, n, rs->code);
			fr[in].line = rs->line;
		}
		corrected = true;
	}
	if (all)
		*flags |= EMBER_PY_CHECKED;
	if (corrected)
		*flags |= EMBER_PY_CORRECTED;
	py->st.checked += all;
	py->st.corrected += (*flags & EMBER_PY_CORRECTED) != 0;
	return n;
}
