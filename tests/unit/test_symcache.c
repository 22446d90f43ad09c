/* symbolizer/symcache.c, the symbolizer's cache on disk, in a temporary
 * XDG_CACHE_HOME of its own:
 * - an entry round-trips (payload, origin); a corrupt, truncated,
 *   other-version or other-build-id entry is not used and is deleted;
 * - four processes writing the same entry at once while another reads it:
 *   every read sees one writer's whole payload, no temporary file is left;
 * - two files of one build-id, one stripped: each gets its own symbols;
 * - over its bound the folder loses its least recently used entries (a hit
 *   counts as a use);
 * - a cache folder that cannot be made (under /dev/null) or no HOME: stores
 *   fail, lookups miss, the symbolizer works as without a cache;
 * - symbolization through the public API is the same, frame for frame, with
 *   the cache off, cold, warm, with only the decompressed debug copies and
 *   with only the stored results, for libc.so.6 (whose debug file from
 *   libc6-dbg has compressed sections) and Debian's python3.11 when they are
 *   there; and warm costs less CPU than off (the copy is mapped, not
 *   inflated). */
#define _GNU_SOURCE
#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "symbolizer.h"
#include "symcache.h"

static char top[256], dir[512];

static const uint8_t BID_A[20] = { 0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 };
static const uint8_t BID_B[20] = { 0xbb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 };

struct pattern {
	size_t len;
	uint8_t byte;
};

static int write_pattern(void *arg, int fd)
{
	const struct pattern *p = arg;
	uint8_t buf[4096];
	memset(buf, p->byte, sizeof(buf));
	for (size_t done = 0; done < p->len;) {
		size_t n = p->len - done < sizeof(buf) ? p->len - done : sizeof(buf);
		if (write(fd, buf, n) != (ssize_t)n)
			return -1;
		done += n;
	}
	return 0;
}

