/* Unwinding one sample: DWARF CFI with libunwind's remote API over the
 * sample's copy (unwind_space.c), and past frames that have no CFI.
 *
 * Hand-written assembly (BLAS kernels) and JIT code have no CFI.  libunwind
 * then guesses from the frame pointer, which such code does not keep; ember
 * discards that guess and finds the caller itself (scan_past): where the
 * function's prologue says its return address is, else by scanning the
 * copy for words that are return addresses (unwind_scan.c).  A candidate is
 * kept only when the walk from it ends well; the others are undone, so this
 * is a bounded search over candidates.  The frame whose caller was found so
 * is marked EMBER_FRAME_SCANNED.  docs/unwinding.md tells the whole method
 * and its limits. */
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "clock.h"
#include "grow.h"
#include "unwind_lock.h"
#include "unwind_scan.h"
#include "unwind_space.h"

/* Bounds of the search past frames without CFI: candidates tried per scan
 * by CFI alone, and of those that led to another frame without CFI, how
 * many are tried again with scans of their own; steps taken in candidates'
 * walks per sample; scans nested in one walk; callers right after a
 * candidate whose return addresses are checked (each after a call, and one
 * to a call that can have gone where the walk says). */
#define SCAN_TRIALS 12
#define SCAN_PROMISING 6
#define TRIAL_STEPS 4096
#define MAX_SCANS 64
#define CHECK_FRAMES 8
/* The bytes after a program's entry point that are its first frame's code
 * (x86-64 `_start` calls on within 30 bytes; the loader's at once). */
#define ENTRY_CODE_BYTES 64

/* What the unwinder keeps for one process. */
struct unwind_proc {
	unw_addr_space_t as;       /* NULL until its first sample */
	uint32_t unmap_gen;        /* the process's unmap_gen when as's cache was last valid */
	struct jit_code_cache jit_code;   /* the first bytes of its JIT functions (unwind_scan.h) */
};

/* ---- the walk ---- */

/* One sample's walk: the frames so far and where the cursor stands. */
struct walk {
	struct unwind_ctx ctx;
	const struct unwinder *u;
	struct unwind_proc *up;              /* the process's caches */
	unw_cursor_t *c;                     /* (outside the struct: 1 KB that needs no zeroing) */
	struct ember_frame_addr *out;
	uint32_t n, max;
	struct unwind_probes *probes;
	struct ember_frame_probe *pending;   /* probed frame awaiting its words (the next step's CFA) */
	uint64_t prev_sp;                    /* SP of the frame the cursor is at */
	bool prev_signal;                    /* that frame is a signal trampoline's */
	bool after_scan;                     /* a scan made the cursor: callee-saved registers no
	                                      * frame since has restored are guesses */
	bool no_cfi;                         /* the walk met a frame without CFI */
	uint32_t check_left;                 /* frames after a candidate still to check (CHECK_FRAMES) */
	uint32_t inconsistent;               /* ... whose call went, directly, elsewhere than the callee
	                                      * (a tail call, or a stale chain joining live frames) */
	uint64_t last_pc, callee_pc;         /* pc of the last frame added, and of the one before */
	uint32_t trial_steps;                /* steps taken in candidates' walks (bounded) */
	const uint64_t *regs;                /* the registers the cursor was last started from (the
	                                      * sample's, or those of the scan in progress) */
	uint32_t start_frame;                /* ... at this frame index */
	uint64_t leaf_restored[PERF_REGS_COUNT];   /* the leaf's caller's, started from (leaf_restored_regs) */
};

enum step_result {
	STEP_FRAME,        /* a caller frame was added */
	STEP_END,          /* the thread's root, as the CFI marks it */
	STEP_ZERO,         /* a return address of 0: an end, but one a stale chain can fake */
	STEP_TRUNCATED,    /* the walk needs stack above the copy */
	STEP_CAP,          /* the frame array is full */
	STEP_NO_CFI,       /* a frame without CFI, in a candidate's walk that may not scan */
	STEP_FAILED,       /* no CFI here, or it failed, or the walk went astray */
};

