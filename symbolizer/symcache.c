/* The symbolizer's cache on disk: decompressed copies of debug files, keyed
 * by build-id (symcache.h has the contract, docs/symbolization.md the why).
 *
 * Opening a separate debug file whose .debug_* sections are compressed costs
 * libdw an inflate of every section, however few addresses are looked up
 * (about 85% of symbolizing a short NumPy/OpenCV run).  A decompressed copy
 * is mapped instead: libdw then touches only the pages it reads. */
#define _GNU_SOURCE /* asprintf */
#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "grow.h"
#include "symbolizer.h"
#include "symcache.h"

#define TRAILER_MAGIC "EMBRSYMC"
#define FORMAT_VERSION 1u
#define MAX_BID 64
#define DEFAULT_SEARCH ":.debug:/usr/lib/debug"   /* libdwfl's, when the module names none */
/* A temporary file this old was left by a run that died while writing it. */
#define STALE_TMP_S 600

struct trailer {
	char magic[8];
	uint32_t version, kind;
	uint64_t payload_len;
	uint32_t payload_crc, bid_len;
	uint8_t bid[MAX_BID];
	struct symcache_origin origin;
	uint32_t trailer_crc;   /* of every field above */
	uint32_t pad;
};

static bool disk_cache_off;

void ember_symbolizer_set_disk_cache(bool on)
{
	disk_cache_off = !on;
}

uint64_t symcache_bound(void)
{
	const char *mb = getenv("EMBER_SYMBOL_CACHE_MB");
	if (mb && mb[0]) {
		char *end;
		unsigned long long v = strtoull(mb, &end, 10);
		if (*end == 0 && v < (1ull << 40))
			return (uint64_t)v << 20;
	}
	return SYMCACHE_DEFAULT_BOUND;
}

char *symcache_dir_new(void)
{
	if (disk_cache_off || symcache_bound() == 0)
		return NULL;
	/* XDG: a relative XDG_CACHE_HOME is invalid and ignored. */
	const char *x = getenv("XDG_CACHE_HOME");
	const char *h = getenv("HOME");
	char *dir = NULL;
	int r = -1;
	if (x && x[0] == '/')
		r = asprintf(&dir, "%s/ember/symbols", x);
	else if (h && h[0] == '/')
		r = asprintf(&dir, "%s/.cache/ember/symbols", h);
	return r < 0 ? NULL : dir;
}

static uint32_t crc_of(const void *p, size_t n)
{
	return (uint32_t)crc32_z(crc32_z(0, Z_NULL, 0), p, n);
}

/* CRC32 of the first len bytes of fd; false when they cannot be read. */
static bool crc_fd(int fd, uint64_t len, uint32_t *crc)
{
	if (len == 0) {
		*crc = crc_of("", 0);
		return true;
	}
	if (len > SIZE_MAX)
		return false;
	void *p = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return false;
	*crc = crc_of(p, (size_t)len);
	munmap(p, (size_t)len);
	return true;
}

/* The build-id in lower-case hex into hex (room for 2 * MAX_BID + 1). */
static void bid_hex(char *hex, const uint8_t *bid, size_t bid_len)
{
	static const char digits[] = "0123456789abcdef";
	size_t n = bid_len < MAX_BID ? bid_len : MAX_BID;
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[bid[i] >> 4];
		hex[2 * i + 1] = digits[bid[i] & 15];
	}
	hex[2 * n] = 0;
}

static void entry_name(char *buf, size_t size, uint32_t kind, const uint8_t *bid, size_t bid_len)
{
	char hex[2 * MAX_BID + 1];
	bid_hex(hex, bid, bid_len);
	snprintf(buf, size, "%s%s", hex, kind == SYMCACHE_KIND_DEBUG ? ".debug" : ".sym");
}

static bool trailer_ok(const struct trailer *t, uint32_t kind, const uint8_t *bid, size_t bid_len)
{
	return memcmp(t->magic, TRAILER_MAGIC, 8) == 0 && t->version == FORMAT_VERSION && t->kind == kind &&
	       t->bid_len == bid_len && memcmp(t->bid, bid, bid_len) == 0 &&
	       t->trailer_crc == crc_of(t, offsetof(struct trailer, trailer_crc));
}

int symcache_open(const char *dir, uint32_t kind, const uint8_t *bid, size_t bid_len, uint64_t *len,
		  struct symcache_origin *origin)
{
	if (!dir || bid_len == 0 || bid_len > MAX_BID)
		return -1;
	char name[2 * MAX_BID + 16], path[4096];
	entry_name(name, sizeof(name), kind, bid, bid_len);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	struct trailer t;
	uint32_t crc;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < sizeof(t) ||
	    pread(fd, &t, sizeof(t), st.st_size - (off_t)sizeof(t)) != (ssize_t)sizeof(t) ||
	    !trailer_ok(&t, kind, bid, bid_len) || t.payload_len != (uint64_t)st.st_size - sizeof(t) ||
	    !crc_fd(fd, t.payload_len, &crc) || crc != t.payload_crc) {
		/* Corrupt, truncated, another format version: never trusted,
		 * deleted so that this run's copy replaces it. */
		close(fd);
		unlink(path);
		return -1;
	}
	futimens(fd, NULL);   /* just used (may fail on another user's entry: no matter) */
	*len = t.payload_len;
	if (origin) {
		*origin = t.origin;
		origin->path[sizeof(origin->path) - 1] = 0;
	}
	return fd;
}