static int store(const uint8_t *bid, size_t len, uint8_t byte, uint64_t bound)
{
	struct pattern p = { len, byte };
	struct symcache_origin o;
	memset(&o, 0, sizeof(o));
	snprintf(o.path, sizeof(o.path), "/origin/%u", byte);
	o.size = len;
	int fd = symcache_store(dir, SYMCACHE_KIND_DEBUG, bid, 20, &o, write_pattern, &p, bound);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* The byte the entry for bid is made of, 0 when there is no good entry, -1
 * when its payload is not one byte throughout. */
static int lookup(const uint8_t *bid, uint64_t *len_out)
{
	uint64_t len;
	struct symcache_origin o;
	int fd = symcache_open(dir, SYMCACHE_KIND_DEBUG, bid, 20, &len, &o);
	if (fd < 0)
		return 0;
	uint8_t *buf = malloc(len ? len : 1);
	int r = buf && pread(fd, buf, len, 0) == (ssize_t)len ? buf[0] : -1;
	for (uint64_t i = 0; r > 0 && i < len; i++)
		if (buf[i] != (uint8_t)r)
			r = -1;
	char want[64];
	snprintf(want, sizeof(want), "/origin/%d", r);
	if (r > 0 && (strcmp(o.path, want) != 0 || o.size != len))
		r = -1;
	free(buf);
	close(fd);
	if (len_out)
		*len_out = len;
	return r;
}

static void entry_path(char *buf, size_t size, const uint8_t *bid)
{
	int o = snprintf(buf, size, "%s/", dir);
	for (int i = 0; i < 20; i++)
		o += snprintf(buf + o, size - (size_t)o, "%02x", bid[i]);
	snprintf(buf + o, size - (size_t)o, ".debug");
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static void test_round_trip_and_damage(void)
{
	char path[1024];
	entry_path(path, sizeof(path), BID_A);
	uint64_t len = 0;
	CHECK(lookup(BID_A, NULL) == 0);    /* nothing yet */
	CHECK(store(BID_A, 100000, 7, 1 << 30) == 0);
	CHECK(lookup(BID_A, &len) == 7);
	CHECK(len == 100000);
	CHECK(lookup(BID_B, NULL) == 0);    /* another build-id */

	/* An entry under another build-id's name (a copied file) is not it. */
	char other[1024];
	entry_path(other, sizeof(other), BID_B);
	char cmd[2200];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", path, other);
	CHECK(system(cmd) == 0);
	CHECK(lookup(BID_B, NULL) == 0);
	CHECK(!exists(other));

	/* One byte of the payload changed. */
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0 && pwrite(fd, "\x08", 1, 5000) == 1);
	close(fd);
	CHECK(lookup(BID_A, NULL) == 0);
	CHECK_MSG(!exists(path), "a corrupt entry is deleted");

	/* Truncated: a byte short, and cut in the payload. */
	CHECK(store(BID_A, 100000, 7, 1 << 30) == 0);
	struct stat st;
	CHECK(stat(path, &st) == 0 && truncate(path, st.st_size - 1) == 0);
	CHECK(lookup(BID_A, NULL) == 0);
	CHECK(store(BID_A, 100000, 7, 1 << 30) == 0);
	CHECK(truncate(path, 50000) == 0);
	CHECK(lookup(BID_A, NULL) == 0);
	CHECK(store(BID_A, 10, 7, 1 << 30) == 0);
	CHECK(truncate(path, 0) == 0);
	CHECK(lookup(BID_A, NULL) == 0);

	/* Another format version, its trailer otherwise intact (its own CRC
	 * recomputed): refused by the version alone. */
	CHECK(store(BID_A, 1000, 9, 1 << 30) == 0);
	CHECK(lookup(BID_A, NULL) == 9);
	CHECK(stat(path, &st) == 0);
	uint8_t tr[4096];
	size_t tlen = (size_t)st.st_size - 1000;   /* the trailer */
	fd = open(path, O_RDWR);
	CHECK(tlen < sizeof(tr) && pread(fd, tr, tlen, 1000) == (ssize_t)tlen);
	uint32_t version;
	memcpy(&version, tr + 8, 4);
	CHECK(version == 1);
	version = 2;
	memcpy(tr + 8, &version, 4);
	/* the trailer's CRC covers everything before it: its last 8 bytes are
	 * the CRC and padding */
	uint32_t crc = (uint32_t)crc32_z(crc32_z(0, Z_NULL, 0), tr, tlen - 8);
	memcpy(tr + tlen - 8, &crc, 4);
	CHECK(pwrite(fd, tr, tlen, 1000) == (ssize_t)tlen);
	close(fd);
	CHECK_MSG(lookup(BID_A, NULL) == 0, "another format version");

	/* Garbage of every short length. */
	for (int n = 0; n < 200; n += 13) {
		FILE *f = fopen(path, "w");
		for (int i = 0; i < n; i++)
			fputc(i * 7, f);
		fclose(f);
		CHECK(lookup(BID_A, NULL) == 0);
	}
	/* Replaced by a good one after all that. */
	CHECK(store(BID_A, 3000, 5, 1 << 30) == 0);
	CHECK(lookup(BID_A, NULL) == 5);
}

static int count_tmp(void)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += strncmp(de->d_name, ".tmp-", 5) == 0;
	if (d)
		closedir(d);
	return n;
}

static void test_concurrent_writers(void)
{
	pid_t kids[4];
	for (int k = 0; k < 4; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			int bad = 0;
			for (int i = 0; i < 30; i++)
				bad += store(BID_B, 200000 + (size_t)k * 12345 + (size_t)i * 17, (uint8_t)(10 + k), 1 << 30) != 0;
			_exit(bad ? 1 : 0);
		}
	}
	int seen = 0, torn = 0;
	for (int i = 0; i < 300; i++) {
		int r = lookup(BID_B, NULL);
		if (r < 0)
			torn++;
		else if (r > 0)
			seen++;
	}
	int failed = 0;
	for (int k = 0; k < 4; k++) {
		int st;
		waitpid(kids[k], &st, 0);
		failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	CHECK_MSG(failed == 0, "every writer's stores succeed");
	CHECK_MSG(torn == 0, "no reader sees a mixed or partial payload");
	int last = lookup(BID_B, NULL);
	CHECK(last >= 10 && last <= 13);
	CHECK_MSG(count_tmp() == 0, "no temporary file left");
	printf("concurrent: %d good reads while 4 processes wrote\n", seen);
}

