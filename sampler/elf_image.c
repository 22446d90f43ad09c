/* An ELF file as the unwinder needs it: where its PT_LOAD segments sit, where
 * .eh_frame_hdr is, and a way to read bytes at ELF virtual addresses without
 * touching the target process.  libelf parses the headers; the bytes come
 * from a read-only mapping of the whole file, so reads are memcpy. */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampler_internal.h"

/* .eh_frame_hdr encodings we accept for the binary-search table
 * (the only ones GNU ld, gold, lld and mold emit). */
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_datarel 0x30

static void parse_eh_frame_hdr(struct elf_image *img, uint64_t vaddr)
{
	uint8_t hdr[12];

	if (!elf_image_read(img, vaddr, hdr, sizeof hdr))
		return;
	/* version 1, eh_frame_ptr_enc (any 4-byte form), fde_count_enc udata4,
	 * table_enc datarel|sdata4: then fde_count sits at byte 8 and the
	 * table starts at byte 12. */
	if (hdr[0] != 1 || ((hdr[1] & 0x0f) != DW_EH_PE_udata4 && (hdr[1] & 0x0f) != DW_EH_PE_sdata4) ||
	    hdr[2] != DW_EH_PE_udata4 ||
	    hdr[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return;
	uint32_t count;
	memcpy(&count, hdr + 8, 4);
	img->eh_frame_hdr = vaddr;
	img->fde_count = count;
	/* The table itself, in the file, when all of it is there. */
	for (unsigned i = 0; i < img->nloads; i++) {
		const struct elf_load *l = &img->loads[i];
		uint64_t at = vaddr + 12;
		if (at >= l->vaddr && at - l->vaddr <= l->filesz && (l->filesz - (at - l->vaddr)) / 8 >= count)
			img->fde_table = img->data + l->offset + (at - l->vaddr);
	}
}

static void parse_build_id(struct elf_image *img, Elf *elf, const GElf_Phdr *ph)
{
	Elf_Data *data = elf_getdata_rawchunk(elf, ph->p_offset, ph->p_filesz, ELF_T_NHDR);
	if (!data)
		return;
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;
	while (off < data->d_size && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)data->d_buf + name_off, "GNU", 4) == 0) {
			size_t n = nh.n_descsz < sizeof img->build_id ? nh.n_descsz : sizeof img->build_id;
			memcpy(img->build_id, (const char *)data->d_buf + desc_off, n);
			img->build_id_len = n;
			return;
		}
	}
}

static int parse(struct elf_image *img)
{
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory((char *)img->data, img->size);
	if (!elf)
		return -1;
	int rc = -1;
	GElf_Ehdr eh;
	size_t nph;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &nph) != 0)
		goto out;
	img->is_exec_type = eh.e_type == ET_EXEC;
	img->min_vaddr = UINT64_MAX;
	uint64_t eh_hdr = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD && img->nloads < ELF_IMAGE_MAX_LOADS) {
			struct elf_load *l = &img->loads[img->nloads++];
			l->vaddr = ph.p_vaddr;
			l->memsz = ph.p_memsz;
			l->offset = ph.p_offset;
			/* Never trust filesz past the end of the file. */
			l->filesz = ph.p_offset > img->size ? 0 :
				    ph.p_filesz < img->size - ph.p_offset ? ph.p_filesz : img->size - ph.p_offset;
			l->exec = ph.p_flags & PF_X;
			if (ph.p_vaddr < img->min_vaddr)
				img->min_vaddr = ph.p_vaddr;
			if (ph.p_vaddr + ph.p_memsz > img->max_vaddr)
				img->max_vaddr = ph.p_vaddr + ph.p_memsz;
			if (l->exec) {
				if (!img->exec_lo || ph.p_vaddr < img->exec_lo)
					img->exec_lo = ph.p_vaddr;
				if (ph.p_vaddr + ph.p_memsz > img->exec_hi)
					img->exec_hi = ph.p_vaddr + ph.p_memsz;
			}
		} else if (ph.p_type == PT_GNU_EH_FRAME) {
			eh_hdr = ph.p_vaddr;
		} else if (ph.p_type == PT_NOTE && !img->build_id_len && ph.p_offset < img->size &&
			   ph.p_filesz <= img->size - ph.p_offset) {
			parse_build_id(img, elf, &ph);
		}
	}
	if (img->nloads == 0)
		goto out;
	if (eh_hdr)
		parse_eh_frame_hdr(img, eh_hdr);
	rc = 0;
out:
	elf_end(elf);
	return rc;
}

