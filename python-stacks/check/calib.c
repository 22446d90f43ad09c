/* What the native sample says an eval-loop activation ran (the sample
 * check's first half; evidence.c compares it with the read).
 *
 * Each activation keeps the instruction it runs in a register or a stack
 * slot: which one is up to the compiler (Debian's 3.11: r15; pyenv 3.12: a
 * slot 46 words below the frame's CFA).  Where the interpreter's DWARF
 * says so (eval_dwarf.c), that is used at every pc.  Elsewhere it is
 * learnt per call site: every read whose activations pair up with the
 * sample is a trial: each candidate word that points into the bytecode of
 * the read's running code object scores a code hit, and a line hit when it
 * also gives the read's line.  The candidate with most line hits wins once
 * it has enough of both (a word holding the first instruction scores code
 * hits but rarely line hits).  Reads that lag the sample only add noise to
 * the counts.  Which candidate holds the activation's frame is learnt the
 * same way, by exact match with the frame address the read found.
 *
 * An activation's candidate word is then looked up in the bytecode index
 * (code_index.c), which gives the code object and line running at the
 * sample.  A site with only a few trials whose one candidate agreed every
 * time is used provisionally: it may confirm a read, never change one. */
#include <stdlib.h>

#include "grow.h"
#include "hash.h"
#include "py_check.h"

#define CALIB_MIN_TRIALS 8
#define FRAME_MIN_TRIALS 3            /* frame holders match exactly: fewer trials */
#define PROVISIONAL_TRIALS 2         /* a site's candidate may confirm reads from here */
#define CALIB_DECAY_AT 256            /* halve the counts: later behaviour counts more */
#define CALIB_MAX_SITES 4096

void py_check_free(struct ember_python *py)
{
	free(py->chk->sites);
	if (py->chk->by_pc.slots)
		ember_idtab_free(&py->chk->by_pc);
	py->chk->sites = NULL;
	py->chk->nsites = py->chk->sites_cap = 0;
}

static bool pc_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct py_check *c = ctx;
	return c->sites[id].pc == *(const uint64_t *)key;
}

/* Each call site of the eval loop has its own register allocation, so the
 * holder of the instruction pointer is learnt per site (pc).  The pointer
 * is valid until the next site is added. */
static struct py_calib *calib_get(struct ember_python *py, uint64_t pc, bool create)
{
	struct py_check *c = py->chk;
	if (!pc || (!c->nsites && !create))
		return NULL;
	uint64_t h = ember_hash_mix(pc);
	if (c->nsites) {
		uint32_t i = ember_idtab_find(&c->by_pc, h, pc_eq, c, &pc);
		if (i != UINT32_MAX)
			return &c->sites[i];
	}
	if (!create || c->nsites >= CALIB_MAX_SITES)
		return NULL;
	if ((!c->by_pc.slots && ember_idtab_init(&c->by_pc) != 0) ||
	    EMBER_GROW(c->sites, c->sites_cap, c->nsites + 1) != 0 ||
	    ember_idtab_insert(&c->by_pc, h, (uint32_t)c->nsites) != 0)
		return NULL;
	struct py_calib *cb = &c->sites[c->nsites++];
	*cb = (struct py_calib){ .pc = pc, .cand = -1, .fcand = -1 };
	return cb;
}

/* Count one trial of site cb and pick its candidate.  Returns the change in
 * the number of sites with a candidate (-1, 0, +1). */
static int calib_trial(struct ember_python *py, struct py_calib *cb, const struct ember_py_evidence *ev,
		       uint32_t code, uint32_t line)
{
	const struct py_code_entry *c = py_code(py, code);
	uint64_t lo = c->bc_start, hi = c->bc_start + (uint64_t)c->ninstr_bytes;
	cb->trials++;
	for (uint32_t j = 0; j < ev->n && j < EMBER_PY_EVIDENCE_MAX; j++) {
		uint64_t v = ev->vals[j];
		if (v < lo || v > hi)   /* a "next instruction" may point just past the end */
			continue;
		cb->code_hits[j]++;
		if (py_bc_line(py, code, v) == (int)line)
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

void py_calib_update(struct ember_python *py, const struct ember_py_evidence *ev, const struct ember_py_frame *f,
		     uint64_t frame)
{
	bool dw_instr = py_eval_dwarf_cand(py, ev->pc, PY_EVAL_NEXT_INSTR) >= 0;
	bool want_frame = frame && py_eval_dwarf_cand(py, ev->pc, PY_EVAL_FRAME) < 0;
	if (want_frame && ev->leaf && py->rt.off.ts_frame >= 0)
		count_frame_hits(&py->chk->leaf_ftrials, py->chk->leaf_fhits, ev, frame);
	if (dw_instr && !want_frame)
		return;   /* known from DWARF: nothing to learn */
	struct py_calib *cb = calib_get(py, ev->pc, true);
	if (!cb)
		return;
	if (want_frame)
		frame_trial(cb, ev, frame);
	uint32_t code = py_code_base(py, f->code);
	const struct py_code_entry *c = py_code(py, code);
	if (!dw_instr && c->bc_start && c->ninstr_bytes > 0)
		py->chk->learnt += (uint64_t)(int64_t)calib_trial(py, cb, ev, code, f->line);
}

/* What candidate cand of ev names: code and line, or code 0. */
static struct py_resolved resolve_with(const struct ember_python *py, const struct ember_py_evidence *ev,
				       int32_t cand, bool lines, bool guess, const struct ember_py_frame *fr, int n)
{
	struct py_resolved r = { .guess = guess };
	if (cand < 0 || (uint32_t)cand >= ev->n)
		return r;
	uint64_t v = ev->vals[cand];
	uint32_t id = v ? py_bc_lookup(py, v, fr, n) : 0;
	if (!id)
		return r;
	r.code = id;
	r.line = (uint32_t)py_bc_line(py, id, v);
	r.lines = lines && !guess;
	return r;
}

struct py_resolved py_resolve(struct ember_python *py, const struct ember_py_evidence *ev,
			      const struct ember_py_frame *fr, int n)
{
	struct py_resolved r = { 0 };
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

uint64_t py_frame_of(struct ember_python *py, const struct ember_py_evidence *ev)
{
	const struct py_check *chk = py->chk;
	int c = py_eval_dwarf_cand(py, ev->pc, PY_EVAL_FRAME);
	if (c < 0) {
		const struct py_calib *cb = calib_get(py, ev->pc, false);
		c = cb ? cb->fcand : -1;
	}
	if (c < 0 && ev->leaf && py->rt.off.ts_frame >= 0 && chk->leaf_ftrials >= CALIB_MIN_TRIALS) {
		/* the pooled leaf holder, when it held the frame in most trials */
		uint32_t best = 0;
		for (uint32_t j = 1; j < EMBER_PY_EVIDENCE_MAX; j++)
			if (chk->leaf_fhits[j] > chk->leaf_fhits[best])
				best = j;
		if (chk->leaf_fhits[best] * 2 >= chk->leaf_ftrials)
			c = (int)best;
	}
	return c >= 0 && (uint32_t)c < ev->n ? ev->vals[c] : 0;
}
