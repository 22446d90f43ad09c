/* The ELF view (elf_view.h): a read-only mapping of the file, headers parsed
 * once with libelf, symbol and section lookups through libelf on demand. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_view.h"
#include "sorted.h"

/* .eh_frame_hdr encodings accepted for the binary-search table (the only
 * ones GNU ld, gold, lld and mold emit). */
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_datarel 0x30

static bool in_file(const struct ember_elf *e, uint64_t off, uint64_t len)
{
	return off <= e->size && len <= e->size - off;
}

static void parse_eh_frame_hdr(struct ember_elf *e, uint64_t vaddr)
{
	uint8_t hdr[EMBER_EH_FRAME_HDR_TABLE];

	if (!ember_elf_read(e, vaddr, hdr, sizeof hdr))
		return;
	/* version 1, eh_frame_ptr_enc (any 4-byte form), fde_count_enc udata4,
	 * table_enc datarel|sdata4: fde_count is at byte 8 and the table,
	 * (initial location, FDE) pairs of int32 from .eh_frame_hdr, at 12. */
	if (hdr[0] != 1 || ((hdr[1] & 0x0f) != DW_EH_PE_udata4 && (hdr[1] & 0x0f) != DW_EH_PE_sdata4) ||
	    hdr[2] != DW_EH_PE_udata4 || hdr[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return;
	uint32_t count;
	memcpy(&count, hdr + 8, 4);
	e->eh_frame_hdr = vaddr;
	e->fde_count = count;
	e->fde_table = ember_elf_at(e, vaddr + EMBER_EH_FRAME_HDR_TABLE, (size_t)count * EMBER_EH_FRAME_HDR_ENTRY);
}

static void parse_build_id(struct ember_elf *e, Elf *elf, const GElf_Phdr *ph)
{
	Elf_Data *data = elf_getdata_rawchunk(elf, (int64_t)ph->p_offset, ph->p_filesz, ELF_T_NHDR);
	if (!data)
		return;
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;
	while (off < data->d_size && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)data->d_buf + name_off, "GNU", 4) == 0 && nh.n_descsz <= sizeof e->build_id) {
			memcpy(e->build_id, (const char *)data->d_buf + desc_off, nh.n_descsz);
			e->build_id_len = nh.n_descsz;
			e->build_id_vaddr = ph->p_vaddr ? ph->p_vaddr + desc_off : 0;
			return;
		}
	}
}

static void add_load(struct ember_elf *e, const GElf_Phdr *ph)
{
	if (e->nloads == EMBER_ELF_MAX_LOADS)
		return;
	struct ember_elf_load *l = &e->loads[e->nloads++];
	l->vaddr = ph->p_vaddr;
	l->memsz = ph->p_memsz;
	l->offset = ph->p_offset;
	/* Never trust filesz past the end of the file. */
	l->filesz = ph->p_offset > e->size ? 0 : ph->p_filesz < e->size - ph->p_offset ? ph->p_filesz
											: e->size - ph->p_offset;
	l->exec = ph->p_flags & PF_X;
	if (ph->p_vaddr < e->min_vaddr)
		e->min_vaddr = ph->p_vaddr;
	if (ph->p_vaddr + ph->p_memsz > e->max_vaddr)
		e->max_vaddr = ph->p_vaddr + ph->p_memsz;
	if (l->exec) {
		if (!e->exec_lo || ph->p_vaddr < e->exec_lo)
			e->exec_lo = ph->p_vaddr;
		if (ph->p_vaddr + ph->p_memsz > e->exec_hi)
			e->exec_hi = ph->p_vaddr + ph->p_memsz;
	}
}

