/* The symbolizer's cache on disk (symcache.h has the contract,
 * docs/symbolization.md the why): its folder and bound, entries with their
 * checked trailers, written whole or not at all, the least recently used
 * trimmed; and the stored results' format.  What an entry is made of
 * (debug files, the files results were made from) is symcache_elf.c's. */
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
/* A temporary file this old was left by a run that died while writing it. */
#define STALE_TMP_S 600

struct trailer {
	char magic[8];
	uint32_t version, kind;
	uint64_t payload_len;
	uint32_t payload_crc, bid_len;
	uint8_t bid[SYMCACHE_MAX_BID];
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

void symcache_bid_hex(char *hex, const uint8_t *bid, size_t bid_len)
{
	static const char digits[] = "0123456789abcdef";
	size_t n = bid_len < SYMCACHE_MAX_BID ? bid_len : SYMCACHE_MAX_BID;
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[bid[i] >> 4];
		hex[2 * i + 1] = digits[bid[i] & 15];
	}
	hex[2 * n] = 0;
}

void symcache_entry_name(char *buf, size_t size, uint32_t kind, const uint8_t *bid, size_t bid_len)
{
	char hex[2 * SYMCACHE_MAX_BID + 1];
	symcache_bid_hex(hex, bid, bid_len);
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
	if (!dir || bid_len == 0 || bid_len > SYMCACHE_MAX_BID)
		return -1;
	char name[2 * SYMCACHE_MAX_BID + 16], path[4096];
	symcache_entry_name(name, sizeof(name), kind, bid, bid_len);
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
	if (!dir || bid_len == 0 || bid_len > SYMCACHE_MAX_BID || mkdir_p(dir) != 0)
		return -1;
	char name[2 * SYMCACHE_MAX_BID + 16], path[4096], tmp[4096];
	symcache_entry_name(name, sizeof(name), kind, bid, bid_len);
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
