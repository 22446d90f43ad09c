/* The architecture-specific pieces that are plain functions of bytes and
 * numbers, checked on every host: the AArch64 prologue decoder against
 * code assembled by binutils (the words and their disassembly below come
 * from aarch64-linux-gnu-as and objdump), the probe candidates' DWARF
 * numbering, and return-address stripping. */
#include <stdint.h>
#include <string.h>

#include "arch_insn.h"
#include "check.h"
#include "probe_regs.h"
#include "unwind_arch.h"

struct a64_case {
	const char *what;
	const uint32_t *code;
	size_t ninsn;              /* instructions before the pc */
	bool ok, ra_in_lr, fp_saved;
	uint64_t entry_off, sp_off, fp_off;
};

/* sub sp, sp, #0xb0; stp d8, d9, [sp]; stp d10, d11, [sp, #16];
 * stp x19, x20, [sp, #64]; stp x27, x28, [sp, #128]; fmov d0, xzr
 * (an OpenBLAS-style leaf kernel: saves, keeps x30) */
static const uint32_t leaf_kernel[] = { 0xd102c3ff, 0x6d0027e8, 0x6d012fea, 0xa90453f3, 0xa90873fb, 0x9e6703e0 };
/* paciasp; stp x29, x30, [sp, #-48]!; mov x29, sp; stp x19, x20, [sp, #16];
 * sub sp, sp, #0x1, lsl #12; ldr x0, [sp] */
static const uint32_t gcc_frame[] = { 0xd503233f, 0xa9bd7bfd, 0x910003fd, 0xa90153f3, 0xd14007ff, 0xf94003e0 };
/* str x30, [sp, #-16]!; sub sp, sp, #0x1, lsl #12; stp d8, d9, [sp, #-32]!; bl . */
static const uint32_t lr_alone[] = { 0xf81f0ffe, 0xd14007ff, 0x6dbe27e8, 0x97fffffd };
/* bti c; sub sp, sp, #0x40; stp x29, x30, [sp, #48]; add x29, sp, #0x30;
 * str x19, [sp, #8]; stp w1, w2, [sp, #-16]!; ret */
static const uint32_t record_on_top[] = { 0xd503245f, 0xd10103ff, 0xa9037bfd, 0x9100c3fd,
					  0xf90007f3, 0x29be0be1, 0xd65f03c0 };

/* stp x29, x30, [sp, #-96]!; stp x19, x20, [sp, #16]; stp x27, x28, [sp, #80];
 * mov x19, sp; sub x9, sp, #0x3, lsl #12; and sp, x9, #0xfffffffffffff000;
 * mov x20, x0 (a kernel that keeps its SP in x19 and realigns below it) */
static const uint32_t realigned[] = { 0xa9ba7bfd, 0xa90153f3, 0xa90573fb, 0x910003f3,
				      0xd1400fe9, 0x9274cd3f, 0xaa0003f4 };

static void test_prologue_aarch64_anchor(void)
{
	struct prologue p;
	CHECK(prologue_aarch64((const uint8_t *)realigned, sizeof realigned, &p));
	/* SP unknown after the and; x19 holds the SP after the first store */
	CHECK(!p.sp_known && p.anchor == A64_REG_X19);
	CHECK(p.entry_off == 96 && p.anchor_off == 8 && !p.ra_in_lr && p.fp_saved && p.fp_off == 0);
	/* before the and, SP is still known and no anchor is needed */
	CHECK(prologue_aarch64((const uint8_t *)realigned, 5 * 4, &p));
	CHECK(p.sp_known && p.entry_off == 96 && p.sp_off == 8);
}

static void test_prologue_aarch64(void)
{
	static const struct a64_case cases[] = {
		{ "at entry", leaf_kernel, 0, true, true, false, 0, 0, 0 },
		{ "leaf kernel", leaf_kernel, 6, true, true, false, 176, 0, 0 },
		{ "frame record pushed", gcc_frame, 2, true, false, true, 48, 8, 0 },
		{ "record, then a page", gcc_frame, 6, true, false, true, 48 + 4096, 4096 + 8, 4096 },
		{ "x30 alone, stops at bl", lr_alone, 4, true, false, false, 16 + 4096 + 32, 4096 + 32, 0 },
		{ "record at the top, stops at a 32-bit pair", record_on_top, 7, true, false, true, 64, 56, 48 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct a64_case *c = &cases[i];
		struct prologue p;
		bool ok = prologue_aarch64((const uint8_t *)c->code, c->ninsn * 4, &p);
		CHECK_MSG(ok == c->ok, c->what);
		if (!ok)
			continue;
		CHECK_MSG(p.sp_known && p.entry_off == c->entry_off, c->what);
		CHECK_MSG(p.ra_in_lr == c->ra_in_lr, c->what);
		if (!c->ra_in_lr)
			CHECK_MSG(p.sp_off == c->sp_off, c->what);
		CHECK_MSG(p.fp_saved == c->fp_saved, c->what);
		if (c->fp_saved)
			CHECK_MSG(p.fp_off == c->fp_off, c->what);
	}
	/* a store above the entry SP is no prologue's */
	static const uint32_t bogus[] = { 0xf90007fe };   /* str x30, [sp, #8] */
	struct prologue p;
	CHECK(!prologue_aarch64((const uint8_t *)bogus, 4, &p));
}

/* x86-64's prologue decoder gives the caller's SP the same way: 8 above
 * the return address. */
static void test_prologue_x86_entry(void)
{
	static const uint8_t code[] = { 0x55, 0x48, 0x83, 0xec, 0x20 };   /* push %rbp; sub $0x20,%rsp */
	struct prologue p;
	CHECK(prologue_x86_64(code, sizeof code, &p));
	CHECK(p.sp_known && p.sp_off == 0x28 && p.entry_off == 0x30 && !p.ra_in_lr);
}

static void test_probe_numbering(void)
{
	/* every candidate's DWARF number maps back to it, and SP is none */
	static const uint8_t dwarf[EMBER_PROBE_REGS] = EMBER_PROBE_DWARF_REGS;
	for (int i = 0; i < EMBER_PROBE_REGS; i++)
		CHECK(ember_probe_cand_of_dwarf(dwarf[i]) == i);
#if defined(__x86_64__)
	CHECK(ember_probe_cand_of_dwarf(7) == -1);    /* rsp */
	CHECK(ember_probe_cand_of_dwarf(15) == 14);   /* r15 */
#elif defined(__aarch64__)
	CHECK(ember_probe_cand_of_dwarf(31) == -1);   /* sp */
	CHECK(ember_probe_cand_of_dwarf(30) == -1);   /* x30: a code address, never a variable's */
	CHECK(ember_probe_cand_of_dwarf(19) == 19);
#endif
}

static void test_strip_ra(void)
{
	/* a PAC-signed return address (signature in bits 48-54) */
	uint64_t ra = 0x0000aaaab0001234ull, signed_ra = ra | 0x003b000000000000ull;
	CHECK(unwind_strip_ra(signed_ra, (1ull << 48) - 1) == ra);
	CHECK(unwind_strip_ra(ra, UINT64_MAX) == ra);
	CHECK(unwind_ra_mask() == UINT64_MAX || unwind_ra_mask() == (1ull << 48) - 1);
}

int main(void)
{
	test_prologue_aarch64();
	test_prologue_aarch64_anchor();
	test_prologue_x86_entry();
	test_probe_numbering();
	test_strip_ra();
	return check_report();
}