static inline void put_frame(const struct process *proc, uint64_t pc, struct ember_frame_addr *out)
{
	const struct module_load *ml = process_find(proc, pc);
	if (ml) {
		out->module = ml->mod->id;
		out->addr = pc - ml->bias;
	} else {
		out->module = EMBER_NO_MODULE;
		out->addr = pc;
	}
	out->flags = 0;
}

/* Probe registers in struct ember_frame_probe order, as libunwind numbers
 * them, and which of them calls preserve (probe_regs.h). */
static const uint8_t probe_regs[EMBER_PROBE_REGS] = EMBER_PROBE_DWARF_REGS;
static const bool callee_saved[EMBER_PROBE_REGS] = EMBER_PROBE_KEPT;

/* Registers of the frame the cursor is at.  The leaf's come straight from
 * the sample; a caller's callee-saved ones as the unwinder restored them.
 * Above a scan, a register no frame restored from its save slot still holds
 * what the code without CFI left in it: unknown (0), never a guess. */
static void probe_regs_read(struct walk *w, struct ember_frame_probe *p)
{
	for (int i = 0; i < EMBER_PROBE_REGS; i++) {
		unw_word_t v = 0;
		unw_save_loc_t loc;
		if (p->leaf)
			v = w->ctx.in->regs[unwind_dwarf_to_perf[probe_regs[i]]];
		else if (callee_saved[i] && unw_get_reg(w->c, probe_regs[i], &v) < 0)
			v = 0;
		else if (callee_saved[i] && w->after_scan &&
			 (unw_get_save_loc(w->c, probe_regs[i], &loc) < 0 || loc.type != UNW_SLT_MEMORY))
			v = 0;
		p->cand[i] = v;
	}
}

/* The top words of a frame's own stack region [sp, cfa), from the copy. */
static void probe_words_read(const struct unwind_input *in, uint64_t sp, uint64_t cfa, struct ember_frame_probe *p)
{
	uint64_t base = in->regs[EMBER_REG_SP];
	p->ncand = EMBER_PROBE_REGS;
	for (uint32_t k = 0; k < EMBER_PROBE_WORDS; k++) {
		uint64_t a = cfa - 8 * (uint64_t)(k + 1);
		if (a < sp || a < base || a - base + 8 > in->stack_len)
			break;
		memcpy(&p->cand[EMBER_PROBE_REGS + k], in->stack + (a - base), 8);
		p->ncand = EMBER_PROBE_REGS + k + 1;
	}
}

/* Append the frame the cursor is at (pc: inside the call for callers), and
 * its probe when the caller's probe function picks it. */
static inline void push_frame(struct walk *w, uint64_t pc, bool leaf)
{
	struct unwind_probes *pr = w->probes;
	uint32_t pid = (uint32_t)w->ctx.proc->pid;
	if (pr && pr->fn && pr->n < EMBER_MAX_PROBES && pr->fn(pr->arg, pid, pc)) {
		w->pending = &pr->out[pr->n++];
		*w->pending = (struct ember_frame_probe){ .frame = w->n, .pc = pc, .leaf = leaf,
							  .ncand = EMBER_PROBE_REGS };
		probe_regs_read(w, w->pending);
	}
	put_frame(w->ctx.proc, pc, &w->out[w->n++]);
	w->callee_pc = w->last_pc;
	w->last_pc = pc;
}

/* Start the cursor from regs (ip, sp and what else is known), standing at
 * frame index `frame`. */
static bool cursor_at(struct walk *w, const uint64_t *regs, uint32_t frame)
{
	w->regs = w->ctx.regs = regs;
	w->start_frame = frame;
	return unw_init_remote(w->c, w->up->as, &w->ctx) >= 0;
}

/* The leaf sampled in its epilogue, past the `pop` of a callee-saved
 * register but before its `ret`: GCC's x86-64 CFI keeps the register's
 * save rule there, so the rule points below SP, where the kernel copies
 * nothing, while the register itself already holds the caller's value
 * again.  (A frame-pointer caller's CFA is RBP-based: its step would fail,
 * as often as samples land on returns; 4-5% of the samples of an -O0
 * build.)  Then the cursor starts again at the caller, from the registers
 * the step restored and the leaf's own for those the rule put below SP.
 * False when the cursor could not be started again. */
