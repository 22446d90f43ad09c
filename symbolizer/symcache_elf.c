/* The symbolizer's cache on disk, its ELF side (symcache.h has the
 * contract, docs/symbolization.md the why): which separate debug files are
 * worth a decompressed copy and the copy itself, libdwfl's debuginfo search
 * that hands the copy out, and the stamp that ties stored results to the
 * files they were made from.
 *
 * Opening a separate debug file whose .debug_* sections are compressed costs
 * libdw an inflate of every section, however few addresses are looked up
 * (about 85% of symbolizing a short NumPy/OpenCV run).  A decompressed copy
 * is mapped instead: libdw then touches only the pages it reads. */
#define _GNU_SOURCE /* strchrnul */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "symcache.h"

#define DEFAULT_SEARCH ":.debug:/usr/lib/debug"   /* libdwfl's, when the module names none */

/* fn(arg, section, its header, its name or NULL) for each section of e, in
 * order: false when the section table or a header cannot be read, or when
 * fn returns false. */
typedef bool (*section_fn)(void *arg, Elf_Scn *scn, const GElf_Shdr *sh, const char *name);
static bool each_section(Elf *e, section_fn fn, void *arg)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(e, &shstrndx) != 0)
		return false;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || !fn(arg, scn, &sh, elf_strptr(e, shstrndx, sh.sh_name)))
			return false;
	}
	return true;
}

struct inflated {
	uint64_t total;       /* the file's size with every compressed section inflated */
	bool compressed;
};

static bool add_inflated(void *arg, Elf_Scn *scn, const GElf_Shdr *sh, const char *name)
{
	struct inflated *in = arg;
	if (name && strcmp(name, ".gnu_debugaltlink") == 0)
		return false;   /* dwz: the alt file is found relative to the debug file's path */
	if (!(sh->sh_flags & SHF_COMPRESSED))
		return true;
	GElf_Chdr ch;
	if (!gelf_getchdr(scn, &ch))
		return false;
	in->total += ch.ch_size;
	in->compressed = true;
	return true;
}

bool symcache_elf_compressed(int fd, uint64_t *size)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return false;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return false;
	struct inflated in = { .total = (uint64_t)st.st_size };
	bool ok = elf_kind(e) == ELF_K_ELF && each_section(e, add_inflated, &in);
	elf_end(e);
	*size = in.total;
	return ok && in.compressed;
}

int symcache_decompress_elf(int src_fd, int dst_fd)
{
	elf_version(EV_CURRENT);
	Elf *src = elf_begin(src_fd, ELF_C_READ_MMAP, NULL), *dst = NULL;
	uint64_t *old_off = NULL;
	int rc = -1;
	size_t shnum, shstrndx, phnum;
	GElf_Ehdr eh;
	if (!src || elf_kind(src) != ELF_K_ELF || !gelf_getehdr(src, &eh) || elf_getshdrnum(src, &shnum) != 0 ||
	    elf_getshdrstrndx(src, &shstrndx) != 0 || elf_getphdrnum(src, &phnum) != 0 ||
	    shstrndx >= SHN_LORESERVE || shnum >= SHN_LORESERVE)
		goto out;
	if (!(old_off = calloc(shnum + 1, sizeof(*old_off))) || !(dst = elf_begin(dst_fd, ELF_C_WRITE, NULL)) ||
	    !gelf_newehdr(dst, gelf_getclass(src)) || (phnum && !gelf_newphdr(dst, phnum)))
		goto out;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(src, (int)i, &ph) || !gelf_update_phdr(dst, (int)i, &ph))
			goto out;
	}
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(src, scn));) {
		GElf_Shdr sh;
		size_t idx = elf_ndxscn(scn);
		if (!gelf_getshdr(scn, &sh) || idx > shnum)
			goto out;
		old_off[idx] = sh.sh_type == SHT_NOBITS || sh.sh_size == 0 ? UINT64_MAX : sh.sh_offset;
		if (sh.sh_flags & SHF_COMPRESSED) {
			if (elf_compress(scn, 0, 0) < 0 || !gelf_getshdr(scn, &sh))
				goto out;
		}
		Elf_Scn *ns = elf_newscn(dst);
		if (!ns || elf_ndxscn(ns) != idx)
			goto out;
		for (Elf_Data *d = NULL; (d = elf_getdata(scn, d));) {
			Elf_Data *nd = elf_newdata(ns);
			if (!nd)
				goto out;
			*nd = *d;
		}
		if (!gelf_update_shdr(ns, &sh))
			goto out;
	}
	eh.e_shstrndx = (GElf_Half)shstrndx;
	if (!gelf_update_ehdr(dst, &eh) || elf_update(dst, ELF_C_NULL) < 0)
		goto out;
	/* libelf laid the sections out anew: notes found through the program
	 * headers (the build-id) must point at their section's new place. */
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(dst, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		for (size_t s = 1; s < shnum; s++) {
			GElf_Shdr nsh;
			if (old_off[s] == ph.p_offset && gelf_getshdr(elf_getscn(dst, s), &nsh)) {
				ph.p_offset = nsh.sh_offset;
				gelf_update_phdr(dst, (int)i, &ph);
				break;
			}
		}
	}
	elf_flagphdr(dst, ELF_C_SET, ELF_F_DIRTY);
	if (elf_update(dst, ELF_C_WRITE) < 0)
		goto out;
	rc = 0;
