/* libunwind's remote address space over one sample: registers from the
 * sample (or a scan's guess), memory from the stack copy and the ELF files
 * of the loaded modules, never from the live target.  One space per
 * process (struct unwind_proc) with the global cache on, so caller frames
 * hit the cache. */
#include <stdlib.h>
#include <string.h>

#include "unwind_space.h"

/* Exported by libunwind but not declared in its headers (perf declares it
 * the same way). */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
					       unw_proc_info_t *pi, int need_unwind_info, void *arg);

#if defined(__x86_64__)
const int8_t unwind_dwarf_to_perf[UNWIND_REG_LAST + 1] = {
	[UNW_X86_64_RAX] = X86_REG_AX, [UNW_X86_64_RDX] = X86_REG_DX, [UNW_X86_64_RCX] = X86_REG_CX,
	[UNW_X86_64_RBX] = X86_REG_BX, [UNW_X86_64_RSI] = X86_REG_SI, [UNW_X86_64_RDI] = X86_REG_DI,
	[UNW_X86_64_RBP] = X86_REG_BP, [UNW_X86_64_RSP] = X86_REG_SP, [UNW_X86_64_R8] = X86_REG_R8,
	[UNW_X86_64_R9] = X86_REG_R9, [UNW_X86_64_R10] = X86_REG_R10, [UNW_X86_64_R11] = X86_REG_R11,
	[UNW_X86_64_R12] = X86_REG_R12, [UNW_X86_64_R13] = X86_REG_R13, [UNW_X86_64_R14] = X86_REG_R14,
	[UNW_X86_64_R15] = X86_REG_R15, [UNW_X86_64_RIP] = X86_REG_IP,
};
#elif defined(__aarch64__)
/* x0..x30, sp, pc: the same numbers in both. */
#define A64_SAME4(n) [n] = n, [n + 1] = n + 1, [n + 2] = n + 2, [n + 3] = n + 3
const int8_t unwind_dwarf_to_perf[UNWIND_REG_LAST + 1] = {
	A64_SAME4(0), A64_SAME4(4), A64_SAME4(8), A64_SAME4(12), A64_SAME4(16), A64_SAME4(20),
	A64_SAME4(24), A64_SAME4(28), [UNW_AARCH64_PC] = A64_REG_PC,
};
_Static_assert((int)UNW_AARCH64_SP == (int)A64_REG_SP && (int)UNW_AARCH64_X30 == (int)A64_REG_LR, "x0..x30, sp numbered alike");
#endif

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	struct unwind_ctx *ctx = arg;
	const struct module_load *ml = process_find(ctx->proc, ip);
	int rc = -UNW_ENOINFO;
	if (ml && ml->mod->elf_ok && ml->mod->elf.eh_frame_hdr) {
		const struct ember_elf *elf = &ml->mod->elf;
		unw_dyn_info_t di = {
			.format = UNW_INFO_FORMAT_REMOTE_TABLE,
			.start_ip = ml->bias + elf->exec_lo,
			.end_ip = ml->bias + elf->exec_hi,
			.u.rti = {
				.segbase = ml->bias + elf->eh_frame_hdr,
				.table_data = ml->bias + elf->eh_frame_hdr + EMBER_EH_FRAME_HDR_TABLE,
				.table_len = elf->fde_count * EMBER_EH_FRAME_HDR_ENTRY / sizeof(unw_word_t),
			},
		};
		rc = UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need_unwind_info, arg);
	}
	if (rc == -UNW_ENOINFO)
		ctx->noinfo = true;
	return rc;
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

bool unwind_copy_word(const struct unwind_input *in, uint64_t addr, uint64_t *val)
{
	uint64_t sp = in->regs[EMBER_REG_SP];
	if (addr < sp || addr - sp >= in->stack_len || in->stack_len - (addr - sp) < 8)
		return false;
	memcpy(val, in->stack + (addr - sp), 8);
	return true;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write, void *arg)
{
	(void)as;
	struct unwind_ctx *ctx = arg;
	const struct unwind_input *in = ctx->in;
	if (write)
		return -UNW_EINVAL;
	uint64_t v;
	if (unwind_copy_word(in, addr, &v)) {
		*valp = v;
		return 0;
	}
	/* CFI is read through here word by word: most reads hit the module
	 * of the read before. */
	const struct module_load *ml = ctx->last_load;
	if (!ml || addr < ml->lo || addr >= ml->hi)
		ml = ctx->last_load = process_find(ctx->proc, addr);
	const uint8_t *p = ml && ml->mod->elf_ok ? ember_elf_at(&ml->mod->elf, addr - ml->bias, sizeof *valp) : NULL;
	if (p) {
		memcpy(valp, p, sizeof *valp);   /* (a fixed size: one load, no call) */
		return 0;
	}
	/* A read just above a copy that filled its whole reservation: the stack
	 * goes on, we simply did not copy it. */
	uint64_t sp = in->regs[EMBER_REG_SP];
	if (addr >= sp + in->stack_len && in->stack_len >= in->stack_reserved &&
	    addr - sp < in->stack_len + PAST_COPY_SLACK)
		ctx->read_past_copy = true;
	return -UNW_EINVAL;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *valp, int write, void *arg)
{
	(void)as;
	struct unwind_ctx *ctx = arg;
	if (write || reg < 0 || reg > UNWIND_REG_LAST)
		return -UNW_EBADREG;
	*valp = ctx->regs[unwind_dwarf_to_perf[reg]];
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

unw_addr_space_t unwind_space_new(void)
{
	unw_addr_space_t as = unw_create_addr_space(&accessors, 0);
	if (as)
		unw_set_caching_policy(as, UNW_CACHE_GLOBAL);
	return as;
}