static void set_mtime(const uint8_t *bid, time_t t)
{
	char path[1024];
	entry_path(path, sizeof(path), bid);
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };
	CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0);
}

static void test_lru(void)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	uint8_t b[4][20];
	for (int i = 0; i < 4; i++) {
		memcpy(b[i], BID_A, 20);
		b[i][19] = (uint8_t)(0x40 + i);
	}
	const uint64_t size = 100000, bound = 3 * (size + 2000);
	time_t now = time(NULL);
	for (int i = 0; i < 3; i++) {
		CHECK(store(b[i], size, (uint8_t)(20 + i), bound) == 0);
		set_mtime(b[i], now - 100 + i);   /* 0 oldest, then 1, then 2 */
	}
	for (int i = 0; i < 3; i++)
		CHECK(lookup(b[i], NULL) == 20 + i);   /* all fit; each lookup is a use */
	set_mtime(b[0], now - 50);
	set_mtime(b[1], now - 60);
	set_mtime(b[2], now - 70);
	CHECK(lookup(b[2], NULL) == 22);          /* 2 is now the most recent */
	CHECK(store(b[3], size, 23, bound) == 0); /* over the bound: 1 goes */
	CHECK(lookup(b[3], NULL) == 23);
	CHECK(lookup(b[2], NULL) == 22);
	CHECK(lookup(b[0], NULL) == 20);
	CHECK_MSG(lookup(b[1], NULL) == 0, "the least recently used entry was evicted");
	/* An entry bigger than the whole bound is kept alone, nothing else. */
	CHECK(store(b[1], 2 * bound, 21, bound) == 0);
	CHECK(lookup(b[1], NULL) == 21);
	CHECK(lookup(b[0], NULL) == 0 && lookup(b[2], NULL) == 0 && lookup(b[3], NULL) == 0);
	/* A temporary file a crashed run left an hour ago goes at the next trim. */
	char stale[700];
	snprintf(stale, sizeof(stale), "%s/.tmp-1-0-dead.debug", dir);
	FILE *f = fopen(stale, "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	struct timespec old[2] = { { now - 3600, 0 }, { now - 3600, 0 } };
	CHECK(utimensat(AT_FDCWD, stale, old, 0) == 0);
	symcache_trim(dir, bound, NULL);
	CHECK(!exists(stale));
}

static void test_unwritable(void)
{
	char saved[sizeof(dir)];
	snprintf(saved, sizeof(saved), "%s", dir);
	snprintf(dir, sizeof(dir), "/dev/null/ember/symbols");
	CHECK(store(BID_A, 100, 1, 1 << 30) != 0);
	CHECK(lookup(BID_A, NULL) == 0);
	snprintf(dir, sizeof(dir), "%s", saved);

	/* No HOME and no XDG_CACHE_HOME: no folder; a relative
	 * XDG_CACHE_HOME is ignored (the XDG rule). */
	char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	unsetenv("HOME");
	unsetenv("XDG_CACHE_HOME");
	CHECK(symcache_dir_new() == NULL);
	setenv("XDG_CACHE_HOME", "relative/dir", 1);
	CHECK(symcache_dir_new() == NULL);
	setenv("HOME", "/home/someone", 1);
	char *d = symcache_dir_new();
	CHECK_STR(d, "/home/someone/.cache/ember/symbols");
	free(d);
	setenv("EMBER_SYMBOL_CACHE_MB", "0", 1);
	CHECK(symcache_dir_new() == NULL);
	unsetenv("EMBER_SYMBOL_CACHE_MB");
	ember_symbolizer_set_disk_cache(false);
	CHECK(symcache_dir_new() == NULL);
	ember_symbolizer_set_disk_cache(true);
	if (home)
		setenv("HOME", home, 1);
	free(home);
	setenv("XDG_CACHE_HOME", top, 1);
}