static int parse(struct ember_elf *e, Elf *elf)
{
	GElf_Ehdr eh;
	size_t nph;
	const unsigned char *id = e->data;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &nph) != 0 ||
	    id[EI_CLASS] != ELFCLASS64 || id[EI_DATA] != ELFDATA2LSB)
		return -ENOEXEC;
	e->machine = eh.e_machine;
	e->is_exec_type = eh.e_type == ET_EXEC;
	e->entry = eh.e_entry;
	e->min_vaddr = UINT64_MAX;
	uint64_t eh_hdr = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD)
			add_load(e, &ph);
		else if (ph.p_type == PT_GNU_EH_FRAME)
			eh_hdr = ph.p_vaddr;
		else if (ph.p_type == PT_NOTE && !e->build_id_len && in_file(e, ph.p_offset, ph.p_filesz))
			parse_build_id(e, elf, &ph);
	}
	if (e->nloads == 0)
		return -ENOEXEC;
	if (eh_hdr)
		parse_eh_frame_hdr(e, eh_hdr);
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB && sh.sh_size)
			e->has_symtab = true;
	}
	return 0;
}

int ember_elf_open(struct ember_elf *e, const char *path)
{
	memset(e, 0, sizeof *e);
	e->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (e->fd < 0)
		return -errno;
	struct stat st;
	int rc = -ENOEXEC;
	if (fstat(e->fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 64)
		goto fail;
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, e->fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	e->data = p;
	e->size = (size_t)st.st_size;
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory((char *)e->data, e->size);
	rc = elf ? parse(e, elf) : -ENOEXEC;
	if (elf)
		elf_end(elf);
	if (rc == 0)
		return 0;
fail:
	ember_elf_close(e);
	return rc;
}

void ember_elf_close(struct ember_elf *e)
{
	free(e->funcs);
	if (e->data)
		munmap((void *)e->data, e->size);
	if (e->fd >= 0)
		close(e->fd);
	memset(e, 0, sizeof *e);
	e->fd = -1;
}

uint64_t ember_elf_bias(const struct ember_elf *e, uint64_t start, uint64_t pgoff)
{
	if (e->is_exec_type)
		return 0;
	/* The PT_LOAD whose file range holds pgoff tells which vaddr `start`
	 * corresponds to; page-align both sides as the loader does. */
	for (unsigned i = 0; i < e->nloads; i++) {
		const struct ember_elf_load *l = &e->loads[i];
		uint64_t off_page = l->offset & ~0xfffULL;
		if (pgoff >= off_page && pgoff < l->offset + (l->filesz ? l->filesz : 1))
			return start - pgoff - ((l->vaddr & ~0xfffULL) - off_page);
	}
	return start - pgoff;
}

/* ember_elf_at, inlined into ember_elf_read: the unwinder reads CFI
 * through here a word at a time. */
static inline const uint8_t *bytes_at(const struct ember_elf *e, uint64_t vaddr, size_t len)
{
	for (unsigned i = 0; i < e->nloads; i++) {
		const struct ember_elf_load *l = &e->loads[i];
		if (vaddr >= l->vaddr && vaddr - l->vaddr < l->filesz && len <= l->filesz - (vaddr - l->vaddr))
			return e->data + l->offset + (vaddr - l->vaddr);
	}
	return NULL;
}

const uint8_t *ember_elf_at(const struct ember_elf *e, uint64_t vaddr, size_t len)
{
	return bytes_at(e, vaddr, len);
}

bool ember_elf_read(const struct ember_elf *e, uint64_t vaddr, void *buf, size_t len)
{
	const uint8_t *p = bytes_at(e, vaddr, len);
	if (p)
		memcpy(buf, p, len);
	return p != NULL;
}

/* Call fn for every symbol of the symbol tables of type `type`; stop when it
 * returns true. */
typedef bool (*sym_fn)(void *arg, const GElf_Sym *sym, const char *name);

static void each_symbol(const struct ember_elf *e, Elf64_Word type, sym_fn fn, void *arg)
{
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory((char *)e->data, e->size);
	Elf_Scn *scn = NULL;
	bool done = false;
	while (elf && !done && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n && !done; i++) {
			GElf_Sym sym;
			const char *name;
			if (gelf_getsym(data, (int)i, &sym) && (name = elf_strptr(elf, sh.sh_link, sym.st_name)))
				done = fn(arg, &sym, name);
		}
	}
	if (elf)
		elf_end(elf);
}

