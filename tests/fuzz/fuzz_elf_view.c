/* fuzz.elf_view: the ELF view (common/elf_view.c) on any bytes, as ember
 * meets the target's files: ember_elf_open takes a path, so the bytes are
 * an in-memory file.  On a file it accepts, every lookup ember makes is
 * run: bias, bytes at addresses, symbols one and many at a time, sections,
 * function starts and the .eh_frame_hdr table, at addresses taken from the
 * file's own layout; whatever they return must lie inside the file. */
#include "fuzz_util.h"

#include <string.h>

#include "elf_view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = { "_PyRuntime", "PyCode_Type", "main", "_start", "",
				     "_PyEval_EvalFrameDefault.cold" };

static void in_file(const struct ember_elf *e, const uint8_t *p, size_t len)
{
	FUZZ_ASSERT(!p || (p >= e->data && len <= e->size && (size_t)(p - e->data) <= e->size - len));
}

/* Every lookup at vaddr. */
static void probe(struct ember_elf *e, uint64_t vaddr)
{
	uint8_t buf[16];
	uint64_t start, next;
	in_file(e, ember_elf_at(e, vaddr, 16), 16);
	in_file(e, ember_elf_at(e, vaddr, 1), 1);
	(void)ember_elf_read(e, vaddr, buf, sizeof buf);
	if (ember_elf_func_start(e, vaddr, &start))
		FUZZ_ASSERT(start <= vaddr);
	(void)ember_elf_fde_start(e, vaddr, &next);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_memfd(data, size, path, sizeof path);
	if (fd < 0)
		return 0;
	struct ember_elf e;
	int rc = ember_elf_open(&e, path);
	close(fd);
	if (rc != 0) {
		FUZZ_ASSERT(rc < 0);
		return 0;
	}
	FUZZ_ASSERT(e.nloads > 0 && e.nloads <= EMBER_ELF_MAX_LOADS && e.build_id_len <= sizeof e.build_id);
	for (unsigned i = 0; i < e.nloads; i++)
		FUZZ_ASSERT(e.loads[i].filesz == 0 ||
			    (e.loads[i].offset <= e.size && e.loads[i].filesz <= e.size - e.loads[i].offset));
	if (e.fde_table)
		in_file(&e, e.fde_table, (size_t)e.fde_count * EMBER_EH_FRAME_HDR_ENTRY);
	uint64_t values[6], sizes[6], sz;
	(void)ember_elf_symbols(&e, names, 6, values, sizes);
	(void)ember_elf_symbol(&e, "main", &sz);
	(void)ember_elf_section(&e, ".text", &sz);
	(void)ember_elf_section(&e, ".eh_frame_hdr", NULL);
	(void)ember_elf_bias(&e, 0x400000, 0);
	for (unsigned i = 0; i < e.nloads; i++) {
		(void)ember_elf_bias(&e, 0x7f0000000000ull, e.loads[i].offset);
		probe(&e, e.loads[i].vaddr);
		probe(&e, e.loads[i].vaddr + e.loads[i].memsz / 2);
		probe(&e, e.loads[i].vaddr + e.loads[i].filesz - 1);
	}
	for (unsigned i = 0; i < 6; i++)
		if (values[i])
			probe(&e, values[i]);
	if (e.eh_frame_hdr)
		probe(&e, e.eh_frame_hdr);
	probe(&e, e.min_vaddr);
	ember_elf_close(&e);
	return 0;
}