/* ---- the symbolizer through its public API ---- */

struct module_file {
	char path[512];
	uint8_t bid[64];
	size_t bid_len;
	uint64_t lo, hi;       /* executable PT_LOAD span */
};

static bool read_module(const char *path, struct module_file *mf)
{
	memset(mf, 0, sizeof(*mf));
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	const void *p;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &p) : -1;
	size_t phnum = 0;
	if (n > 0 && n <= 64 && elf_getphdrnum(e, &phnum) == 0) {
		memcpy(mf->bid, p, (size_t)n);
		mf->bid_len = (size_t)n;
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
				mf->lo = ph.p_vaddr;
				mf->hi = ph.p_vaddr + ph.p_memsz;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	snprintf(mf->path, sizeof(mf->path), "%s", path);
	return mf->bid_len && mf->hi > mf->lo;
}

/* The module's debug file by build-id, when it has compressed sections. */
static bool compressed_debug(const struct module_file *mf)
{
	char path[700];
	int o = snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/", mf->bid[0]);
	for (size_t i = 1; i < mf->bid_len; i++)
		o += snprintf(path + o, sizeof(path) - (size_t)o, "%02x", mf->bid[i]);
	snprintf(path + o, sizeof(path) - (size_t)o, ".debug");
	int fd = open(path, O_RDONLY);
	uint64_t size;
	bool r = fd >= 0 && symcache_elf_compressed(fd, &size);
	if (fd >= 0)
		close(fd);
	return r;
}


static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Every address's frames as one text (function, file, line, module, flags
 * of each frame), and the CPU it took. */
static char *symbolize_all(const struct module_file *mf, uint64_t naddr, double *ms)
{
	size_t cap = 1 << 20, n = 0;
	char *out = malloc(cap);
	double t0 = cpu_ms();
	struct ember_symbolizer *s = ember_symbolizer_new();
	ember_symbolizer_add_module(s, 3, mf->path, mf->path, mf->bid, mf->bid_len);
	uint64_t step = (mf->hi - mf->lo) / naddr;
	for (uint64_t i = 0; i < naddr; i++) {
		struct ember_sym_frame f[32];
		uint64_t addr = mf->lo + i * step + (i * 7) % (step ? step : 1);
		size_t k = ember_symbolize(s, 3, addr, f, 32);
		for (size_t j = 0; j < k; j++) {
			int w;
			while ((w = snprintf(out + n, cap - n, "%" PRIx64 " %s %s:%u %s %d%d\n", addr, f[j].function,
					      f[j].file, f[j].line, f[j].module, f[j].inlined, f[j].has_symbol)) >= 0 &&
			       (size_t)w >= cap - n) {
				cap *= 2;
				out = realloc(out, cap);
			}
			n += (size_t)w;
		}
	}
	ember_symbolizer_free(s);   /* stores the results */
	*ms = cpu_ms() - t0;
	return out;
}

static void remove_kind(const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name), sl = strlen(suffix);
		if (l > sl && strcmp(de->d_name + l - sl, suffix) == 0)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	if (d)
		closedir(d);
}

