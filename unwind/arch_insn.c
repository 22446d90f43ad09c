/* Machine-code decoders for unwinding past code without CFI (arch_insn.h). */
#include <stdint.h>
#include <string.h>

#include "arch_insn.h"
#include "perf_regs.h"

/* Length of an `ff /2` call whose ModRM byte is modrm and SIB byte (when
 * it has one) is sib, opcode included; 0 when the ModRM byte is no call. */
static size_t x86_ff2_length(uint8_t modrm, uint8_t sib)
{
	unsigned mod = modrm >> 6, reg = (modrm >> 3) & 7, rm = modrm & 7;
	if (reg != 2)
		return 0;
	if (mod == 3)
		return 2;                         /* call *%reg */
	size_t len = 2;
	if (rm == 4) {
		len++;                            /* SIB byte */
		if (mod == 0 && (sib & 7) == 5)
			len += 4;                 /* no base: disp32 */
	} else if (mod == 0 && rm == 5) {
		len += 4;                         /* RIP-relative disp32 */
	}
	if (mod == 1)
		len += 1;
	else if (mod == 2)
		len += 4;
	return len;
}

enum call_kind call_before_x86_64(const uint8_t *before, size_t n, uint64_t ra, uint64_t *target)
{
	const uint8_t *end = before + n;
	/* ff /2 through a register or memory: 2 to 7 bytes from the opcode (a
	 * REX or segment prefix before it does not move the end).  The decoded
	 * length must land exactly on ra.  Tried first: when the bytes read
	 * both ways, the weaker claim (target unknown) is the safe one. */
	for (size_t len = 2; len <= 7 && len <= n; len++) {
		const uint8_t *op = end - len;
		if (op[0] == 0xff && x86_ff2_length(op[1], len >= 3 ? op[2] : 0) == len)
			return CALL_INDIRECT;
	}
	/* e8 rel32: the target is relative to the return address. */
	if (n >= 5 && end[-5] == 0xe8) {
		int32_t rel;
		memcpy(&rel, end - 4, 4);
		*target = ra + (uint64_t)(int64_t)rel;
		return CALL_DIRECT;
	}
	return CALL_NONE;
}

enum call_kind call_before_aarch64(const uint8_t *before, size_t n, uint64_t ra, uint64_t *target)
{
	if (n < 4)
		return CALL_NONE;
	uint32_t insn;
	memcpy(&insn, before + n - 4, 4);   /* A64 instructions are little-endian */
	/* BL imm26: target = its own address + imm26 * 4 */
	if ((insn & 0xfc000000u) == 0x94000000u) {
		int64_t imm = (int64_t)(insn & 0x03ffffffu);
		if (imm & 0x02000000)
			imm -= 0x04000000;
		*target = ra - 4 + (uint64_t)(imm * 4);
		return CALL_DIRECT;
	}
	/* BLR Xn */
	if ((insn & 0xfffffc1fu) == 0xd63f0000u)
		return CALL_INDIRECT;
	/* BLRAA, BLRAAZ, BLRAB, BLRABZ (pointer authentication) */
	if ((insn & 0xfefff800u) == 0xd63f0800u)
		return CALL_INDIRECT;
	return CALL_NONE;
}

bool plt_stub_x86_64(const uint8_t *code, size_t n)
{
	size_t i = 0;
	if (n >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa)
		i = 4;                                    /* endbr64 */
	if (i < n && code[i] == 0xf2)
		i++;                                      /* bnd */
	return i + 2 <= n && code[i] == 0xff && code[i + 1] == 0x25;   /* jmp *disp32(%rip) */
}

bool plt_stub_aarch64(const uint8_t *code, size_t n)
{
	uint32_t insn;
	if (n < 4)
		return false;
	memcpy(&insn, code, 4);
	if (insn == 0xd503245fu) {                        /* bti c */
		if (n < 8)
			return false;
		memcpy(&insn, code + 4, 4);
	}
	return (insn & 0x9f00001fu) == 0x90000010u;      /* adrp x16, page */
}

/* The perf_event sample index (perf_regs.h) of x86 register number r
 * (0..15, as ModRM and REX encode it: ax cx dx bx sp bp si di r8..r15) for
 * the callee-saved ones a prologue may keep SP in, -1 for the others. */
static int x86_anchor_index(unsigned r)
{
	static const int8_t idx[16] = { -1, -1, -1, X86_REG_BX, -1, X86_REG_BP, -1, -1,
					-1, -1, -1, -1, X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15 };
	return idx[r & 15];
}

/* Length of a memory operand after a ModRM byte at m[0] (ModRM, SIB,
 * displacement), or 0 for a register operand. */
