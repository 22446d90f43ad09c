/* The symbolizer's cache on disk (symcache.c, symcache_elf.c), for symbolizer.c, keyed by
 * the module's GNU build-id: a decompressed copy of each separate debug file
 * whose .debug_* sections are compressed, so that libdw maps the copy
 * instead of inflating every debug section each run, and each module's
 * resolved addresses, so that an address is looked up once.  Private to
 * symbolizer/ (and its unit test).
 *
 * Layout: $XDG_CACHE_HOME/ember/symbols/ (default ~/.cache/ember/symbols/),
 * "<hex build-id>.debug" (the ELF file) and "<hex build-id>.sym" (the
 * results), each followed by a trailer (magic, format version, kind,
 * build-id, payload length, CRC32 of the payload, origin, CRC32 of the
 * trailer).  An entry whose trailer or payload
 * does not check out is never used and is deleted.  Entries are written to a
 * temporary file opened O_EXCL and renamed into place, so a reader never sees
 * part of one and concurrent runs do not clash; a hit sets the entry's mtime,
 * and after each store the least recently used entries go until the folder
 * is within its bound.
 *
 * Every failure (no HOME, read-only or full disk, a corrupt entry) leaves
 * the symbolizer working as without the cache.  Thread-safe. */
#ifndef EMBER_SYMCACHE_H
#define EMBER_SYMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdwfl.h>

/* Default bound on the folder's size (bytes); EMBER_SYMBOL_CACHE_MB
 * overrides it (0: no cache). */
#define SYMCACHE_DEFAULT_BOUND (1024ull << 20)

#define SYMCACHE_MAX_BID 64   /* bytes of a build-id the cache keys by, at most */

/* bid in lower-case hex into hex (room for 2 * SYMCACHE_MAX_BID + 1). */
void symcache_bid_hex(char *hex, const uint8_t *bid, size_t bid_len);
/* An entry's file name in its folder: hex build-id, then ".debug" or ".sym"
 * by kind (room for 2 * SYMCACHE_MAX_BID + 16). */
void symcache_entry_name(char *buf, size_t size, uint32_t kind, const uint8_t *bid, size_t bid_len);

/* Where an entry came from: the file it was made of, as it was then. */
struct symcache_origin {
	char path[1024];
	uint64_t size, ino;
	int64_t mtime_s, mtime_ns;
};

/* Fill o for the file at path; false when it is not a regular file. */
bool symcache_origin_of(const char *path, struct symcache_origin *o);

/* Entry kinds (in the trailer). */
#define SYMCACHE_KIND_DEBUG 1u
#define SYMCACHE_KIND_RESULTS 2u

/* The folder as the environment names it now ("$XDG_CACHE_HOME/ember/symbols",
 * else "$HOME/.cache/ember/symbols"), malloc'd; NULL when the cache is off
 * (ember_symbolizer_set_disk_cache(false), EMBER_SYMBOL_CACHE_MB=0) or
 * neither variable is set to an absolute path. */
char *symcache_dir_new(void);

/* The size bound in bytes (SYMCACHE_DEFAULT_BOUND, or EMBER_SYMBOL_CACHE_MB). */
uint64_t symcache_bound(void);

/* What symcache_find_debuginfo reads through the module's userdata. */
struct symcache_module {
	char **search;      /* the module's debuginfo_path (*search NULL: libdwfl's default) */
	const char *dir;    /* the cache folder */
};

/* A libdwfl find_debuginfo callback, the module's userdata pointing at a
 * struct symcache_module: for a debug file found
 * by build-id whose sections are compressed, the cached decompressed copy
 * (made now when there is none or the debug file changed since); for any
 * other, what dwfl_standard_find_debuginfo finds. */
int symcache_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			    const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			    char **debuginfo_file_name);

/* The pieces, with the folder given (the unit test's way in). */

