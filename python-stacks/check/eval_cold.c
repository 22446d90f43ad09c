/* The eval function's `.cold` part in a binary that names neither it nor
 * (through DWARF) its address ranges: Debian's stripped python3 without
 * python3.11-dbg.  See check/py_check.h, "eval_cold.c".
 *
 * GCC moves a function's unlikely blocks into a separate region (in
 * .text.unlikely), reached only by jumps from the hot body, and describes it
 * in .eh_frame with a frame of its own whose CFA is the hot body's, mid-frame
 * (rsp+352 on Debian 3.11, rbp+16 where frame pointers are kept: Debian's
 * 3.14 and 3.15; not the rsp+8 of a function entry).  A sample in
 * that region is an eval-loop activation like one in the hot body.  So: the
 * targets of the hot body's 32-bit relative jumps (jmp rel32, jcc rel32) that
 * land outside it with the CFA they left with, in the densest cluster, and
 * the CFI rows they span -- or, when they enter the start of a frame
 * description of its own (as few as 3 jumps: GCC 16 leaves a hot part of
 * ~1 KB with the whole opcode body cold in Debian's 3.14), that FDE's range.  The byte scan can see a false "jump" inside
 * another instruction; it lands where the frame is another size, or among
 * too few others.  x86-64 only; checked against the .cold symbols of pyenv
 * builds and the DWARF of Debian's (tests/unit/test_python_cold.c).  On
 * AArch64 there is nothing to find in Debian 12's python3.11: it is built
 * without hot/cold splitting (no .text.unlikely; the DWARF gives the eval
 * function one range).  Also
 * the offline libdwfl session eval_dwarf.c reads the DWARF with. */
#define _GNU_SOURCE
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf_view.h"
#include "py_check.h"

#define MAX_TARGETS 8192
#define CLUSTER_GAP 65536       /* targets farther apart belong to different regions */
#define MIN_TARGETS 8           /* a real cold part gets many jumps */
#define MIN_FDE_TARGETS 3       /* ... or a few, to the start of a frame description of its own */

struct dwfl_cb {
	Dwfl_Callbacks cb;
	char *debuginfo_path;          /* NULL: libdwfl's default */
};

Dwfl *py_dwfl_open(struct py_dwfl *d, const char *path, const char *root)
{
	*d = (struct py_dwfl){ 0 };
	struct dwfl_cb *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	d->cb = c;
	c->cb = (Dwfl_Callbacks){
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &c->debuginfo_path,
	};
	if (root && asprintf(&c->debuginfo_path, ":.debug:%s/usr/lib/debug:/usr/lib/debug", root) < 0)
		return NULL;
	if (!(d->dwfl = dwfl_begin(&c->cb)))
		return NULL;
	dwfl_report_begin(d->dwfl);
	/* base 0 + add_p_vaddr: module addresses are the file's own vaddrs */
	d->mod = dwfl_report_elf(d->dwfl, "python", path, -1, 0, true);
	dwfl_report_end(d->dwfl, NULL, NULL);
	return d->dwfl;
}

void py_dwfl_close(struct py_dwfl *d)
{
	struct dwfl_cb *c = d->cb;
	if (d->dwfl)
		dwfl_end(d->dwfl);
	if (c)
		free(c->debuginfo_path);
	free(c);
	*d = (struct py_dwfl){ 0 };
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

/* The CFA as a register plus an offset: rsp-based, or rbp-based in code
 * built with frame pointers. */
struct cfa {
	uint64_t reg;
	int64_t off;
};

/* CFI row at pc: its range and CFA; false if not register + offset. */
static bool cfi_row(Dwarf_CFI *cfi, uint64_t pc, uint64_t *s, uint64_t *e, struct cfa *cfa)
{
	Dwarf_Frame *fr = NULL;
	if (dwarf_cfi_addrframe(cfi, pc, &fr) != 0)
		return false;
	Dwarf_Addr rs, re;
	Dwarf_Op *ops;
	size_t nops;
	bool ok = dwarf_frame_info(fr, &rs, &re, NULL) >= 0 && dwarf_frame_cfa(fr, &ops, &nops) == 0 && nops == 1 &&
		  ops[0].atom == DW_OP_bregx;
	if (ok) {
		*s = rs;
		*e = re;
		*cfa = (struct cfa){ .reg = ops[0].number, .off = (int64_t)ops[0].number2 };
	}
	free(fr);
	return ok;
}

/* A CFA that is not a function's entry (rsp+8): mid-frame. */
static bool mid_frame(struct cfa c)
{
	return !(c.reg == 7 && c.off <= 8);
}

/* The frame description that holds every target of the cluster (at_start:
 * and starts at the lowest): the cold part whole, before its first and past
 * its last jump target (GCC gives each cold part an FDE of its own).
 * Module addresses. */
static bool whole_fde(const struct ember_elf *elf, const uint64_t *t, size_t n, uint64_t cbias, bool at_start,
		      uint64_t *lo, uint64_t *hi)
{
	uint64_t flo, fhi;
	if (!elf || !n || !ember_elf_fde_range(elf, t[0] - cbias, &flo, &fhi) || (at_start && flo != t[0] - cbias))
		return false;
	for (size_t i = 0; i < n; i++)
		if (t[i] - cbias >= fhi)
			return false;
	*lo = flo + cbias;
	*hi = fhi + cbias;
	return true;
}

#endif

bool py_find_cold_part(Dwfl_Module *mod, const struct ember_elf *view, uint64_t hot_lo, uint64_t hot_hi,
		       uint64_t *lo, uint64_t *hi)
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
		struct cfa from, at;
		if (cfi_row(cfi, hot_lo + i - cbias, &s, &e, &from) && mid_frame(from) &&
		    cfi_row(cfi, to - cbias, &s, &e, &at) && at.reg == from.reg && at.off == from.off)
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
		struct cfa c;
		if (!cfi_row(cfi, t[i] - cbias, &s, &e, &c))
			continue;
		accepted++;
		if (s + cbias < rlo)
			rlo = s + cbias;
		if (e + cbias > rhi)
			rhi = e + cbias;
	}
	bool whole = accepted >= MIN_FDE_TARGETS && accepted == best_len &&
		     whole_fde(view, t + best, best_len, cbias, accepted < MIN_TARGETS, &rlo, &rhi);
	free(t);
	if ((accepted < MIN_TARGETS && !whole) || rhi <= rlo || rhi - rlo > (1u << 20) ||
	    (rlo < hot_hi && rhi > hot_lo))
		return false;
	*lo = rlo;
	*hi = rhi;
	return true;
#else
	(void)mod, (void)view, (void)hot_lo, (void)hot_hi, (void)lo, (void)hi;
	return false;
#endif
}

bool py_cold_part_of(const char *path, const char *root, uint64_t hot_lo, uint64_t hot_hi, uint64_t *lo,
		     uint64_t *hi)
{
	struct py_dwfl d;
	py_dwfl_open(&d, path, root);
	struct ember_elf elf;
	bool have_elf = ember_elf_open(&elf, path) == 0;
	bool ok = d.mod && py_find_cold_part(d.mod, have_elf ? &elf : NULL, hot_lo, hot_hi, lo, hi);
	if (have_elf)
		ember_elf_close(&elf);
	py_dwfl_close(&d);
	return ok;
}