static bool leaf_restored_regs(struct walk *w, uint64_t pc, uint64_t sp)
{
	static const unw_regnum_t saved[] = { UNWIND_KEPT_REGS };
	const uint64_t *leaf = w->ctx.in->regs;
	bool below[sizeof saved / sizeof saved[0]], any = false;
	for (size_t i = 0; i < sizeof saved / sizeof saved[0]; i++) {
		unw_save_loc_t loc;
		below[i] = unw_get_save_loc(w->c, saved[i], &loc) == 0 && loc.type == UNW_SLT_MEMORY &&
			   loc.u.addr < leaf[EMBER_REG_SP];
		any |= below[i];
	}
	if (!any)
		return true;
	uint64_t *regs = w->leaf_restored;
	memset(regs, 0, PERF_REGS_COUNT * sizeof *regs);
	for (size_t i = 0; i < sizeof saved / sizeof saved[0]; i++) {
		unw_word_t v = 0;
		if (below[i])
			v = leaf[unwind_dwarf_to_perf[saved[i]]];
		else if (unw_get_reg(w->c, saved[i], &v) < 0)
			v = 0;
		regs[unwind_dwarf_to_perf[saved[i]]] = v;
	}
	regs[EMBER_REG_PC] = pc - 1;       /* a caller: its CFI row is the call's */
	regs[EMBER_REG_SP] = sp;
	if (cursor_at(w, regs, 1))
		return true;
	(void)cursor_at(w, leaf, 0);   /* (for the scan: the walk stands at the leaf again) */
	return false;
}

/* One CFI step from the frame the cursor is at.  A frame without CFI ends
 * the step as failed before libunwind's frame-pointer guess is used. */
static enum step_result step(struct walk *w, uint64_t *ra_out)
{
	bool past = w->ctx.read_past_copy;
	w->ctx.noinfo = false;
	int rc = unw_step(w->c);
	if (w->ctx.noinfo) {
		w->ctx.read_past_copy = past;    /* (reads the guess made do not count) */
		return STEP_FAILED;
	}
	if (rc < 0)
		return w->ctx.read_past_copy ? STEP_TRUNCATED : STEP_FAILED;
	unw_word_t pc, sp;
	if (rc == 0) {
#if UNWIND_LINK_REG >= 0
		/* (libunwind's AArch64 step reports a return address of 0 read
		 * from memory as the end, as it does a return address the CFI
		 * leaves undefined; only the latter is the root) */
		unw_save_loc_t loc;
		if (unw_get_save_loc(w->c, UNWIND_LINK_UNW, &loc) == 0 && loc.type == UNW_SLT_MEMORY)
			return STEP_ZERO;
#endif
		return STEP_END;                 /* the CFI says: the thread's root */
	}
	if (unw_get_reg(w->c, UNW_REG_IP, &pc) < 0 || unw_get_reg(w->c, UNW_REG_SP, &sp) < 0 || pc == 0)
		return STEP_ZERO;
	if (unwind_strip_ra(pc, w->u->ra_mask) != pc) {
		/* A signed return address, as CFI restored it: the cursor goes on
		 * from the address itself.  (Setting the IP register updates
		 * libunwind's cached IP before it tries, and fails, to write the
		 * register's save location.) */
		pc = unwind_strip_ra(pc, w->u->ra_mask);
		(void)unw_set_reg(w->c, UNW_REG_IP, pc);
	}
	/* The stack grows down: a caller's SP below its callee's means the
	 * walk went astray. */
	if (sp < w->prev_sp)
		return STEP_FAILED;
	if (w->n == 1 && w->start_frame == 0 && !w->prev_signal && !leaf_restored_regs(w, pc, sp))
		return STEP_FAILED;
	if (w->pending) {
		probe_words_read(w->ctx.in, w->prev_sp, sp, w->pending);
		w->pending = NULL;
	}
	w->prev_sp = sp;
	/* Return addresses point after the call; pc - 1 lands inside it so the
	 * line and inline chain are the call site's.  A frame entered from a
	 * signal trampoline was interrupted: its PC is exact. */
	*ra_out = pc;
	push_frame(w, w->prev_signal ? pc : pc - 1, false);
	w->prev_signal = unw_is_signal_frame(w->c) > 0;
	return STEP_FRAME;
}

