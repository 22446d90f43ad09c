/* The eval function's `.cold` part in a binary that names neither it nor
 * (through DWARF) its address ranges: Debian's stripped python3 without
 * python3.11-dbg.  See py_internal.h, "eval_cold.c".
 *
 * GCC moves a function's unlikely blocks into a separate region (in
 * .text.unlikely), reached only by jumps from the hot body, and describes it
 * in .eh_frame with a frame of its own whose CFA is the hot body's, mid-frame
 * (rsp+352 on Debian 3.11, not the rsp+8 of a function entry).  A sample in
 * that region is an eval-loop activation like one in the hot body.  So: the
 * targets of the hot body's 32-bit relative jumps (jmp rel32, jcc rel32) that
 * land outside it with the CFA they left with, in the densest cluster, and
 * the CFI rows they span.  The byte scan can see a false "jump" inside
 * another instruction; it lands where the frame is another size, or among
 * too few others.  x86-64 only; checked against the .cold symbols of pyenv
 * builds and the DWARF of Debian's (tests/unit/test_python_cold.c).  On
 * AArch64 there is nothing to find in Debian 12's python3.11: it is built
 * without hot/cold splitting (no .text.unlikely; the DWARF gives the eval
 * function one range).  Also
 * the offline libdwfl session eval_dwarf.c reads the DWARF with. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "py_internal.h"

#define MAX_TARGETS 8192
#define CLUSTER_GAP 65536       /* targets farther apart belong to different regions */
#define MIN_TARGETS 8           /* a real cold part gets many jumps */

Dwfl *py_dwfl_open(const char *path, Dwfl_Module **mod)
{
	static const Dwfl_Callbacks cb = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
	};
	*mod = NULL;
	Dwfl *dwfl = dwfl_begin(&cb);
	if (!dwfl)
		return NULL;
	dwfl_report_begin(dwfl);
	/* base 0 + add_p_vaddr: module addresses are the file's own vaddrs */
	*mod = dwfl_report_elf(dwfl, "python", path, -1, 0, true);
	dwfl_report_end(dwfl, NULL, NULL);
	return dwfl;
}

#if defined(__x86_64__)   /* the jump decoding below reads x86-64 code */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The executable section holding [lo, hi): its bytes and range. */
static const uint8_t *section_bytes(Elf *elf, uint64_t lo, uint64_t hi, uint64_t *sec_lo, uint64_t *sec_hi)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		if (lo < sh.sh_addr || hi > sh.sh_addr + sh.sh_size)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < sh.sh_size)
			return NULL;
		*sec_lo = sh.sh_addr;
		*sec_hi = sh.sh_addr + sh.sh_size;
		return d->d_buf;
	}
	return NULL;
}

/* CFI row at pc: its range and CFA offset from rsp; false if not rsp-based. */
static bool cfi_row(Dwarf_CFI *cfi, uint64_t pc, uint64_t *s, uint64_t *e, int64_t *cfa_off)
{
	Dwarf_Frame *fr = NULL;
	if (dwarf_cfi_addrframe(cfi, pc, &fr) != 0)
		return false;
	Dwarf_Addr rs, re;
	Dwarf_Op *ops;
	size_t nops;
	bool ok = dwarf_frame_info(fr, &rs, &re, NULL) >= 0 && dwarf_frame_cfa(fr, &ops, &nops) == 0 && nops == 1 &&
		  ops[0].atom == DW_OP_bregx && ops[0].number == 7;   /* rsp */
	if (ok) {
		*s = rs;
		*e = re;
		*cfa_off = (int64_t)ops[0].number2;
	}
	free(fr);
	return ok;
}

#endif

bool py_find_cold_part(Dwfl_Module *mod, uint64_t hot_lo, uint64_t hot_hi, uint64_t *lo, uint64_t *hi)
{
#if defined(__x86_64__)
	Dwarf_Addr ebias = 0, cbias = 0;
	Elf *elf = dwfl_module_getelf(mod, &ebias);
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(mod, &cbias);
	uint64_t sec_lo, sec_hi;
	const uint8_t *text = elf ? section_bytes(elf, hot_lo - ebias, hot_hi - ebias, &sec_lo, &sec_hi) : NULL;
	if (!text || !cfi || hot_hi - hot_lo < 16)
		return false;
	sec_lo += ebias;
	sec_hi += ebias;
	const uint8_t *code = text + (hot_lo - sec_lo);
	uint64_t size = hot_hi - hot_lo;

	/* Targets whose CFA is the one at the jump: a jump does not move the
	 * stack, and a false "jump" read inside another instruction lands where
	 * the frame is some other size (or at a function's entry, rsp+8). */
	uint64_t *t = malloc(MAX_TARGETS * sizeof *t);
	if (!t)
		return false;
	size_t n = 0;
	for (uint64_t i = 0; i + 6 <= size && n < MAX_TARGETS; i++) {
		uint64_t len;
		if (code[i] == 0xe9)
			len = 5;                             /* jmp rel32 */
		else if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80)
			len = 6;                             /* jcc rel32 */
		else
			continue;
		int32_t disp;
		memcpy(&disp, code + i + len - 4, 4);
		uint64_t to = hot_lo + i + len + (uint64_t)(int64_t)disp;
		if ((to >= hot_lo && to < hot_hi) || to < sec_lo || to >= sec_hi)
			continue;
		uint64_t s, e;
		int64_t off_from, off_to;
		if (cfi_row(cfi, hot_lo + i - cbias, &s, &e, &off_from) && off_from > 8 &&
		    cfi_row(cfi, to - cbias, &s, &e, &off_to) && off_to == off_from)
			t[n++] = to;
	}
	qsort(t, n, sizeof *t, cmp_u64);

	/* The densest cluster of them, and the CFI rows it spans. */
	size_t best = 0, best_len = 0;
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && t[j] - t[j - 1] <= CLUSTER_GAP; j++)
			;
		if (j - i > best_len) {
			best = i;
			best_len = j - i;
		}
	}
	uint64_t rlo = UINT64_MAX, rhi = 0;
	size_t accepted = 0;
	for (size_t i = best; i < best + best_len; i++) {
		uint64_t s, e;
		int64_t off;
		if (!cfi_row(cfi, t[i] - cbias, &s, &e, &off))
			continue;
		accepted++;
		if (s + cbias < rlo)
			rlo = s + cbias;
		if (e + cbias > rhi)
			rhi = e + cbias;
	}
	free(t);
	if (accepted < MIN_TARGETS || rhi <= rlo || rhi - rlo > (1u << 20) || (rlo < hot_hi && rhi > hot_lo))
		return false;
	*lo = rlo;
	*hi = rhi;
	return true;
#else
	(void)mod, (void)hot_lo, (void)hot_hi, (void)lo, (void)hi;
	return false;
#endif
}

bool py_cold_part_of(const char *path, uint64_t hot_lo, uint64_t hot_hi, uint64_t *lo, uint64_t *hi)
{
	Dwfl_Module *mod;
	Dwfl *dwfl = py_dwfl_open(path, &mod);
	bool ok = mod && py_find_cold_part(mod, hot_lo, hot_hi, lo, hi);
	if (dwfl)
		dwfl_end(dwfl);
	return ok;
}
