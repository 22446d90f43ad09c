/* The stack scan's view of single words and single functions: is a word a
 * return address (and to a call that can have gone to the frame being
 * scanned past), which words to look at, and where a function's prologue
 * says its return address is (docs/unwinding.md).  The walk that tries the
 * candidates is unwind.c's. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "arch_insn.h"
#include "hash.h"
#include "unwind_scan.h"
#include "unwind_space.h"

/* Is ra a return address, to a call that can have gone to callee_pc?
 * Tells a return address from any other pointer into code a stack holds
 * (function pointers, data), and ranks last the stale return addresses of
 * finished calls, whose direct targets are other functions. */
enum candidate unwind_candidate(const struct process *proc, uint64_t ra, uint64_t callee_pc)
{
	const struct module_load *ml = process_find(proc, ra);
	if (!ml || !ml->mod->elf_ok)
		return CAND_NONE;
	const struct ember_elf *elf = &ml->mod->elf;
	uint64_t v = ra - ml->bias;
	if (v <= elf->exec_lo || v > elf->exec_hi)
		return CAND_NONE;
	size_t n = v - elf->exec_lo < CALL_INSN_MAX ? (size_t)(v - elf->exec_lo) : CALL_INSN_MAX;
	uint8_t b[CALL_INSN_MAX];
	uint64_t target = 0, next;
	if (!ember_elf_read(elf, v - n, b, n))
		return CAND_NONE;
	enum call_kind k = ARCH_CALL_BEFORE(b, n, ra, &target);
	if (k != CALL_DIRECT)
		return k == CALL_INDIRECT ? CAND_GOOD : CAND_NONE;
	/* A direct call: weak when its target begins a function with CFI
	 * that does not hold the callee (a PLT stub tells nothing). */
	const struct module_load *tl = process_find(proc, target);
	if (!tl || !tl->mod->elf_ok || !ember_elf_fde_start(&tl->mod->elf, target - tl->bias, &next))
		return CAND_GOOD;
	if (callee_pc >= target && callee_pc - tl->bias < next)
		return CAND_GOOD;
	if (ember_elf_read(&tl->mod->elf, target - tl->bias, b, CALL_INSN_MAX) && ARCH_PLT_STUB(b, CALL_INSN_MAX))
		return CAND_GOOD;
	return CAND_WEAK;
}

struct window {
	uint64_t lo, hi;
};