static int mkdir_p(const char *dir)
{
	char p[4096];
	size_t n = strlen(dir);
	if (n == 0 || n >= sizeof(p))
		return -1;
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		char c = p[i];
		p[i] = 0;
		if (mkdir(p, 0755) != 0 && errno != EEXIST)
			return -1;
		p[i] = c;
	}
	struct stat st;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

int symcache_store(const char *dir, uint32_t kind, const uint8_t *bid, size_t bid_len,
		   const struct symcache_origin *origin, symcache_writer writer, void *arg, uint64_t bound)
{
	static unsigned counter;
	if (!dir || bid_len == 0 || bid_len > MAX_BID || mkdir_p(dir) != 0)
		return -1;
	char name[2 * MAX_BID + 16], path[4096], tmp[4096];
	entry_name(name, sizeof(name), kind, bid, bid_len);
	unsigned n = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.tmp-%d-%u-%s", dir, (int)getpid(), n, name) >= sizeof(tmp))
		return -1;
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	struct stat st;
	struct trailer t = { .version = FORMAT_VERSION, .kind = kind, .bid_len = (uint32_t)bid_len };
	memcpy(t.magic, TRAILER_MAGIC, 8);
	memcpy(t.bid, bid, bid_len);
	if (origin)
		t.origin = *origin;
	if (writer(arg, fd) != 0 || fstat(fd, &st) != 0)
		goto fail;
	t.payload_len = (uint64_t)st.st_size;
	if (!crc_fd(fd, t.payload_len, &t.payload_crc))
		goto fail;
	t.trailer_crc = crc_of(&t, offsetof(struct trailer, trailer_crc));
	if (pwrite(fd, &t, sizeof(t), st.st_size) != (ssize_t)sizeof(t) || rename(tmp, path) != 0)
		goto fail;
	symcache_trim(dir, bound, name);
	return fd;
fail:
	close(fd);
	unlink(tmp);
	return -1;
}

struct dir_entry {
	char *name;
	uint64_t size;
	struct timespec mtime;
};

static int older_first(const void *pa, const void *pb)
{
	const struct dir_entry *a = pa, *b = pb;
	if (a->mtime.tv_sec != b->mtime.tv_sec)
		return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
	if (a->mtime.tv_nsec != b->mtime.tv_nsec)
		return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
	return strcmp(a->name, b->name);
}

void symcache_trim(const char *dir, uint64_t bound, const char *keep)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dir_entry *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	time_t now = time(NULL);
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		if (de->d_name[0] == '.' && strncmp(de->d_name, ".tmp-", 5) != 0)
			continue;   /* ".", ".." */
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
			continue;
		bool tmp = strncmp(de->d_name, ".tmp-", 5) == 0;
		if (tmp && st.st_mtime + STALE_TMP_S < now) {
			unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		total += (uint64_t)st.st_size;
		if (tmp || (keep && strcmp(de->d_name, keep) == 0))
			continue;   /* being written, or just written: never evicted */
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct dir_entry *nv = realloc(v, nc * sizeof(*v));
			if (!nv)
				break;
			v = nv;
			cap = nc;
		}
		if (!(v[n].name = strdup(de->d_name)))
			break;
		v[n].size = (uint64_t)st.st_size;
		v[n].mtime = st.st_mtim;
		n++;
	}
	if (total > bound && n) {
		qsort(v, n, sizeof(*v), older_first);
		for (size_t i = 0; i < n && total > bound; i++)
			if (unlinkat(dirfd(d), v[i].name, 0) == 0 || errno == ENOENT)
				total -= v[i].size;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	closedir(d);
}

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
	char hex[2 * MAX_BID + 1];
	if (bid_len < 2)
		return false;
	bid_hex(hex, bid, (size_t)bid_len);
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
	if (bid_len <= 1 || bid_len > MAX_BID ||
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
	char name[2 * MAX_BID + 16], *path = NULL;
	entry_name(name, sizeof(name), SYMCACHE_KIND_DEBUG, bid, (size_t)bid_len);
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
	if (bid_len > MAX_BID || !main_identity(path, bid, bid_len, &stamp->main_size, &stamp->main_sections))
		return false;
	if (!find_by_build_id(search ? search : DEFAULT_SEARCH, bid, (int)bid_len, found, sizeof(found)))
		return true;
	return strncmp(found, "/proc/", 6) != 0 && symcache_origin_of(found, &stamp->debug);
}