out:
	if (dst)
		elf_end(dst);
	if (src)
		elf_end(src);
	free(old_off);
	return rc;
}

static int write_decompressed(void *arg, int fd)
{
	return symcache_decompress_elf(*(int *)arg, fd);
}

bool symcache_origin_of(const char *path, struct symcache_origin *o)
{
	struct stat st;
	memset(o, 0, sizeof(*o));
	if (strlen(path) >= sizeof(o->path) || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return false;
	strcpy(o->path, path);
	o->size = (uint64_t)st.st_size;
	o->ino = (uint64_t)st.st_ino;
	o->mtime_s = (int64_t)st.st_mtim.tv_sec;
	o->mtime_ns = (int64_t)st.st_mtim.tv_nsec;
	return true;
}

/* The file libdwfl's search by build-id would take: the first
 * <dir>/.build-id/xx/yyyy.debug for the absolute directories of the search
 * path, in order.  Its path in buf; false when there is none. */
static bool find_by_build_id(const char *search, const unsigned char *bid, int bid_len, char *buf, size_t size)
{
	char hex[2 * SYMCACHE_MAX_BID + 1];
	if (bid_len < 2)
		return false;
	symcache_bid_hex(hex, bid, (size_t)bid_len);
	for (const char *p = search; *p;) {
		const char *e = strchrnul(p, ':');
		if (p[0] == '/' && e > p) {
			int n = snprintf(buf, size, "%.*s/.build-id/%.2s/%s.debug", (int)(e - p), p, hex, hex + 2);
			if (n > 0 && (size_t)n < size && access(buf, R_OK) == 0)
				return true;
		}
		p = *e ? e + 1 : e;
	}
	return false;
}

/* Whether ELF file fd carries build-id bid. */
static bool has_build_id(int fd, const unsigned char *bid, int bid_len)
{
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *p;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &p) : -1;
	bool ok = n == bid_len && memcmp(p, bid, (size_t)n) == 0;
	if (e)
		elf_end(e);
	return ok;
}

static bool origin_eq(const struct symcache_origin *a, const struct symcache_origin *b)
{
	return strcmp(a->path, b->path) == 0 && a->size == b->size && a->ino == b->ino &&
	       a->mtime_s == b->mtime_s && a->mtime_ns == b->mtime_ns;
}