static void test_same_results(const char *path)
{
	struct module_file mf;
	if (!read_module(path, &mf)) {
		printf("SKIP same results: %s is not there or has no build-id\n", path);
		return;
	}
	bool compressed = compressed_debug(&mf);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	double off_ms, cold_ms, warm_ms, copy_ms, results_ms, broken_ms;
	ember_symbolizer_set_disk_cache(false);
	char *off = symbolize_all(&mf, 1500, &off_ms);
	ember_symbolizer_set_disk_cache(true);
	char *cold = symbolize_all(&mf, 1500, &cold_ms);
	char *warm = symbolize_all(&mf, 1500, &warm_ms);
	remove_kind(".sym");                 /* only the decompressed debug copy */
	char *copy = symbolize_all(&mf, 1500, &copy_ms);
	remove_kind(".debug");               /* only the stored results */
	char *results = symbolize_all(&mf, 1500, &results_ms);
	/* Every entry damaged: ignored, replaced. */
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.') {
			int fd = openat(dirfd(d), de->d_name, O_RDWR);
			if (fd >= 0) {
				CHECK(pwrite(fd, "XYZ", 3, 64) == 3);
				close(fd);
			}
		}
	if (d)
		closedir(d);
	char *broken = symbolize_all(&mf, 1500, &broken_ms);
	CHECK_MSG(strcmp(off, cold) == 0, path);
	CHECK_MSG(strcmp(off, warm) == 0, path);
	CHECK_MSG(strcmp(off, copy) == 0, path);
	CHECK_MSG(strcmp(off, results) == 0, path);
	CHECK_MSG(strcmp(off, broken) == 0, path);
	CHECK_MSG(strstr(off, " 01\n") != NULL, "some addresses have symbols");
	printf("%s (%s debug sections): 1500 addresses; CPU ms off %.1f, cold %.1f, warm %.1f, "
	       "debug copy only %.1f, results only %.1f, damaged entries %.1f\n", path,
	       compressed ? "compressed" : "no compressed", off_ms, cold_ms, warm_ms, copy_ms, results_ms,
	       broken_ms);
	if (compressed) {
		/* Every result stored: the module is never opened.  (A module
		 * without DWARF costs little to open and look up in, about what
		 * reading its stored results does: no claim there.) */
		CHECK_MSG(warm_ms < off_ms * 0.5 || off_ms < 5, "warm costs less than off");
		CHECK_MSG(results_ms < off_ms * 0.5 || off_ms < 5, "stored results spare the lookups");
		/* A few addresses: inflating the debug sections is then most of
		 * the cost without the cache, and mapping the copy a small part
		 * (a profile's few dozen addresses in an LTO build add about a
		 * millisecond each, cache or not).  Best of three each;
		 * generous: half. */
		double best_off = 1e9, best_copy = 1e9, ms;
		for (int r = 0; r < 3; r++) {
			ember_symbolizer_set_disk_cache(false);
			free(symbolize_all(&mf, 8, &ms));
			best_off = ms < best_off ? ms : best_off;
			ember_symbolizer_set_disk_cache(true);
			remove_kind(".sym");
			free(symbolize_all(&mf, 8, &ms));
			best_copy = ms < best_copy ? ms : best_copy;
		}
		printf("  8 addresses: CPU ms off %.1f, decompressed debug copy %.1f\n", best_off, best_copy);
		CHECK_MSG(best_copy < best_off * 0.5, "the decompressed copy saves the inflate");
	}
	free(off);
	free(cold);
	free(warm);
	free(copy);
	free(results);
	free(broken);
}

/* Named by .symtab alone (an executable exports nothing in .dynsym). */
__attribute__((noinline)) int symcache_probe_fn(int x);
__attribute__((noinline)) int symcache_probe_fn(int x)
{
	return x * 3 + (int)getpid();
}

/* The binutils of this test's own architecture: under qemu-user on an
 * x86-64 host the cross tools (the host's objcopy and nm do not read an
 * aarch64 file), natively the plain ones. */
static const char *binutils_prefix(void)
{
#if defined(__aarch64__)
	if (system("command -v aarch64-linux-gnu-objcopy >/dev/null 2>&1") == 0)
		return "aarch64-linux-gnu-";
#endif
	return "";
}

/* One build-id, two files: this test's own executable (.symtab, DWARF)
 * and a copy stripped of both.  The copy's results must not come from the
 * full file's entry (nor the other way round). */