/* Walk again from the last start to frame `frame`, so that the cursor
 * stands where the failed step began (libunwind's failed step may have
 * moved it).  Cached CFI makes this cheap; it runs only before a scan. */
static bool replay_to(struct walk *w, uint32_t frame)
{
	if (!cursor_at(w, w->regs, w->start_frame))
		return false;
	for (uint32_t i = w->start_frame; i < frame; i++) {
		w->ctx.noinfo = false;
		if (unw_step(w->c) <= 0 || w->ctx.noinfo)
			return false;
	}
	return true;
}

/* The registers of frame `frame` for a cursor started past it: every one
 * at the leaf, the callee-saved ones and SP as the unwinder has them above. */
static bool frame_regs(struct walk *w, uint32_t frame, uint64_t *regs)
{
	if (frame == 0) {
		memcpy(regs, w->ctx.in->regs, PERF_REGS_COUNT * sizeof *regs);
		return true;
	}
	static const unw_regnum_t saved[] = { UNWIND_KEPT_REGS };
	memset(regs, 0, PERF_REGS_COUNT * sizeof *regs);
	for (size_t i = 0; i < sizeof saved / sizeof saved[0]; i++) {
		unw_word_t v;
		if (unw_get_reg(w->c, saved[i], &v) < 0)
			return false;
		regs[unwind_dwarf_to_perf[saved[i]]] = v;
	}
	return true;
}

static enum step_result walk_on(struct walk *w, uint32_t depth, bool nested);

/* Everything a candidate's walk may change, to put back when it fails. */
struct walk_mark {
	uint32_t n, nprobes, start_frame, inconsistent;
	struct ember_frame_probe *pending;
	uint64_t prev_sp, last_pc, callee_pc;
	bool prev_signal, after_scan, read_past_copy;
};

static void mark_take(const struct walk *w, struct walk_mark *m)
{
	*m = (struct walk_mark){ .n = w->n, .nprobes = w->probes ? w->probes->n : 0, .start_frame = w->start_frame,
				 .inconsistent = w->inconsistent, .pending = w->pending, .prev_sp = w->prev_sp,
				 .last_pc = w->last_pc, .callee_pc = w->callee_pc, .prev_signal = w->prev_signal,
				 .after_scan = w->after_scan, .read_past_copy = w->ctx.read_past_copy };
}

static void mark_restore(struct walk *w, const struct walk_mark *m)
{
	w->n = m->n;
	if (w->probes)
		w->probes->n = m->nprobes;
	w->pending = m->pending;
	w->inconsistent = m->inconsistent;
	w->prev_sp = m->prev_sp;
	w->last_pc = m->last_pc;
	w->callee_pc = m->callee_pc;
	w->prev_signal = m->prev_signal;
	w->after_scan = m->after_scan;
	w->ctx.read_past_copy = m->read_past_copy;
}

/* How a candidate's walk may end for the candidate to be kept: at the
 * thread's root, or out of room.  A good candidate may also end at the end
 * of the copy, unless a register says the frame being scanned past goes on
 * above the copy (then the caller is there).  A weak one must reach the
 * root: stale chains of finished calls run until they meet junk, the
 * copy's end included. */
static bool ends_well(enum step_result r, bool weak, bool reg_beyond)
{
	return r == STEP_END || r == STEP_CAP || (r == STEP_TRUNCATED && !weak && !reg_beyond);
}

/* What the scan may accept of a candidate. */
struct accept {
	bool weak;            /* a weak candidate: its walk must reach the root */
	bool reg_beyond;      /* a register points above the copy: no ending at the copy's end */
	bool strict;          /* no call in the checked frames that went elsewhere */
	bool nested;          /* its walk may scan again */
};