int elf_image_open(struct elf_image *img, const char *path)
{
	memset(img, 0, sizeof *img);
	img->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (img->fd < 0)
		return -1;
	struct stat st;
	if (fstat(img->fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 64)
		goto fail;
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, img->fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	img->data = p;
	img->size = (size_t)st.st_size;
	if (parse(img) != 0)
		goto fail;
	return 0;
fail:
	elf_image_close(img);
	return -1;
}

int elf_image_from_memory(struct elf_image *img, const void *data, size_t size)
{
	memset(img, 0, sizeof *img);
	img->fd = -1;
	uint8_t *copy = malloc(size);
	if (!copy)
		return -1;
	memcpy(copy, data, size);
	img->data = copy;
	img->size = size;
	img->heap = true;
	if (parse(img) != 0) {
		elf_image_close(img);
		return -1;
	}
	return 0;
}

void elf_image_close(struct elf_image *img)
{
	free(img->funcs);
	if (img->data) {
		if (img->heap)
			free((void *)img->data);
		else
			munmap((void *)img->data, img->size);
	}
	if (img->fd >= 0)
		close(img->fd);
	memset(img, 0, sizeof *img);
	img->fd = -1;
}

uint64_t elf_image_bias(const struct elf_image *img, uint64_t start, uint64_t pgoff)
{
	if (img->is_exec_type)
		return 0;
	/* The PT_LOAD whose file range holds pgoff tells which vaddr `start`
	 * corresponds to; page-align both sides as the loader does. */
	for (unsigned i = 0; i < img->nloads; i++) {
		const struct elf_load *l = &img->loads[i];
		uint64_t off_page = l->offset & ~0xfffULL;
		if (pgoff >= off_page && pgoff < l->offset + (l->filesz ? l->filesz : 1))
			return start - pgoff - ((l->vaddr & ~0xfffULL) - off_page);
	}
	return start - pgoff;
}

bool elf_image_read(const struct elf_image *img, uint64_t vaddr, void *buf, size_t len)
{
	for (unsigned i = 0; i < img->nloads; i++) {
		const struct elf_load *l = &img->loads[i];
		if (vaddr >= l->vaddr && vaddr - l->vaddr < l->filesz && len <= l->filesz - (vaddr - l->vaddr)) {
			memcpy(buf, img->data + l->offset + (vaddr - l->vaddr), len);
			return true;
		}
	}
	return false;
}

bool elf_image_fde_start(const struct elf_image *img, uint64_t vaddr, uint64_t *next)
{
	if (!img->fde_table || !img->fde_count)
		return false;
	/* Entries: (initial location, FDE), each an int32 from .eh_frame_hdr,
	 * sorted by initial location. */
	int64_t want = (int64_t)(vaddr - img->eh_frame_hdr);
	size_t lo = 0, hi = img->fde_count;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int32_t loc;
		memcpy(&loc, img->fde_table + mid * 8, 4);
		if (loc < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	int32_t loc = 0;
	if (lo < img->fde_count)
		memcpy(&loc, img->fde_table + lo * 8, 4);
	if (lo == img->fde_count || loc != want)
		return false;
	*next = UINT64_MAX;
	if (lo + 1 < img->fde_count) {
		memcpy(&loc, img->fde_table + (lo + 1) * 8, 4);
		*next = img->eh_frame_hdr + (uint64_t)(int64_t)loc;
	}
	return true;
}

static int cmp_func(const void *a, const void *b)
{
	const struct elf_func *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* STT_FUNC symbols of the symbol table `want` (SHT_SYMTAB, SHT_DYNSYM). */
static void read_funcs(struct elf_image *img, Elf *elf, Elf64_Word want)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != want || !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		struct elf_func *f = realloc(img->funcs, (img->nfuncs + n) * sizeof *f);
		if (!f)
			return;
		img->funcs = f;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			if (gelf_getsym(data, (int)i, &sym) && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
			    sym.st_shndx != SHN_UNDEF && sym.st_value)
				img->funcs[img->nfuncs++] = (struct elf_func){ sym.st_value, sym.st_size };
		}
	}
}

bool elf_image_func_start(struct elf_image *img, uint64_t vaddr, uint64_t *start)
{
	if (!img->funcs_built) {
		img->funcs_built = true;
		elf_version(EV_CURRENT);
		Elf *elf = elf_memory((char *)img->data, img->size);
		if (elf) {
			read_funcs(img, elf, SHT_SYMTAB);
			if (!img->nfuncs)
				read_funcs(img, elf, SHT_DYNSYM);
			elf_end(elf);
		}
		qsort(img->funcs, img->nfuncs, sizeof *img->funcs, cmp_func);
	}
	size_t lo = 0, hi = img->nfuncs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (img->funcs[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	const struct elf_func *f = &img->funcs[lo - 1];
	if (f->size && vaddr - f->start >= f->size)
		return false;
	*start = f->start;
	return true;
}