static void test_stripped_copy(void)
{
	char full[300], stripped[300], cmd[1600];
	snprintf(full, sizeof(full), "%s/full", top);
	snprintf(stripped, sizeof(stripped), "%s/stripped", top);
	char exe[300];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	const char *bu = binutils_prefix();
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && %sobjcopy --strip-all '%s' '%s'", exe, full, bu, full, stripped);
	struct module_file mf, ms;
	if (system(cmd) != 0 || !read_module(full, &mf) || !read_module(stripped, &ms) || mf.bid_len != ms.bid_len ||
	    memcmp(mf.bid, ms.bid, mf.bid_len) != 0) {
		printf("SKIP stripped copy: no %sobjcopy (binutils), or the copy has another build-id\n", bu);
		return;
	}
	snprintf(cmd, sizeof(cmd), "%snm '%s' | awk '$3 == \"symcache_probe_fn\" { print $1 }'", bu, full);
	FILE *f = popen(cmd, "r");
	unsigned long long a = 0;
	if (!f || fscanf(f, "%llx", &a) != 1)
		a = 0;
	if (f)
		pclose(f);
	if (a == 0 || symcache_probe_fn(1) == 0) {
		printf("SKIP stripped copy: nm finds no symcache_probe_fn in %s\n", full);
		return;
	}
	const char *order[2][2] = { { full, stripped }, { stripped, full } };
	for (int o = 0; o < 2; o++) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK(system(cmd) == 0);
		char got[2][2][256];
		for (int pass = 0; pass < 2; pass++) {     /* 0: cache off, 1: on, the other file first */
			ember_symbolizer_set_disk_cache(pass == 1);
			for (int k = 0; k < 2; k++) {
				struct ember_symbolizer *s = ember_symbolizer_new();
				ember_symbolizer_add_module(s, 1, order[o][k], order[o][k], mf.bid, mf.bid_len);
				struct ember_sym_frame fr[32];
				size_t n = ember_symbolize(s, 1, a + 4, fr, 32);
				snprintf(got[pass][k], sizeof(got[pass][k]), "%s %s:%u", fr[n - 1].function, fr[n - 1].file,
					 fr[n - 1].line);
				ember_symbolizer_free(s);
			}
		}
		ember_symbolizer_set_disk_cache(true);
		printf("stripped copy: %s -> %s | %s\n", order[o][0], got[0][0], got[0][1]);
		CHECK_MSG(strcmp(got[0][0], got[1][0]) == 0, order[o][0]);
		CHECK_MSG(strcmp(got[0][1], got[1][1]) == 0, order[o][1]);
		CHECK(strcmp(got[0][0], got[0][1]) != 0);   /* the two files do differ */
	}
}

static void libc_path(char *buf, size_t size)
{
	buf[0] = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		if (p && strstr(p, "/libc.so.6")) {
			p[strcspn(p, "\n")] = 0;
			snprintf(buf, size, "%s", p);
			break;
		}
	}
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	snprintf(top, sizeof(top), "/tmp/ember-symcache-XXXXXX");
	if (!mkdtemp(top)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("XDG_CACHE_HOME", top, 1);
	unsetenv("EMBER_SYMBOL_CACHE_MB");
	char *d = symcache_dir_new();
	snprintf(dir, sizeof(dir), "%s", d ? d : "");
	free(d);
	char want[600];
	snprintf(want, sizeof(want), "%s/ember/symbols", top);
	CHECK_STR(dir, want);

	test_round_trip_and_damage();
	test_concurrent_writers();
	test_lru();
	test_unwritable();
	test_stripped_copy();

	char libc[512];
	libc_path(libc, sizeof(libc));
	test_same_results(libc[0] ? libc : "/lib/x86_64-linux-gnu/libc.so.6");
	test_same_results(argc > 1 ? argv[1] : "/usr/bin/python3.11");

	/* A cache folder that cannot be made: the same results all the same. */
	setenv("XDG_CACHE_HOME", "/dev/null", 1);
	struct module_file mf;
	if (libc[0] && read_module(libc, &mf)) {
		double a, b;
		ember_symbolizer_set_disk_cache(false);
		char *off = symbolize_all(&mf, 1500, &a);
		ember_symbolizer_set_disk_cache(true);
		char *on = symbolize_all(&mf, 1500, &b);
		CHECK_MSG(strcmp(off, on) == 0, "unwritable cache folder");
		free(off);
		free(on);
	}

	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", top);
	return check_report();
}