/* How a candidate that was not kept fared. */
enum tried {
	TRIED_BAD,         /* its walk failed, or ended where it may not */
	TRIED_LOOSE,       /* it ended well, through a call gone elsewhere (not strict) */
	TRIED_NO_CFI,      /* every checked caller was right, then came a frame without CFI */
};

/* Start at caller g as frame `frame`'s caller, and walk on from there.
 * Kept when that walk ends well; else the walk is put back as it was,
 * STEP_FAILED returned and *how says how it fared. */
static enum step_result try_candidate(struct walk *w, uint32_t frame, uint64_t *regs, const struct caller_guess *g,
				      const struct accept *a, uint32_t depth, enum tried *how)
{
	struct walk_mark m;
	mark_take(w, &m);
	uint64_t ra = g->ra;
	regs[EMBER_REG_PC] = ra - 1;       /* a caller: its CFI row is the call's */
	regs[EMBER_REG_SP] = g->sp;
#if UNWIND_FRAME_RECORDS
	uint64_t fp = regs[A64_REG_FP];
	if (g->fp_known)
		regs[A64_REG_FP] = g->fp;
#endif
	w->pending = NULL;
	w->prev_signal = false;
	w->prev_sp = g->sp;
	w->after_scan = true;
	if (how)
		*how = TRIED_BAD;
	if (cursor_at(w, regs, w->n)) {
		push_frame(w, ra - 1, false);
		w->check_left = CHECK_FRAMES;
		uint64_t t0 = depth ? 0 : ember_now_ns();
		enum step_result r = walk_on(w, depth + 1, a->nested);
		/* (a candidate that is itself the thread's root is a copy of the
		 * root's return address kept as data: no code without CFI is
		 * called from a root) */
		bool well = ends_well(r, a->weak, a->reg_beyond) && !(r == STEP_END && w->n == m.n + 1);
		if (how && well && a->strict && w->inconsistent != m.inconsistent)
			*how = TRIED_LOOSE;
		else if (how && r == STEP_NO_CFI && w->inconsistent == m.inconsistent)
			*how = TRIED_NO_CFI;
		if (well && (!a->strict || w->inconsistent == m.inconsistent)) {
			/* (the walk from a kept candidate is the unwinding a stack
			 * with CFI would have cost: not the scan's) */
			if (!depth)
				w->ctx.proc_scan_ns -= ember_now_ns() - t0;
			w->out[frame].flags |= EMBER_FRAME_SCANNED;
			if (m.pending)
				probe_words_read(w->ctx.in, m.prev_sp, g->sp, m.pending);
			return r;
		}
	}
	mark_restore(w, &m);
#if UNWIND_FRAME_RECORDS
	regs[A64_REG_FP] = fp;
#endif
	return STEP_FAILED;
}

/* The caller if the word in slot is its return address. */
static bool slot_guess(const struct walk *w, uint64_t slot, struct caller_guess *g)
{
	uint64_t word;
	if (!unwind_copy_word(w->ctx.in, slot, &word))
		return false;
	g->ra = unwind_strip_ra(word, w->u->ra_mask);
	unwind_slot_caller(w->ctx.in, slot, g);
	return true;
}

/* A candidate found by the scan in slot: try_candidate with the caller's SP
 * right above the slot, and where a frame record may sit below more of the
 * callee's frame (AArch64), with that SP UNWIND_SP_STEP higher each time, up
 * to UNWIND_SP_TRIES: a caller whose CFA is SP-based unwinds right only
 * from its own SP, which the next callers' return addresses then check.
 * *how: the best of the tries. */
static enum step_result try_slot(struct walk *w, uint32_t frame, uint64_t *regs, struct caller_guess *g,
				 const struct accept *a, uint32_t depth, enum tried *how)
{
	enum tried best = TRIED_BAD, one;
	uint64_t sp0 = g->sp;
	for (uint32_t k = 0; k < UNWIND_SP_TRIES; k++) {
		g->sp = sp0 + k * UNWIND_SP_STEP;
		enum step_result r = try_candidate(w, frame, regs, g, a, depth, how ? &one : NULL);
		if (r != STEP_FAILED)
			return r;
		if (how && one != TRIED_BAD && best == TRIED_BAD)
			best = one;
	}
	if (how)
		*how = best;
	return STEP_FAILED;
}

