/* DWARF CFI unwinding of one sample with libunwind's remote API.
 *
 * Memory comes from two places only (never the live target, whose stack has
 * moved on): the stack copy the kernel took at the sample, and the ELF files
 * of the loaded modules (for .eh_frame_hdr, .eh_frame and the rare CFI
 * expression that loads from the image).  One libunwind address space per
 * process with the global cache on, so caller frames hit the cache. */
#include <libunwind.h>
#include <stdlib.h>
#include <string.h>

#include "sampler_internal.h"

/* Exported by libunwind-x86_64 but not declared in its headers (perf
 * declares it the same way). */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
					       unw_proc_info_t *pi, int need_unwind_info, void *arg);

struct unwind_space {
	unw_addr_space_t as;
};

/* Per-sample state handed to every accessor through libunwind's `arg`. */
struct unwind_ctx {
	struct process_model *pm;
	struct process *proc;
	const struct unwind_input *in;
	bool read_past_copy;       /* a stack read fell above a full copy */
};

/* libunwind register number -> index in the perf sample's regs[]
 * (mask 0xff0fff: AX BX CX DX SI DI BP SP IP FLAGS CS SS R8..R15). */
static const int8_t dwarf_to_perf[17] = {
	[UNW_X86_64_RAX] = 0, [UNW_X86_64_RDX] = 3, [UNW_X86_64_RCX] = 2, [UNW_X86_64_RBX] = 1,
	[UNW_X86_64_RSI] = 4, [UNW_X86_64_RDI] = 5, [UNW_X86_64_RBP] = 6, [UNW_X86_64_RSP] = 7,
	[UNW_X86_64_R8] = 12, [UNW_X86_64_R9] = 13, [UNW_X86_64_R10] = 14, [UNW_X86_64_R11] = 15,
	[UNW_X86_64_R12] = 16, [UNW_X86_64_R13] = 17, [UNW_X86_64_R14] = 18, [UNW_X86_64_R15] = 19,
	[UNW_X86_64_RIP] = 8,
};

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	struct unwind_ctx *ctx = arg;
	const struct module_load *ml = process_find(ctx->proc, ip);
	if (!ml || !ml->mod->img_ok || !ml->mod->img.eh_frame_hdr)
		return -UNW_ENOINFO;
	const struct elf_image *img = &ml->mod->img;
	unw_dyn_info_t di = {
		.format = UNW_INFO_FORMAT_REMOTE_TABLE,
		.start_ip = ml->bias + img->exec_lo,
		.end_ip = ml->bias + img->exec_hi,
		.u.rti = {
			.segbase = ml->bias + img->eh_frame_hdr,
			.table_data = ml->bias + img->eh_frame_hdr + 12,
			.table_len = img->fde_count * 8 / sizeof(unw_word_t),
		},
	};
	return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need_unwind_info, arg);
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as, (void)pi, (void)arg;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	(void)as, (void)dilap, (void)arg;
	return -UNW_ENOINFO;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write, void *arg)
{
	(void)as;
	struct unwind_ctx *ctx = arg;
	const struct unwind_input *in = ctx->in;
	if (write)
		return -UNW_EINVAL;
	uint64_t sp = in->regs[PERF_REG_SP];
	if (addr >= sp && addr - sp < in->stack_len && in->stack_len - (addr - sp) >= sizeof *valp) {
		memcpy(valp, in->stack + (addr - sp), sizeof *valp);
		return 0;
	}
	const struct module_load *ml = process_find(ctx->proc, addr);
	if (ml && ml->mod->img_ok && elf_image_read(&ml->mod->img, addr - ml->bias, valp, sizeof *valp))
		return 0;
	/* A read just above a copy that filled its whole reservation: the stack
	 * goes on, we simply did not copy it. */
	if (addr >= sp + in->stack_len && in->stack_len >= in->stack_reserved &&
	    addr - sp < in->stack_len + (1u << 20))
		ctx->read_past_copy = true;
	return -UNW_EINVAL;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *valp, int write, void *arg)
{
	(void)as;
	struct unwind_ctx *ctx = arg;
	if (write || reg < 0 || reg > UNW_X86_64_RIP)
		return -UNW_EBADREG;
	*valp = ctx->in->regs[dwarf_to_perf[reg]];
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg)
{
	(void)as, (void)reg, (void)val, (void)write, (void)arg;
	return -UNW_EINVAL;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as, (void)c, (void)arg;
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
			 unw_word_t *offp, void *arg)
{
	(void)as, (void)addr, (void)buf, (void)len, (void)offp, (void)arg;
	return -UNW_ENOINFO;   /* names come from the symbolizer, later */
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

struct unwind_space *unwind_space_new(void)
{
	struct unwind_space *us = calloc(1, sizeof *us);
	if (!us)
		return NULL;
	us->as = unw_create_addr_space(&accessors, 0);
	if (!us->as) {
		free(us);
		return NULL;
	}
	unw_set_caching_policy(us->as, UNW_CACHE_GLOBAL);
	return us;
}

void unwind_space_free(struct unwind_space *us)
{
	if (!us)
		return;
	unw_destroy_addr_space(us->as);
	free(us);
}

void unwind_space_flush(struct unwind_space *us, uint64_t lo, uint64_t hi)
{
	unw_flush_cache(us->as, lo, hi);
}

static void put_frame(const struct process *proc, uint64_t pc, struct ember_frame_addr *out)
{
	const struct module_load *ml = process_find(proc, pc);
	if (ml) {
		out->module = ml->mod->id;
		out->addr = pc - ml->bias;
	} else {
		out->module = EMBER_NO_MODULE;
		out->addr = pc;
	}
}

/* Probe registers in struct ember_frame_probe order, as libunwind numbers. */
static const unw_regnum_t probe_regs[EMBER_PROBE_REGS] = {
	UNW_X86_64_RAX, UNW_X86_64_RBX, UNW_X86_64_RCX, UNW_X86_64_RDX, UNW_X86_64_RSI, UNW_X86_64_RDI,
	UNW_X86_64_RBP, UNW_X86_64_R8, UNW_X86_64_R9, UNW_X86_64_R10, UNW_X86_64_R11, UNW_X86_64_R12,
	UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15,
};
static const bool callee_saved[EMBER_PROBE_REGS] = {
	[1] = true, [6] = true, [11] = true, [12] = true, [13] = true, [14] = true,
};

/* Registers of the frame the cursor is at.  The leaf's come straight from
 * the sample; a caller's callee-saved ones as the unwinder restored them. */
static void probe_regs_read(unw_cursor_t *c, const struct unwind_input *in, struct ember_frame_probe *p)
{
	for (int i = 0; i < EMBER_PROBE_REGS; i++) {
		unw_word_t v = 0;
		if (p->leaf)
			v = in->regs[dwarf_to_perf[probe_regs[i]]];
		else if (callee_saved[i] && unw_get_reg(c, probe_regs[i], &v) < 0)
			v = 0;
		p->cand[i] = v;
	}
}

/* The top words of a frame's own stack region [sp, cfa), from the copy. */
static void probe_words_read(const struct unwind_input *in, uint64_t sp, uint64_t cfa, struct ember_frame_probe *p)
{
	uint64_t base = in->regs[PERF_REG_SP];
	p->ncand = EMBER_PROBE_REGS;
	for (uint32_t k = 0; k < EMBER_PROBE_WORDS; k++) {
		uint64_t a = cfa - 8 * (uint64_t)(k + 1);
		if (a < sp || a < base || a - base + 8 > in->stack_len)
			break;
		memcpy(&p->cand[EMBER_PROBE_REGS + k], in->stack + (a - base), 8);
		p->ncand = EMBER_PROBE_REGS + k + 1;
	}
}

/* Does the byte run before ra end with a call instruction (call rel32;
 * call through a register or memory operand, with or without displacement)?
 * Tells a return address from any other code pointer left on the stack. */
static bool after_call(const struct process *proc, uint64_t ra)
{
	const struct module_load *ml = process_find(proc, ra);
	uint8_t b[8];
	if (!ml || !ml->mod->img_ok || ra < 8 || !elf_image_read(&ml->mod->img, ra - 8 - ml->bias, b, sizeof b))
		return false;
	if (b[3] == 0xe8)                                   /* e8 rel32 */
		return true;
	for (int len = 2; len <= 7; len++) {                /* ff /2 modrm [sib] [disp] */
		const uint8_t *op = &b[8 - len];
		if (op[0] == 0xff && (op[1] & 0x38) == 0x10)
			return true;
	}
	return false;
}

/* A leaf without CFI, caught at its first instruction or in a stub that has
 * not touched the stack: a library's `.init` (crti.o carries no CFI) as the
 * dynamic loader enters it (often: the first touch faults its page in), a
 * PLT entry without CFI.  The return address is then at [SP].  libunwind's
 * frame-pointer fallback ends the walk there, or after one bogus frame,
 * leaving the sample without its callers (during an import: without its
 * Python frames). */
static bool entry_return_address(struct unwind_ctx *ctx, uint64_t ip, uint64_t *ra)
{
	const struct unwind_input *in = ctx->in;
	unw_proc_info_t pi;
	if (in->stack_len < 8 || find_proc_info(ctx->proc->unwind->as, ip, &pi, 0, ctx) == 0)
		return false;   /* it has CFI: libunwind's answer stands */
	memcpy(ra, in->stack, 8);
	return after_call(ctx->proc, *ra);
}

uint32_t unwind_sample(struct process_model *pm, struct process *proc, const struct unwind_input *in,
		       struct ember_frame_addr *out, uint32_t max, uint32_t *flags, struct unwind_probes *probes)
{
	uint64_t ip = in->regs[PERF_REG_IP];
	if (probes)
		probes->n = 0;
	/* A PC in no known module: its MMAP2 may still sit in another CPU's
	 * ring (dlopen), so look at /proc/PID/maps once before giving up. */
	if (!process_find(proc, ip) && !proc->exited)
		process_load_proc_maps(pm, proc, false);
	if (!proc->unwind || max == 0)
		return 0;

	struct unwind_ctx ctx = { .pm = pm, .proc = proc, .in = in };
	unw_cursor_t c;
	uint32_t n = 0;
	put_frame(proc, ip, &out[n++]);
	unwind_lock_enter();
	if (unw_init_remote(&c, proc->unwind->as, &ctx) < 0) {
		unwind_lock_leave();
		*flags |= EMBER_SAMPLE_UNWIND_ERROR;
		return n;
	}
	/* A probed frame gets its words once the next step tells its CFA. */
	struct ember_frame_probe *pending = NULL;
	if (probes && probes->fn && probes->fn(probes->arg, (uint32_t)proc->pid, ip)) {
		pending = &probes->out[probes->n++];
		*pending = (struct ember_frame_probe){ .frame = 0, .pc = ip, .leaf = true, .ncand = EMBER_PROBE_REGS };
		probe_regs_read(&c, in, pending);
	}
	int prev_signal = unw_is_signal_frame(&c) > 0;
	uint64_t prev_sp = in->regs[PERF_REG_SP];
	int rc = 0;
	bool from_entry = false, astray = false;
	uint64_t entry_regs[PERF_REGS_COUNT];
	struct unwind_input entry_in;
	uint64_t ra;
again:
	while (n < max && (rc = unw_step(&c)) > 0) {
		unw_word_t pc, sp;
		if (unw_get_reg(&c, UNW_REG_IP, &pc) < 0 || unw_get_reg(&c, UNW_REG_SP, &sp) < 0 || pc == 0)
			break;
		/* The stack grows down: a caller's SP below its callee's means the
		 * walk went astray (garbage from a frame-pointer fallback). */
		if (sp < prev_sp) {
			astray = true;
			break;
		}
		if (pending) {
			probe_words_read(in, prev_sp, sp, pending);
			pending = NULL;
		}
		prev_sp = sp;
		/* Return addresses point after the call; pc - 1 lands inside it so
		 * the line and inline chain are the call site's.  A frame entered
		 * from a signal trampoline was interrupted: its PC is exact. */
		uint64_t at = prev_signal ? pc : pc - 1;
		if (probes && probes->fn && probes->n < EMBER_MAX_PROBES &&
		    probes->fn(probes->arg, (uint32_t)proc->pid, at)) {
			pending = &probes->out[probes->n++];
			*pending = (struct ember_frame_probe){ .frame = n, .pc = at, .leaf = false,
								 .ncand = EMBER_PROBE_REGS };
			probe_regs_read(&c, in, pending);
		}
		put_frame(proc, at, &out[n++]);
		prev_signal = unw_is_signal_frame(&c) > 0;
	}
	/* The walk ended at the leaf, or one guessed frame after it (libunwind
	 * falls back to the frame pointer): if the leaf has no CFI, go on
	 * instead from the return address at [SP] as its caller (SP + 8, the
	 * other registers as they are), once. */
	if (!from_entry && max > 1 && (n == 1 || (n == 2 && (rc < 0 || astray))) && !ctx.read_past_copy &&
	    entry_return_address(&ctx, ip, &ra)) {
		from_entry = true;
		astray = false;
		n = 1;
		if (probes)
			probes->n = 0;   /* (the leaf, without CFI, is no eval loop; the guess is dropped) */
		memcpy(entry_regs, in->regs, sizeof entry_regs);
		entry_regs[PERF_REG_IP] = ra;
		entry_regs[PERF_REG_SP] += 8;
		entry_in = (struct unwind_input){ .regs = entry_regs, .stack = in->stack + 8,
						  .stack_len = in->stack_len - 8,
						  .stack_reserved = in->stack_reserved - 8 };
		ctx.in = &entry_in;
		if (unw_init_remote(&c, proc->unwind->as, &ctx) >= 0) {
			put_frame(proc, ra - 1, &out[n++]);
			prev_signal = 0;
			prev_sp = entry_regs[PERF_REG_SP];
			pending = NULL;
			goto again;
		}
		rc = -UNW_EINVAL;
	}
	unwind_lock_leave();
	if (astray)
		*flags |= EMBER_SAMPLE_UNWIND_ERROR;
	if (ctx.read_past_copy)
		*flags |= EMBER_SAMPLE_TRUNCATED;
	else if (n < max && rc < 0)
		*flags |= EMBER_SAMPLE_UNWIND_ERROR;
	if (n == max && !ctx.read_past_copy)
		*flags |= EMBER_SAMPLE_TRUNCATED | EMBER_SAMPLE_FRAME_CAP;
	return n;
}