struct by_name {
	const char *name;
	uint64_t value, size;
	bool found;
};

static bool match_name(void *arg, const GElf_Sym *sym, const char *name)
{
	struct by_name *b = arg;
	if (sym->st_shndx == SHN_UNDEF || strcmp(name, b->name) != 0)
		return false;
	b->value = sym->st_value;
	b->size = sym->st_size;
	return b->found = true;
}

uint64_t ember_elf_symbol(const struct ember_elf *e, const char *name, uint64_t *size)
{
	struct by_name b = { .name = name };
	each_symbol(e, SHT_SYMTAB, match_name, &b);
	if (!b.found)
		each_symbol(e, SHT_DYNSYM, match_name, &b);
	if (b.found && size)
		*size = b.size;
	return b.found ? b.value : 0;
}

struct by_names {
	const char *const *names;
	size_t n, left;
	uint64_t *values, *sizes;
	bool *found;
};

static void match_names(struct by_names *b, const Elf64_Sym *sym, const char *name)
{
	for (size_t i = 0; i < b->n; i++)
		/* (the first two bytes settle most mismatches without a call) */
		if (!b->found[i] && name[0] == b->names[i][0] && (!name[0] || name[1] == b->names[i][1]) &&
		    strcmp(name, b->names[i]) == 0) {
			b->found[i] = true;
			b->values[i] = sym->st_value;
			if (b->sizes)
				b->sizes[i] = sym->st_size;
			b->left--;
		}
}

/* The symbols of the tables of type `type`, as the file holds them (the
 * view takes 64-bit files only), against b's names: one pass, no copy per
 * symbol.  A table whose string table has no bytes in the file (a NOBITS
 * section: libelf gives no buffer) or does not end in a NUL is skipped. */
static void match_table(Elf *elf, Elf64_Word type, struct by_names *b)
{
	Elf_Scn *scn = NULL, *str_scn;
	while (b->left && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data, *strs;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || sh.sh_entsize != sizeof(Elf64_Sym) ||
		    !(data = elf_getdata(scn, NULL)) || !data->d_buf || !(str_scn = elf_getscn(elf, sh.sh_link)) ||
		    !(strs = elf_getdata(str_scn, NULL)) || !strs->d_buf || !strs->d_size ||
		    ((const char *)strs->d_buf)[strs->d_size - 1])
			continue;
		const Elf64_Sym *sym = data->d_buf;
		const char *str = strs->d_buf;
		for (size_t k = 0; k < data->d_size / sizeof *sym && b->left; k++)
			if (sym[k].st_shndx != SHN_UNDEF && sym[k].st_name < strs->d_size)
				match_names(b, &sym[k], str + sym[k].st_name);
	}
}

size_t ember_elf_symbols(const struct ember_elf *e, const char *const *names, size_t n, uint64_t *values,
			 uint64_t *sizes)
{
	struct by_names b = { .names = names, .n = n, .left = n, .values = values, .sizes = sizes };
	for (size_t i = 0; i < n; i++) {
		values[i] = 0;
		if (sizes)
			sizes[i] = 0;
	}
	if (!n || !(b.found = calloc(n, sizeof *b.found)))
		return 0;
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory((char *)e->data, e->size);
	if (elf) {
		match_table(elf, SHT_SYMTAB, &b);
		match_table(elf, SHT_DYNSYM, &b);
		elf_end(elf);
	}
	free(b.found);
	return n - b.left;
}