/* The first guesses at frame `frame`'s caller, before any scan: where the
 * function's prologue says its return address is; and for the sampled
 * frame on a machine with a link register, that register with the stack
 * pointer unmoved (a leaf that keeps no frame, JIT code among them). */
static enum step_result try_prologue(struct walk *w, uint32_t frame, uint64_t *regs, uint64_t callee_pc,
				     uint32_t depth)
{
	struct accept a = { .nested = true };
	struct caller_guess g;
	enum step_result r = STEP_FAILED;
	if (unwind_prologue_caller(w->u, &w->up->jit_code, w->ctx.proc, w->ctx.in,
				   frame == 0 ? callee_pc : callee_pc + 1, regs, &g) &&
	    unwind_candidate(w->ctx.proc, g.ra, callee_pc) != CAND_NONE)
		r = try_candidate(w, frame, regs, &g, &a, depth, NULL);
#if UNWIND_LINK_REG >= 0
	if (r != STEP_FAILED || frame != 0)
		return r;
	g = (struct caller_guess){ .ra = unwind_strip_ra(regs[UNWIND_LINK_REG], w->u->ra_mask),
				   .sp = regs[EMBER_REG_SP] };
	if (unwind_candidate(w->ctx.proc, g.ra, callee_pc) != CAND_NONE)
		r = try_candidate(w, frame, regs, &g, &a, depth, NULL);
#endif
	return r;
}

/* Frame `frame` has no CFI, or its CFI failed: find its caller by scanning
 * the copy above its SP for a return address the walk goes on from.  First
 * where the function's prologue puts it; then good candidates, nearest
 * first, and weak ones after them, each walked by CFI alone (a caller found
 * by CFI alone is the better explanation: a stale chain can reach the root
 * through a scan of its own); then, of those whose walk led to another
 * frame without CFI through callers that all checked out, the nearest again
 * with scans of their own.  Returns how the walk from the kept candidate
 * ended, or STEP_FAILED with the walk standing at `frame`. */
static enum step_result scan_past(struct walk *w, uint32_t frame, uint32_t depth)
{
	uint64_t regs[PERF_REGS_COUNT], slots[SCAN_WORDS + ANCHOR_REGS * ANCHOR_WORDS];
	if (!replay_to(w, frame) || !frame_regs(w, frame, regs))
		return STEP_FAILED;
	uint64_t sp = regs[EMBER_REG_SP], callee_pc = w->regs[EMBER_REG_PC];
	unw_word_t pc;
	if (frame != w->start_frame && unw_get_reg(w->c, UNW_REG_IP, &pc) == 0)
		callee_pc = pc - 1;
	/* Nothing found, with the frame going on past the end of the copy:
	 * the caller is above what was copied. */
	bool beyond, reg_beyond;
	size_t nslots = unwind_scan_slots(w->ctx.in, sp, regs, slots, sizeof slots / sizeof slots[0], &reg_beyond,
					  &beyond);
	struct accept a = { .nested = true };
	enum step_result r = try_prologue(w, frame, regs, callee_pc, depth);
	if (r != STEP_FAILED)
		return r;
	struct caller_guess g;
	/* Most words are no code address at all (data, doubles above 2^47):
	 * outside the span of the process's mappings they cost one compare. */
	const struct process *proc = w->ctx.proc;
	uint64_t span_lo = proc->nloads ? proc->loads[0].lo : 0;
	uint64_t span = proc->nloads ? proc->loads[proc->nloads - 1].hi - span_lo : 0;
	size_t promising[2][SCAN_PROMISING], npromising[2] = { 0, 0 };
	uint32_t tried = 0;
	for (int weak = 0; weak < 2; weak++) {
		a = (struct accept){ .weak = weak, .reg_beyond = reg_beyond, .strict = true };
		size_t fallback = SIZE_MAX;   /* the first that ended well, but through a call gone elsewhere */
		for (size_t i = 0; i < nslots && tried < SCAN_TRIALS; i++) {
			enum tried how;
			if (!slot_guess(w, slots[i], &g) || g.ra - span_lo >= span ||
			    unwind_candidate(w->ctx.proc, g.ra, callee_pc) != (weak ? CAND_WEAK : CAND_GOOD))
				continue;
			tried++;
			r = try_slot(w, frame, regs, &g, &a, depth, &how);
			if (r != STEP_FAILED)
				return r;
			if (how == TRIED_LOOSE && fallback == SIZE_MAX)
				fallback = i;
			if (how == TRIED_NO_CFI && npromising[weak] < SCAN_PROMISING)
				promising[weak][npromising[weak]++] = i;
		}
		/* None without: a tail call it is. */
		a.strict = false;
		r = fallback != SIZE_MAX && slot_guess(w, slots[fallback], &g) ?
			    try_slot(w, frame, regs, &g, &a, depth, NULL) : STEP_FAILED;
		if (r != STEP_FAILED)
			return r;
	}
	for (int weak = 0; weak < 2 && depth + 1 < MAX_SCANS; weak++) {
		a = (struct accept){ .weak = weak, .reg_beyond = reg_beyond, .nested = true };
		for (size_t k = 0; k < npromising[weak]; k++) {
			if (!slot_guess(w, slots[promising[weak][k]], &g))
				continue;
			r = try_slot(w, frame, regs, &g, &a, depth, NULL);
			if (r != STEP_FAILED)
				return r;
		}
	}
	w->n = frame + 1;
	return beyond ? STEP_TRUNCATED : STEP_FAILED;
}