int symcache_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			    const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			    char **debuginfo_file_name)
{
	/* Only a debug file found by build-id is cached, and it is looked up
	 * here as libdwfl's search would find it (dwfl_standard_find_debuginfo
	 * looks by build-id first and takes what it finds): the entry is used
	 * while that file is the one it was made from (path, size, inode,
	 * mtime), so a debug package removed or upgraded since is seen.
	 * Calling dwfl_standard_find_debuginfo first is no way round: it keeps
	 * the file it opened as the module's debug file, whatever fd we
	 * return. */
	const struct symcache_module *sm = userdata ? *userdata : NULL;
	const char *dir = sm ? sm->dir : NULL;
	const char *search = sm && sm->search ? *sm->search : NULL;
	const unsigned char *bid;
	GElf_Addr vaddr;
	char found[4096];
	int bid_len = dir ? dwfl_module_build_id(mod, &bid, &vaddr) : 0;
	if (bid_len <= 1 || bid_len > SYMCACHE_MAX_BID ||
	    !find_by_build_id(search ? search : DEFAULT_SEARCH, bid, bid_len, found, sizeof(found)) ||
	    strncmp(found, "/proc/", 6) == 0)   /* another process's root: a path for this run only */
		goto standard;
	struct symcache_origin now, was;
	uint64_t len, size;
	if (!symcache_origin_of(found, &now))
		goto standard;
	int cfd = symcache_open(dir, SYMCACHE_KIND_DEBUG, bid, (size_t)bid_len, &len, &was);
	if (cfd >= 0 && !origin_eq(&now, &was)) {
		close(cfd);
		cfd = -1;
	}
	if (cfd < 0) {
		uint64_t bound = symcache_bound();
		int fd = open(found, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			goto standard;
		if (has_build_id(fd, bid, bid_len) && symcache_elf_compressed(fd, &size) && size <= bound / 2)
			cfd = symcache_store(dir, SYMCACHE_KIND_DEBUG, bid, (size_t)bid_len, &now, write_decompressed,
					     &fd, bound);
		close(fd);
		if (cfd < 0)
			goto standard;
	}
	/* libdwfl keeps the name for messages and dwfl_module_info; it opens
	 * by name only when given no fd. */
	char name[2 * SYMCACHE_MAX_BID + 16], *path = NULL;
	symcache_entry_name(name, sizeof(name), SYMCACHE_KIND_DEBUG, bid, (size_t)bid_len);
	if (asprintf(&path, "%s/%s", dir, name) >= 0) {
		free(*debuginfo_file_name);
		*debuginfo_file_name = path;
	}
	lseek(cfd, 0, SEEK_SET);
	return cfd;
standard:
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
					    debuginfo_file_name);
}

/* The section table's CRC: each section's name, type, flags and size. */
static bool crc_section(void *arg, Elf_Scn *scn, const GElf_Shdr *sh, const char *name)
{
	(void)scn;
	uLong *c = arg;
	uint64_t v[3] = { sh->sh_type, sh->sh_flags, sh->sh_size };
	*c = crc32_z(*c, (const Bytef *)(name ? name : ""), name ? strlen(name) + 1 : 1);
	*c = crc32_z(*c, (const Bytef *)v, sizeof(v));
	return true;
}

/* Whether ELF file path carries build-id bid (on their common length);
 * its size and the CRC of its section table. */
static bool main_identity(const char *path, const uint8_t *bid, size_t bid_len, uint64_t *size, uint32_t *crc)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return false;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return false;
	}
	*size = (uint64_t)st.st_size;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *p;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &p) : -1;
	size_t common = n > 0 && (size_t)n < bid_len ? (size_t)n : bid_len;
	uLong c = crc32_z(0, Z_NULL, 0);
	bool ok = n > 0 && bid_len > 0 && memcmp(p, bid, common) == 0 && each_section(e, crc_section, &c);
	*crc = (uint32_t)c;
	if (e)
		elf_end(e);
	close(fd);
	return ok;
}

bool symcache_stamp(const char *path, const char *search, const uint8_t *bid, size_t bid_len,
		    struct symcache_stamp *stamp)
{
	char found[4096];
	memset(stamp, 0, sizeof(*stamp));
	if (bid_len > SYMCACHE_MAX_BID || !main_identity(path, bid, bid_len, &stamp->main_size, &stamp->main_sections))
		return false;
	if (!find_by_build_id(search ? search : DEFAULT_SEARCH, bid, (int)bid_len, found, sizeof(found)))
		return true;
	return strncmp(found, "/proc/", 6) != 0 && symcache_origin_of(found, &stamp->debug);
}