uint64_t ember_elf_section(const struct ember_elf *e, const char *name, uint64_t *size)
{
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory((char *)e->data, e->size);
	size_t shstrndx;
	uint64_t addr = 0;
	if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *s;
			if (gelf_getshdr(scn, &sh) && (s = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(s, name)) {
				addr = sh.sh_addr;
				if (size)
					*size = sh.sh_size;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	return addr;
}

struct funcs {
	struct ember_elf *e;
	size_t cap;
};

static bool add_func(void *arg, const GElf_Sym *sym, const char *name)
{
	(void)name;
	struct funcs *f = arg;
	struct ember_elf *e = f->e;
	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_shndx == SHN_UNDEF || !sym->st_value)
		return false;
	if (e->nfuncs == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : 256;
		struct ember_elf_func *v = realloc(e->funcs, ncap * sizeof *v);
		if (!v)
			return true;
		e->funcs = v;
		f->cap = ncap;
	}
	e->funcs[e->nfuncs++] = (struct ember_elf_func){ sym->st_value, sym->st_size };
	return false;
}

static int cmp_func(const void *a, const void *b)
{
	const struct ember_elf_func *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

bool ember_elf_func_start(struct ember_elf *e, uint64_t vaddr, uint64_t *start)
{
	if (!e->funcs_built) {
		struct funcs f = { .e = e };
		e->funcs_built = true;
		each_symbol(e, SHT_SYMTAB, add_func, &f);
		if (!e->nfuncs)
			each_symbol(e, SHT_DYNSYM, add_func, &f);
		if (e->nfuncs)   /* (funcs is NULL when the file has no function symbol) */
			qsort(e->funcs, e->nfuncs, sizeof *e->funcs, cmp_func);
	}
	size_t lo = ember_upper_bound(e->funcs, e->nfuncs, sizeof *e->funcs, sizeof e->funcs->start, vaddr);
	if (!lo)
		return false;
	const struct ember_elf_func *f = &e->funcs[lo - 1];
	if (f->size && vaddr - f->start >= f->size)
		return false;
	*start = f->start;
	return true;
}

/* DWARF pointer encodings (the low nibble: the value's format). */
#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_omit 0xff

/* An encoded value at vaddr: its size and value (before any pcrel). */
static bool read_encoded(const struct ember_elf *e, uint64_t vaddr, uint8_t enc, uint64_t *val, unsigned *size)
{
	uint8_t b[8];
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: case DW_EH_PE_udata8: case DW_EH_PE_sdata8: *size = 8; break;
	case DW_EH_PE_udata4: case DW_EH_PE_sdata4: *size = 4; break;
	case DW_EH_PE_udata2: case DW_EH_PE_sdata2: *size = 2; break;
	default: return false;
	}
	if (!ember_elf_read(e, vaddr, b, *size))
		return false;
	uint64_t v = 0;
	memcpy(&v, b, *size);
	if ((enc & 0x0f) == DW_EH_PE_sdata4)
		v = (uint64_t)(int64_t)(int32_t)v;
	else if ((enc & 0x0f) == DW_EH_PE_sdata2)
		v = (uint64_t)(int64_t)(int16_t)v;
	*val = v;
	return true;
}

static uint64_t read_leb(const struct ember_elf *e, uint64_t *at)
{
	uint64_t v = 0;
	uint8_t b;
	for (unsigned shift = 0; shift < 64 && ember_elf_read(e, (*at)++, &b, 1); shift += 7) {
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	return v;
}

/* The FDE pointer encoding of the CIE at vaddr ("zR...": GNU's form). */
static bool cie_fde_encoding(const struct ember_elf *e, uint64_t cie, uint8_t *enc)
{
	uint8_t head[9], aug[8];
	if (!ember_elf_read(e, cie, head, sizeof head) || head[4] || head[5] || head[6] || head[7])
		return false;   /* a length, an id of 0, a version */
	size_t alen = 0;
	while (alen < sizeof aug && ember_elf_read(e, cie + 9 + alen, &aug[alen], 1) && aug[alen])
		alen++;
	if (alen == sizeof aug || alen == 0 || aug[0] != 'z')
		return false;
	uint64_t at = cie + 9 + alen + 1;
	read_leb(e, &at);                           /* code alignment */
	read_leb(e, &at);                           /* data alignment (sleb: skipped alike) */
	if (head[8] == 1)
		at++;                               /* return register, a byte in version 1 */
	else
		read_leb(e, &at);
	read_leb(e, &at);                           /* augmentation data length */
	for (size_t i = 1; i < alen; i++) {
		uint8_t c;
		if (!ember_elf_read(e, at++, &c, 1))
			return false;
		if (aug[i] == 'R') {
			*enc = c;
			return true;
		}
		if (aug[i] == 'P') {                /* personality: its encoding, then it */
			uint64_t v;
			unsigned sz;
			if (!read_encoded(e, at, c, &v, &sz))
				return false;
			at += sz;
		} else if (aug[i] != 'L') {         /* 'L' took its byte; 'S', 'B' have none */
			at--;
		}
	}
	return false;
}

bool ember_elf_fde_range(const struct ember_elf *e, uint64_t vaddr, uint64_t *lo, uint64_t *hi)
{
	if (!e->fde_table || !e->fde_count)
		return false;
	int64_t want = (int64_t)(vaddr - e->eh_frame_hdr);
	size_t a = 0, b = e->fde_count;   /* the last entry starting at or before vaddr */
	while (a < b) {
		size_t mid = (a + b) / 2;
		int32_t loc;
		memcpy(&loc, e->fde_table + mid * EMBER_EH_FRAME_HDR_ENTRY, 4);
		if (loc <= want)
			a = mid + 1;
		else
			b = mid;
	}
	if (!a)
		return false;
	int32_t fde_off;
	memcpy(&fde_off, e->fde_table + (a - 1) * EMBER_EH_FRAME_HDR_ENTRY + 4, 4);
	uint64_t fde = e->eh_frame_hdr + (uint64_t)(int64_t)fde_off;
	uint32_t len, cie_ptr;
	uint8_t enc = 0;
	if (!ember_elf_read(e, fde, &len, 4) || len == 0xffffffffu || !ember_elf_read(e, fde + 4, &cie_ptr, 4) ||
	    !cie_fde_encoding(e, fde + 4 - cie_ptr, &enc) || enc == DW_EH_PE_omit)
		return false;
	uint64_t begin, range;
	unsigned s1, s2;
	if (!read_encoded(e, fde + 8, enc, &begin, &s1) || !read_encoded(e, fde + 8 + s1, enc & 0x0f, &range, &s2))
		return false;
	if ((enc & 0x70) == DW_EH_PE_pcrel)
		begin += fde + 8;
	else if (enc & 0x70)
		return false;   /* textrel, datarel, funcrel: not for FDEs GNU tools write */
	if (vaddr < begin || vaddr - begin >= range)
		return false;
	*lo = begin;
	*hi = begin + range;
	return true;
}

bool ember_elf_fde_start(const struct ember_elf *e, uint64_t vaddr, uint64_t *next)
{
	if (!e->fde_table || !e->fde_count)
		return false;
	int64_t want = (int64_t)(vaddr - e->eh_frame_hdr);
	size_t lo = 0, hi = e->fde_count;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int32_t loc;
		memcpy(&loc, e->fde_table + mid * EMBER_EH_FRAME_HDR_ENTRY, 4);
		if (loc < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	int32_t loc = 0;
	if (lo < e->fde_count)
		memcpy(&loc, e->fde_table + lo * EMBER_EH_FRAME_HDR_ENTRY, 4);
	if (lo == e->fde_count || loc != want)
		return false;
	*next = UINT64_MAX;
	if (lo + 1 < e->fde_count) {
		memcpy(&loc, e->fde_table + (lo + 1) * EMBER_EH_FRAME_HDR_ENTRY, 4);
		*next = e->eh_frame_hdr + (uint64_t)(int64_t)loc;
	}
	return true;
}