/* The frame the walk stands at is a program's entry code (`_start`, the
 * dynamic loader's among them, which has no CFI in some glibc builds): the
 * process's first frame, so the root, whatever its CFI says. */
static bool at_entry(const struct walk *w)
{
	const struct module_load *ml = process_find(w->ctx.proc, w->last_pc);
	if (!ml || !ml->mod->elf_ok || !ml->mod->elf.entry)
		return false;
	uint64_t vaddr = w->last_pc - ml->bias;
	return vaddr >= ml->mod->elf.entry && vaddr < ml->mod->elf.entry + ENTRY_CODE_BYTES;
}

/* Walk on from where the cursor stands to the stack's end; past a frame
 * without CFI by a scan.  depth: scans this walk is nested in; nested: a
 * candidate's walk may scan again. */
static enum step_result walk_on(struct walk *w, uint32_t depth, bool nested)
{
	for (;;) {
		if (w->n >= w->max)
			return STEP_CAP;
		if (depth) {
			w->trial_steps++;
			if (w->trial_steps > TRIAL_STEPS)
				return STEP_FAILED;
		}
		uint64_t ra;
		uint32_t at = w->n - 1;
		bool signal = w->prev_signal;
		enum step_result r = step(w, &ra);
		if (r == STEP_FRAME) {
			/* Right after a candidate: each caller's return address after
			 * a call (JIT code cannot be read), and one that can have gone
			 * to its callee. */
			bool check = w->check_left > 0 && !signal;
			if (w->check_left > 0)
				w->check_left--;
			if (check) {
				const struct module_load *ml = process_find(w->ctx.proc, ra);
				enum candidate c = ml && ml->mod->jit_pid ? CAND_GOOD : unwind_candidate(w->ctx.proc, ra, w->callee_pc);
				if (c == CAND_NONE)
					return STEP_FAILED;
				w->inconsistent += c == CAND_WEAK;
			}
			continue;
		}
		w->check_left = 0;
		if (r != STEP_FAILED)
			return r == STEP_ZERO && depth ? STEP_FAILED : r;   /* (a 0 is no end a stale chain may claim) */
		if (at_entry(w))
			return STEP_END;
		if (!depth)
			w->no_cfi = true;
		if (depth && !nested)
			return STEP_NO_CFI;
		if (depth >= MAX_SCANS)
			return STEP_FAILED;
		uint64_t t0 = depth ? 0 : ember_now_ns();
		r = scan_past(w, at, depth);
		if (!depth) {
			w->ctx.proc_scan_ns += ember_now_ns() - t0;   /* (may have gone below 0 meanwhile) */
			w->ctx.proc_scans++;
		}
		return r;
	}
}