static void buf_put(struct symcache_buf *b, const void *p, size_t n)
{
	if (b->oom || EMBER_GROW(b->p, b->cap, b->n + n) != 0) {
		b->oom = true;
		return;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

/* u16 length, the bytes, a NUL (so that loads point into the mapping). */
static void buf_str(struct symcache_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n > 0xfffe)
		b->oom = true;   /* never truncated: the entry is not written */
	uint16_t len = (uint16_t)n;
	buf_put(b, &len, sizeof(len));
	buf_put(b, s ? s : "", len);
	buf_put(b, "", 1);
}

/* Record: u64 addr, u8 frames; a frame: u8 flags (1 inlined, 2 has_symbol,
 * 4 fallback), u32 line, u16 + bytes function, u16 + bytes file. */
void symcache_buf_add(struct symcache_buf *b, uint64_t addr, const struct symcache_frame *f, size_t n)
{
	if (n == 0 || n > 255)
		return;
	uint8_t nf = (uint8_t)n;
	buf_put(b, &addr, sizeof(addr));
	buf_put(b, &nf, 1);
	for (size_t i = 0; i < n; i++) {
		uint8_t flags = (uint8_t)((f[i].inlined ? 1 : 0) | (f[i].has_symbol ? 2 : 0) | (f[i].function ? 0 : 4));
		buf_put(b, &flags, 1);
		buf_put(b, &f[i].line, sizeof(f[i].line));
		buf_str(b, f[i].function);
		buf_str(b, f[i].file);
	}
	b->count++;
}

void symcache_buf_free(struct symcache_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

struct results_arg {
	const struct symcache_stamp *stamp;
	const struct symcache_buf *b;
};

static int write_results(void *arg, int fd)
{
	const struct results_arg *a = arg;
	struct iovec_like { const void *p; size_t n; } parts[] = {
		{ a->stamp, sizeof(*a->stamp) }, { &a->b->count, sizeof(a->b->count) }, { a->b->p, a->b->n },
	};
	off_t off = 0;
	for (size_t i = 0; i < 3; i++) {
		const uint8_t *p = parts[i].p;
		for (size_t done = 0; done < parts[i].n;) {
			ssize_t w = pwrite(fd, p + done, parts[i].n - done, off);
			if (w <= 0)
				return -1;
			done += (size_t)w;
			off += w;
		}
	}
	return 0;
}

int symcache_results_save(const char *dir, const uint8_t *bid, size_t bid_len, const struct symcache_stamp *stamp,
			  const struct symcache_buf *b, uint64_t bound)
{
	if (b->oom || b->count == 0 || b->n > bound / 4)
		return -1;
	struct results_arg a = { stamp, b };
	int fd = symcache_store(dir, SYMCACHE_KIND_RESULTS, bid, bid_len, NULL, write_results, &a, bound);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* Bounds-checked reads from [*p, end). */
static bool rd(const uint8_t **p, const uint8_t *end, void *out, size_t n)
{
	if ((size_t)(end - *p) < n)
		return false;
	memcpy(out, *p, n);
	*p += n;
	return true;
}

static bool rd_str(const uint8_t **p, const uint8_t *end, const char **out)
{
	uint16_t len;
	if (!rd(p, end, &len, sizeof(len)) || (size_t)(end - *p) <= len || (*p)[len] != 0 ||
	    memchr(*p, 0, len) != NULL)
		return false;
	*out = (const char *)*p;
	*p += len + 1;
	return true;
}

long symcache_results_load(const char *dir, const uint8_t *bid, size_t bid_len, const struct symcache_stamp *stamp,
			   symcache_result_fn fn, void *arg)
{
	uint64_t len;
	int fd = symcache_open(dir, SYMCACHE_KIND_RESULTS, bid, bid_len, &len, NULL);
	if (fd < 0)
		return -1;
	long got = -1;
	struct symcache_stamp was;
	uint32_t count;
	uint8_t *data = len && len < SIZE_MAX ? mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	close(fd);
	if (data == MAP_FAILED)
		return -1;
	const uint8_t *p = data, *end = data + len;
	/* Two passes: nothing is handed out from an entry that does not parse
	 * to its end. */
	if (!rd(&p, end, &was, sizeof(was)) || memcmp(&was, stamp, sizeof(was)) != 0 ||
	    !rd(&p, end, &count, sizeof(count)))
		goto out;
	const uint8_t *records = p;
	for (int pass = 0; pass < 2; pass++) {
		p = records;
		uint32_t i;
		for (i = 0; i < count; i++) {
			uint64_t addr;
			uint8_t nf;
			struct symcache_frame f[255];
			if (!rd(&p, end, &addr, sizeof(addr)) || !rd(&p, end, &nf, 1) || nf == 0)
				break;
			uint8_t k;
			for (k = 0; k < nf; k++) {
				uint8_t flags;
				if (!rd(&p, end, &flags, 1) || !rd(&p, end, &f[k].line, sizeof(f[k].line)) ||
				    !rd_str(&p, end, &f[k].function) || !rd_str(&p, end, &f[k].file))
					break;
				f[k].inlined = flags & 1;
				f[k].has_symbol = flags & 2;
				if (flags & 4)
					f[k].function = NULL;
			}
			if (k < nf)
				break;
			if (pass == 1)
				fn(arg, addr, f, nf);
		}
		if (i < count || p != end)
			break;
		if (pass == 1)
			got = (long)count;
	}
out:
	munmap(data, (size_t)len);
	return got;
}