static size_t x86_modrm_mem_length(const uint8_t *m, size_t n)
{
	unsigned mod = m[0] >> 6, rm = m[0] & 7;
	if (mod == 3)
		return 0;
	size_t len = 1;
	if (rm == 4) {
		if (n < 2)
			return SIZE_MAX;
		if (mod == 0 && (m[1] & 7) == 5)
			len += 4;
		len++;
	} else if (mod == 0 && rm == 5) {
		len += 4;
	}
	return len + (mod == 1 ? 1 : mod == 2 ? 4 : 0);
}

bool prologue_x86_64(const uint8_t *code, size_t n, struct prologue *p)
{
	*p = (struct prologue){ .sp_known = true, .anchor = -1 };
	int64_t off = 0;           /* entry SP - SP */
	size_t i = 0;
	while (i < n) {
		const uint8_t *c = code + i;
		size_t left = n - i;
		unsigned rex = (c[0] & 0xf0) == 0x40 ? c[0] : 0;
		const uint8_t *op = rex ? c + 1 : c;
		size_t oleft = rex ? left - 1 : left;
		if (left >= 4 && c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa) {
			i += 4;                                        /* endbr64 */
		} else if (oleft >= 1 && op[0] >= 0x50 && op[0] <= 0x57 && (!rex || rex == 0x41)) {
			off += 8;                                      /* push r */
			i += rex ? 2 : 1;
		} else if (rex == 0x48 && oleft >= 3 && op[0] == 0x83 && (op[1] == 0xec || op[1] == 0xc4)) {
			off += op[1] == 0xec ? (int8_t)op[2] : -(int8_t)op[2];   /* sub/add $imm8, %rsp */
			i += 4;
		} else if (rex == 0x48 && oleft >= 6 && op[0] == 0x81 && (op[1] == 0xec || op[1] == 0xc4)) {
			int32_t imm;
			memcpy(&imm, op + 2, 4);
			off += op[1] == 0xec ? imm : -(int64_t)imm;              /* sub/add $imm32, %rsp */
			i += 7;
		} else if (rex == 0x48 && oleft >= 3 && (op[0] == 0x83 || op[0] == 0x81) && op[1] == 0xe4) {
			p->sp_known = false;                           /* and $imm, %rsp: realigned */
			i += op[0] == 0x83 ? 4 : 7;
		} else if ((rex & 0xfe) == 0x48 && oleft >= 2 && op[0] == 0x89 && (op[1] & 0xf8) == 0xe0) {
			/* mov %rsp, %reg: the register anchors the entry SP */
			unsigned r = (op[1] & 7) | (rex & 1 ? 8 : 0);
			int idx = x86_anchor_index(r);
			if (idx >= 0 && p->sp_known) {
				p->anchor = idx;
				p->anchor_off = (uint64_t)off;
			}
			i += 3;
		} else if ((rex & 0xf8) == 0x48 && oleft >= 2 && (op[0] == 0x89 || op[0] == 0x8b)) {
			/* mov between a register and memory or another register: a
			 * register save or a load; a load into the anchor ends it */
			size_t mlen = x86_modrm_mem_length(op + 1, oleft - 1);
			unsigned reg = ((op[1] >> 3) & 7) | (rex & 4 ? 8 : 0), rm = (op[1] & 7) | (rex & 1 ? 8 : 0);
			unsigned dst = op[0] == 0x8b ? reg : rm;
			if (mlen == SIZE_MAX || 1 + 1 + mlen > oleft || (mlen == 0 && dst == 4) || (op[0] == 0x8b && reg == 4))
				break;                                 /* SP written: unknown */
			if ((mlen == 0 || op[0] == 0x8b) && p->anchor == x86_anchor_index(dst))
				p->anchor = -1;
			i += 1 + 2 + (mlen ? mlen - 1 : 0);
		} else if (left >= 3 && c[0] == 0xc5 && c[1] == 0xf8 && c[2] == 0x77) {
			i += 3;                                        /* vzeroupper */
		} else {
			break;
		}
	}
	if (off < 0)
		return false;
	p->sp_off = (uint64_t)off;
	p->entry_off = p->sp_known ? (uint64_t)off + 8 : p->anchor_off + 8;
	return p->sp_known || p->anchor >= 0;
}

/* Signed field of width bits at bit lo of insn. */
static int64_t a64_sfield(uint32_t insn, unsigned lo, unsigned bits)
{
	int64_t v = (int64_t)((insn >> lo) & ((1u << bits) - 1));
	return v & ((int64_t)1 << (bits - 1)) ? v - ((int64_t)1 << bits) : v;
}