/* ---- per-process caches ---- */

void unwinder_init(struct unwinder *u)
{
	*u = (struct unwinder){ .ra_mask = unwind_ra_mask() };
}

uint64_t unwind_ra_mask(void)
{
#if defined(__aarch64__)
	/* Linux gives user space 48-bit addresses unless a program asks for
	 * more: the signature sits in the bits above. */
	if (getauxval(AT_HWCAP) & HWCAP_PACA)
		return (1ull << 48) - 1;
#endif
	return UINT64_MAX;
}

void unwinder_free(struct unwinder *u)
{
	for (size_t i = 0; i < u->procs_cap; i++) {
		if (u->procs[i].as)
			unw_destroy_addr_space(u->procs[i].as);
		unwind_jit_code_free(&u->procs[i].jit_code);
	}
	free(u->procs);
	*u = (struct unwinder){ 0 };
}

/* proc's caches, made on first use, and emptied when code proc had mapped
 * is gone (a replaced load, an exec).  JIT code entries check their own
 * load (jit_code in unwind_scan.c).  NULL on OOM. */
static struct unwind_proc *proc_caches(struct unwinder *u, const struct process *proc)
{
	size_t cap = u->procs_cap;
	if (proc->index >= cap) {
		if (EMBER_GROW(u->procs, u->procs_cap, (size_t)proc->index + 1) != 0)
			return NULL;
		memset(u->procs + cap, 0, (u->procs_cap - cap) * sizeof *u->procs);
	}
	struct unwind_proc *up = &u->procs[proc->index];
	if (!up->as) {
		if (!(up->as = unwind_space_new()))
			return NULL;
		up->unmap_gen = proc->unmap_gen;
	} else if (up->unmap_gen != proc->unmap_gen) {
		/* (libunwind's cache is one per address space: it goes whole) */
		unw_flush_cache(up->as, 0, UINT64_MAX);
		up->unmap_gen = proc->unmap_gen;
	}
	return up;
}

/* ---- one sample ---- */

uint32_t unwind_sample(struct unwinder *u, const struct process *proc, const struct unwind_input *in,
		       struct ember_frame_addr *out, uint32_t max, uint32_t *flags, struct unwind_probes *probes)
{
	uint64_t ip = in->regs[EMBER_REG_PC];
	if (probes)
		probes->n = 0;
	struct unwind_proc *up = proc_caches(u, proc);
	if (!up || max == 0)
		return 0;

	unw_cursor_t cursor;
	struct walk w = { .ctx = { .proc = proc, .in = in }, .u = u, .up = up, .c = &cursor, .out = out, .max = max,
			  .probes = probes, .prev_sp = in->regs[EMBER_REG_SP] };
	unwind_lock_enter();
	if (!cursor_at(&w, in->regs, 0)) {
		unwind_lock_leave();
		put_frame(proc, ip, &out[0]);
		*flags |= EMBER_SAMPLE_UNWIND_ERROR;
		return 1;
	}
	push_frame(&w, ip, true);
	w.prev_signal = unw_is_signal_frame(w.c) > 0;
	enum step_result r = walk_on(&w, 0, true);
	unwind_lock_leave();
	u->scans += w.ctx.proc_scans;
	u->scan_ns += w.ctx.proc_scan_ns;
	if (w.no_cfi)
		*flags |= EMBER_SAMPLE_NO_CFI | (r != STEP_FAILED ? EMBER_SAMPLE_SCANNED : 0);
	if (r == STEP_FAILED)
		*flags |= EMBER_SAMPLE_UNWIND_ERROR;
	if (r == STEP_TRUNCATED || w.ctx.read_past_copy)
		*flags |= EMBER_SAMPLE_TRUNCATED;
	if (r == STEP_CAP)
		*flags |= EMBER_SAMPLE_TRUNCATED | EMBER_SAMPLE_FRAME_CAP;
	return w.n;
}