/* Open the entry for build-id bid in dir: a read-only fd on its payload
 * (starting at offset 0), its length in *len, where it came from in *origin
 * (may be NULL), or -1 when there is none or it is bad (a bad one is
 * deleted).  A hit marks the entry as just used. */
int symcache_open(const char *dir, uint32_t kind, const uint8_t *bid, size_t bid_len, uint64_t *len,
		  struct symcache_origin *origin);

/* Store a payload for bid: writer(arg, fd) is called to write it from offset 0 of
 * a new temporary file (return 0, or -1 to give up); the trailer is added,
 * the file renamed into place and the folder trimmed to bound.  Returns a
 * read-only fd on the entry, or -1. */
typedef int (*symcache_writer)(void *arg, int fd);
int symcache_store(const char *dir, uint32_t kind, const uint8_t *bid, size_t bid_len,
		   const struct symcache_origin *origin, symcache_writer writer, void *arg, uint64_t bound);

/* Delete the least recently used entries (and temporary files left over by
 * a crashed run) until dir holds at most bound bytes; `keep` (a file name,
 * may be NULL) stays. */
void symcache_trim(const char *dir, uint64_t bound, const char *keep);

/* Whether ELF file fd is worth a decompressed copy: it has SHF_COMPRESSED
 * sections and no .gnu_debugaltlink (whose file libdw would look for next
 * to the copy).  *size: the copy's size, about. */
bool symcache_elf_compressed(int fd, uint64_t *size);

/* Write a copy of ELF file src_fd with its SHF_COMPRESSED sections
 * decompressed to dst_fd (from offset 0).  0, or -1 on error. */
int symcache_decompress_elf(int src_fd, int dst_fd);

/* Resolved results of one module ("<hex build-id>.sym"): for each address,
 * its frames as the symbolizer returned them, under a stamp checked on load:
 * the origin of the debug file libdwfl's search by build-id finds for the
 * module (all zero: none), so that a debug package installed or removed
 * since makes the entry stale, and the module file's size and section table,
 * since files of one build-id differ in the symbols they carry (stripped or
 * not, with a .gnu_debugdata section or not). */
struct symcache_stamp {
	struct symcache_origin debug;
	uint64_t main_size;
	uint32_t main_sections;   /* CRC32 of each section's name, type, flags and size */
	uint32_t pad;
};

struct symcache_frame {
	const char *function, *file;   /* function NULL: the "[module+0x...]" fallback */
	uint32_t line;
	bool inlined, has_symbol;
};

struct symcache_buf {
	uint8_t *p;
	size_t n, cap;
	uint32_t count;
	bool oom;
};

/* Append one address's frames (at most 255) to b. */
void symcache_buf_add(struct symcache_buf *b, uint64_t addr, const struct symcache_frame *f, size_t n);
void symcache_buf_free(struct symcache_buf *b);

/* Store b as bid's results with stamp; 0 or -1. */
int symcache_results_save(const char *dir, const uint8_t *bid, size_t bid_len, const struct symcache_stamp *stamp,
			  const struct symcache_buf *b, uint64_t bound);

/* Call fn for each address of bid's results when the entry is good and its
 * stamp is `stamp`; the strings live only during the call.  The number of
 * addresses, or -1 when there is no usable entry. */
typedef void (*symcache_result_fn)(void *arg, uint64_t addr, const struct symcache_frame *f, size_t n);
long symcache_results_load(const char *dir, const uint8_t *bid, size_t bid_len, const struct symcache_stamp *stamp,
			   symcache_result_fn fn, void *arg);

/* The stamp of module file `path` of build-id bid whose debug files are
 * searched in `search` (NULL: libdwfl's default).  False when its results
 * cannot be cached: the file does not carry a build-id agreeing with bid on
 * their common length (some sources pad build-ids), cannot be read, or its
 * debug file is under /proc (another process's root, a path of this run
 * only). */
bool symcache_stamp(const char *path, const char *search, const uint8_t *bid, size_t bid_len,
		    struct symcache_stamp *stamp);

#endif