static int cmp_window(const void *a, const void *b)
{
	const struct window *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

size_t unwind_scan_slots(const struct unwind_input *in, uint64_t sp, const uint64_t *regs, uint64_t *slot,
			 size_t max, bool *reg_beyond, bool *beyond)
{
	static const int anchors[ANCHOR_REGS] = { UNWIND_ANCHORS };
	uint64_t top = in->regs[EMBER_REG_SP] + (in->stack_len & ~7ull);
	bool full = in->stack_len >= in->stack_reserved;
	struct window win[1 + ANCHOR_REGS];
	size_t nw = 0, n = 0;
	win[nw++] = (struct window){ sp & ~7ull, (sp & ~7ull) + SCAN_WORDS * 8 };
	*reg_beyond = false;
	for (size_t i = 0; i < ANCHOR_REGS; i++) {
		uint64_t r = regs[anchors[i]] & ~7ull;
		if (r >= win[0].hi && r < top)
			win[nw++] = (struct window){ r, r + ANCHOR_WORDS * 8 };
		*reg_beyond |= full && r >= top && r - top < PAST_COPY_SLACK;
	}
	*beyond = *reg_beyond;
	qsort(win + 1, nw - 1, sizeof *win, cmp_window);
	uint64_t a = win[0].lo;
	for (size_t i = 0; i < nw && n < max; i++) {
		if (a < win[i].lo)
			a = win[i].lo;
		for (; a < win[i].hi && a < top && n < max; a += 8)
			slot[n++] = a;
	}
	if (full && n && slot[n - 1] + 8 >= top)
		*beyond = true;
	return n;
}

/* The first bytes of a JIT function, read from the target once (its
 * prologue tells where its return address is; samples unwound after the
 * process exited can no longer read it).  A small set-associative cache,
 * not a map: its size is bounded, and a miss costs one read. */
#define JIT_CODE_SET_BITS 5
#define JIT_CODE_SETS (1u << JIT_CODE_SET_BITS)
#define JIT_CODE_WAYS 4
#define JIT_CODE_BYTES 256
struct jit_code {
	uint64_t start;            /* 0: empty */
	uint64_t serial;           /* module_load.serial of the load holding start when read */
	uint32_t len;
	uint8_t bytes[JIT_CODE_BYTES];
};

void unwind_jit_code_free(struct jit_code_cache *jc)
{
	free(jc->sets);
}

/* The first bytes of the JIT function at start, read from the target once
 * (JIT code cannot be read from a file).  An entry stands while the load
 * that held start when it was read still does: code mapped over it is
 * another load (process_model.h).  pc_load: the load of a pc at or after
 * start, which usually holds start too. */
static const uint8_t *jit_code(struct jit_code_cache *jcc, const struct process *proc,
			       const struct module_load *pc_load, uint64_t start, size_t *len)
{
	if (!jcc->sets && !(jcc->sets = calloc(JIT_CODE_SETS * JIT_CODE_WAYS, sizeof *jcc->sets)))
		return NULL;
	const struct module_load *ml = start >= pc_load->lo ? pc_load : process_find(proc, start);
	uint64_t serial = ml ? ml->serial : 0;
	/* (JIT functions are small and packed: hash the whole address) */
	struct jit_code *set = &jcc->sets[((start * EMBER_HASH_GOLDEN) >> (64 - JIT_CODE_SET_BITS)) * JIT_CODE_WAYS];
	for (int i = 0; i < JIT_CODE_WAYS; i++)
		if (set[i].start == start && set[i].serial == serial) {
			*len = set[i].len;
			return set[i].bytes;
		}
	struct jit_code *jc = &set[jcc->next++ % JIT_CODE_WAYS];
	struct iovec local = { jc->bytes, JIT_CODE_BYTES }, remote = { (void *)(uintptr_t)start, JIT_CODE_BYTES };
	ssize_t got = process_vm_readv(proc->pid, &local, 1, &remote, 1, 0);
	jc->start = got > 0 ? start : 0;
	jc->serial = serial;
	jc->len = got > 0 ? (uint32_t)got : 0;
	*len = jc->len;
	return jc->start ? jc->bytes : NULL;
}

bool unwind_prologue_caller(const struct unwinder *u, struct jit_code_cache *jc, const struct process *proc,
			    const struct unwind_input *in, uint64_t pc, const uint64_t *regs,
			    struct caller_guess *g)
{
	const struct module_load *ml = process_find(proc, pc);
	uint64_t start;
	struct prologue pro;
	uint8_t buf[JIT_CODE_BYTES];
	const uint8_t *code = buf;
	size_t n = 0;
	if (!ml) {
		return false;
	} else if (ml->mod->jit_pid) {
		if (!u->jit_start || !u->jit_start(u->jit_start_arg, (uint32_t)proc->pid, pc, &start) || pc < start ||
		    !(code = jit_code(jc, proc, ml, start, &n)))
			return false;
		n = pc - start < n ? (size_t)(pc - start) : n;
	} else {
		uint64_t v = pc - ml->bias;
		if (!ml->mod->elf_ok || !ember_elf_func_start(&ml->mod->elf, v, &start))
			return false;
		n = v - start < sizeof buf ? (size_t)(v - start) : sizeof buf;
		if (!ember_elf_read(&ml->mod->elf, start, buf, n))
			return false;
	}
	if (!ARCH_PROLOGUE(code, n, &pro))
		return false;
	/* (offsets from SP, or from the anchor register once SP is unknown) */
	uint64_t base = pro.sp_known ? regs[EMBER_REG_SP] : regs[pro.anchor];
	*g = (struct caller_guess){ 0 };
	if (pro.ra_in_lr) {
#if UNWIND_LINK_REG >= 0
		g->ra = regs[UNWIND_LINK_REG];
#endif
	} else if (!unwind_copy_word(in, base + (pro.sp_known ? pro.sp_off : pro.anchor_off), &g->ra)) {
		return false;
	}
	g->ra = unwind_strip_ra(g->ra, u->ra_mask);
	g->sp = base + pro.entry_off;
	g->fp_known = pro.fp_saved && unwind_copy_word(in, base + pro.fp_off, &g->fp);
	return g->ra != 0;
}

void unwind_slot_caller(const struct unwind_input *in, uint64_t slot, struct caller_guess *g)
{
	g->sp = slot + 8;
	g->fp_known = false;
#if UNWIND_FRAME_RECORDS
	uint64_t fp;
	if (unwind_copy_word(in, slot - 8, &fp) && fp > slot && fp - in->regs[EMBER_REG_SP] < in->stack_len) {
		g->fp_known = true;
		g->fp = fp;
	}
#else
	(void)in;
#endif
}
