/* The few things python-stacks needs from an ELF file, parsed by hand from a
 * read-only mapping with every offset bounds-checked: symbols by name
 * (.symtab, then .dynsym), section addresses by name (.PyRuntime), the GNU
 * build-id and the PT_LOAD that maps file offset 0 (for the load bias).
 * Also /proc/PID/maps parsing. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "py_internal.h"

static bool in_file(const struct elf_file *e, uint64_t off, uint64_t len)
{
	return off <= e->size && len <= e->size - off;
}

static const Elf64_Shdr *shdrs(const struct elf_file *e, size_t *n)
{
	const Elf64_Ehdr *h = (const Elf64_Ehdr *)e->data;
	*n = 0;
	if (!h->e_shoff || h->e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_file(e, h->e_shoff, (uint64_t)h->e_shnum * sizeof(Elf64_Shdr)))
		return NULL;
	*n = h->e_shnum;
	return (const Elf64_Shdr *)(e->data + h->e_shoff);
}

static const char *shstr(const struct elf_file *e, uint32_t name)
{
	size_t n;
	const Elf64_Shdr *sh = shdrs(e, &n);
	const Elf64_Ehdr *h = (const Elf64_Ehdr *)e->data;
	if (!sh || h->e_shstrndx >= n)
		return NULL;
	const Elf64_Shdr *s = &sh[h->e_shstrndx];
	if (!in_file(e, s->sh_offset, s->sh_size) || name >= s->sh_size)
		return NULL;
	const char *p = (const char *)e->data + s->sh_offset + name;
	if (!memchr(p, 0, s->sh_size - name))
		return NULL;
	return p;
}

static void parse_notes(struct elf_file *e, uint64_t off, uint64_t size, uint64_t vaddr)
{
	uint64_t p = 0;
	while (p + sizeof(Elf64_Nhdr) <= size) {
		const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(e->data + off + p);
		uint64_t name_off = p + sizeof *nh, desc_off = name_off + ((nh->n_namesz + 3) & ~3u);
		uint64_t next = desc_off + ((nh->n_descsz + 3) & ~3u);
		if (next > size)
			return;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
		    memcmp(e->data + off + name_off, "GNU", 4) == 0 && nh->n_descsz <= sizeof e->build_id) {
			memcpy(e->build_id, e->data + off + desc_off, nh->n_descsz);
			e->build_id_len = nh->n_descsz;
			e->build_id_vaddr = vaddr ? vaddr + desc_off : 0;
			return;
		}
		p = next;
	}
}

int elf_open(struct elf_file *e, const char *path)
{
	memset(e, 0, sizeof *e);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return -ENOEXEC;
	}
	void *m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	e->data = m;
	e->size = st.st_size;
	const Elf64_Ehdr *h = m;
	if (memcmp(h->e_ident, ELFMAG, SELFMAG) || h->e_ident[EI_CLASS] != ELFCLASS64 ||
	    h->e_ident[EI_DATA] != ELFDATA2LSB || h->e_machine != EM_X86_64 ||
	    h->e_phentsize != sizeof(Elf64_Phdr) ||
	    !in_file(e, h->e_phoff, (uint64_t)h->e_phnum * sizeof(Elf64_Phdr))) {
		elf_close(e);
		return -ENOEXEC;
	}
	e->is_exec = h->e_type == ET_EXEC;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(e->data + h->e_phoff);
	bool have_load = false;
	for (size_t i = 0; i < h->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !have_load && ph[i].p_offset == 0) {
			e->first_load_vaddr = ph[i].p_vaddr;
			e->first_load_offset = 0;
			have_load = true;
		}
		if (ph[i].p_type == PT_NOTE && !e->build_id_len && in_file(e, ph[i].p_offset, ph[i].p_filesz))
			parse_notes(e, ph[i].p_offset, ph[i].p_filesz, ph[i].p_vaddr);
	}
	if (!have_load) {
		elf_close(e);
		return -ENOEXEC;
	}
	size_t n;
	const Elf64_Shdr *sh = shdrs(e, &n);
	for (size_t i = 0; sh && i < n; i++)
		if (sh[i].sh_type == SHT_SYMTAB && sh[i].sh_size)
			e->has_symtab = true;
	return 0;
}

void elf_close(struct elf_file *e)
{
	if (e->data)
		munmap((void *)e->data, e->size);
	memset(e, 0, sizeof *e);
}

static uint64_t lookup_in(const struct elf_file *e, uint32_t type, const char *name, uint64_t *size)
{
	size_t n;
	const Elf64_Shdr *sh = shdrs(e, &n);
	for (size_t i = 0; sh && i < n; i++) {
		if (sh[i].sh_type != type || sh[i].sh_entsize != sizeof(Elf64_Sym) || sh[i].sh_link >= n)
			continue;
		const Elf64_Shdr *strs = &sh[sh[i].sh_link];
		if (!in_file(e, sh[i].sh_offset, sh[i].sh_size) || !in_file(e, strs->sh_offset, strs->sh_size))
			continue;
		const Elf64_Sym *sym = (const Elf64_Sym *)(e->data + sh[i].sh_offset);
		const char *str = (const char *)e->data + strs->sh_offset;
		size_t cnt = sh[i].sh_size / sizeof(Elf64_Sym), nl = strlen(name);
		for (size_t k = 0; k < cnt; k++) {
			if (sym[k].st_shndx == SHN_UNDEF || sym[k].st_name + nl >= strs->sh_size)
				continue;
			if (memcmp(str + sym[k].st_name, name, nl + 1) == 0) {
				if (size)
					*size = sym[k].st_size;
				return sym[k].st_value;
			}
		}
	}
	return 0;
}

uint64_t elf_symbol(const struct elf_file *e, const char *name, uint64_t *size)
{
	uint64_t v = lookup_in(e, SHT_SYMTAB, name, size);
	return v ? v : lookup_in(e, SHT_DYNSYM, name, size);
}

uint64_t elf_section(const struct elf_file *e, const char *name, uint64_t *size)
{
	size_t n;
	const Elf64_Shdr *sh = shdrs(e, &n);
	for (size_t i = 0; sh && i < n; i++) {
		const char *s = shstr(e, sh[i].sh_name);
		if (s && strcmp(s, name) == 0) {
			if (size)
				*size = sh[i].sh_size;
			return sh[i].sh_addr;
		}
	}
	return 0;
}

const uint8_t *elf_at_vaddr(const struct elf_file *e, uint64_t vaddr, size_t len)
{
	const Elf64_Ehdr *h = (const Elf64_Ehdr *)e->data;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(e->data + h->e_phoff);
	for (size_t i = 0; i < h->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || vaddr < ph[i].p_vaddr || vaddr - ph[i].p_vaddr >= ph[i].p_filesz ||
		    len > ph[i].p_filesz - (vaddr - ph[i].p_vaddr))
			continue;
		uint64_t off = ph[i].p_offset + (vaddr - ph[i].p_vaddr);
		return in_file(e, off, len) ? e->data + off : NULL;
	}
	return NULL;
}

int proc_maps_read(pid_t pid, struct proc_maps *m)
{
	char path[64], line[4352];
	memset(m, 0, sizeof *m);
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	size_t cap = 0;
	while (fgets(line, sizeof line, f)) {
		struct map_entry me;
		unsigned dmaj, dmin;
		int pos = 0;
		memset(&me, 0, sizeof me);
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &me.start, &me.end, me.perms, &me.offset, &dmaj, &dmin, &me.inode, &pos) < 7)
			continue;
		char *p = line + pos;
		p[strcspn(p, "\n")] = 0;
		if (*p && me.inode) {
			me.path = strdup(p);
			if (!me.path)
				break;
		}
		if (m->n == cap) {
			cap = cap ? cap * 2 : 64;
			struct map_entry *v = realloc(m->v, cap * sizeof *v);
			if (!v) {
				free(me.path);
				break;
			}
			m->v = v;
		}
		m->v[m->n++] = me;
	}
	fclose(f);
	return m->n ? 0 : -ESRCH;
}

void proc_maps_free(struct proc_maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	memset(m, 0, sizeof *m);
}