/* Where x29 and x30 were stored, as bytes below the entry SP. */
struct a64_saves {
	bool lr, fp;
	int64_t lr_at, fp_at;
};

static void a64_saved(struct a64_saves *sv, unsigned rt, int64_t at)
{
	if (rt == 30) {
		sv->lr = true;
		sv->lr_at = at;
	} else if (rt == 29) {
		sv->fp = true;
		sv->fp_at = at;
	}
}

bool prologue_aarch64(const uint8_t *code, size_t n, struct prologue *p)
{
	*p = (struct prologue){ .sp_known = true, .anchor = -1 };
	int64_t off = 0;              /* entry SP - SP (while SP is known) */
	int64_t anchor_at = 0;        /* entry SP - the anchor register's value */
	struct a64_saves sv = { 0 };
	for (size_t i = 0; i + 4 <= n; i += 4) {
		uint32_t insn;
		memcpy(&insn, code + i, 4);
		unsigned rt = insn & 31, rt2 = (insn >> 10) & 31;
		if ((insn & 0xfffff01fu) == 0xd503201fu) {
			continue;                                   /* hint: nop, paciasp, bti */
		} else if ((insn & 0xff8003ffu) == 0xd10003ffu) {
			/* sub sp, sp, #imm{, lsl #12} */
			off += (int64_t)((insn >> 10) & 0xfff) << (insn & (1u << 22) ? 12 : 0);
		} else if ((insn & 0x7fc003e0u) == 0x298003e0u || (insn & 0x7fc003e0u) == 0x290003e0u) {
			/* stp Xt, Xt2, [sp, #imm]! (pre-indexed) or [sp, #imm] (64-bit) */
			if (!(insn & (1u << 31)))
				break;                                  /* 32-bit registers */
			int64_t imm = a64_sfield(insn, 15, 7) * 8;
			if (insn & (1u << 23))
				off -= imm;
			int64_t at = off - (insn & (1u << 23) ? 0 : imm);
			a64_saved(&sv, rt, at);
			a64_saved(&sv, rt2, at - 8);
		} else if ((insn & 0xffc003e0u) == 0x6d8003e0u) {
			off -= a64_sfield(insn, 15, 7) * 8;         /* stp Dt, Dt2, [sp, #imm]! */
		} else if ((insn & 0xffc003e0u) == 0x6d0003e0u) {
			continue;                                   /* stp Dt, Dt2, [sp, #imm] */
		} else if ((insn & 0xffe00fe0u) == 0xf8000fe0u || (insn & 0xffe00fe0u) == 0xfc000fe0u) {
			/* str Xt / Dt, [sp, #imm]! */
			off -= a64_sfield(insn, 12, 9);
			if (!(insn & (1u << 26)))
				a64_saved(&sv, rt, off);
		} else if ((insn & 0xffc003e0u) == 0xf90003e0u) {
			/* str Xt, [sp, #imm] */
			a64_saved(&sv, rt, off - (int64_t)((insn >> 10) & 0xfff) * 8);
		} else if ((insn & 0xff8003ffu) == 0x910003fdu) {
			continue;                                   /* add x29, sp, #imm */
		} else if ((insn & 0xffffffe0u) == 0x910003e0u && rt >= 19 && rt <= 28) {
			p->anchor = (int)rt;                        /* mov xN, sp: N anchors the SP */
			anchor_at = off;
		} else if ((insn & 0x7f8003e0u) == 0x510003e0u && rt != 31) {
			/* add/sub xD, sp, #imm: a scratch register from SP */
			if ((int)rt == p->anchor)
				p->anchor = -1;
		} else if ((insn & 0xff80001fu) == 0x9200001fu) {
			p->sp_known = false;                        /* and sp, xN, #mask: realigned */
			break;
		} else {
			break;
		}
	}
	/* (a slot at or above the entry SP is the caller's memory: no save) */
	if (off < 0 || (sv.lr && (sv.lr_at <= 0 || sv.lr_at > off)) || (sv.fp && (sv.fp_at <= 0 || sv.fp_at > off)))
		return false;
	if (!p->sp_known && p->anchor < 0)
		return false;
	/* Offsets from SP, or from the anchor once SP is unknown. */
	int64_t base = p->sp_known ? off : anchor_at;
	p->entry_off = (uint64_t)base;
	p->ra_in_lr = !sv.lr;
	p->sp_off = p->anchor_off = sv.lr ? (uint64_t)(base - sv.lr_at) : 0;
	p->fp_saved = sv.fp;
	p->fp_off = sv.fp ? (uint64_t)(base - sv.fp_at) : 0;
	return true;
}
