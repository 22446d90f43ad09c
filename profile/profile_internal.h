/* Private to the profile model (and the exporters built on it): hashing, the
 * string table and the id hash table.  Not a stable API. */
#ifndef EMBER_PROFILE_INTERNAL_H
#define EMBER_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- hashing ---- */

/* The 64-bit finaliser of MurmurHash3: every input bit affects every output
 * bit, so the low bits used as a table index are well mixed. */
static inline uint64_t ember_hash_mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* Hash of n bytes, a word at a time (memcpy keeps unaligned loads legal). */
static inline uint64_t ember_hash_bytes(const void *data, size_t n, uint64_t seed)
{
	const unsigned char *s = data;
	uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL);
	uint64_t w;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ ember_hash_mix(w)) * 0x9e3779b97f4a7c15ULL;
	}
	if (n) {
		w = 0;
		memcpy(&w, s, n);
		h = (h ^ ember_hash_mix(w ^ 0xa5)) * 0x9e3779b97f4a7c15ULL;
	}
	return ember_hash_mix(h);
}

static inline uint64_t ember_hash_ptr(const void *ptr)
{
	return ember_hash_mix((uint64_t)(uintptr_t)ptr);
}

/* ---- UTF-8 ---- */

/* Decode one UTF-8 character of s[0..n), n >= 1.  An ill-formed sequence
 * yields U+FFFD for its longest valid prefix (at least one byte), as
 * Unicode recommends, so no input byte is lost or read past n. */
static inline size_t ember_utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t len, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, *cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, *cp = c & 0x0f, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, *cp = c & 0x07, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else {
		*cp = 0xfffd;
		return 1;
	}
	for (i = 1; i < len; i++) {
		if (i >= n || s[i] < lo || s[i] > hi) {
			*cp = 0xfffd;
			return i;
		}
		*cp = *cp << 6 | (s[i] & 0x3f);
		lo = 0x80, hi = 0xbf;
	}
	return len;
}

/* ---- string table: strtab.c ---- */

/* Interned strings live in arena blocks that are never moved or freed before
 * the table is, so a returned pointer is valid for the table's lifetime and
 * two equal strings always get the same pointer. */
struct ember_strtab;

struct ember_strtab *ember_strtab_new(void);
void ember_strtab_free(struct ember_strtab *t);
/* NUL-terminated interned copy of s[0..len); NULL on OOM.  A NUL inside s is
 * kept in the comparison but ends the C string. */
const char *ember_strtab_intern(struct ember_strtab *t, const char *s, size_t len);
/* Number of distinct strings and bytes held, for tests and diagnostics. */
size_t ember_strtab_count(const struct ember_strtab *t);
size_t ember_strtab_bytes(const struct ember_strtab *t);

/* ---- id table: profile.c ----
 *
 * An open-addressing hash set of uint32 ids.  The table does not know what an
 * id stands for: the caller passes the hash and an equality callback that
 * compares its own key with the item an id names.  That keeps one table
 * implementation for frames, stacks, threads, rows and report keys, and keeps
 * the items themselves in plain arrays (ids index them directly). */
struct ember_idtab_slot {
	uint32_t id_plus1;     /* 0 marks an empty slot */
	uint32_t hash;         /* low 32 bits of the item hash, to rehash without the items */
};

struct ember_idtab {
	struct ember_idtab_slot *slots;
	size_t mask;           /* capacity - 1; capacity is a power of two */
	size_t count;
};

typedef bool (*ember_idtab_eq)(const void *ctx, uint32_t id, const void *key);

int ember_idtab_init(struct ember_idtab *t);
void ember_idtab_free(struct ember_idtab *t);
/* Id whose item equals key, or UINT32_MAX. */
uint32_t ember_idtab_find(const struct ember_idtab *t, uint64_t hash,
			  ember_idtab_eq eq, const void *ctx, const void *key);
/* Add id (known to be absent).  0, or -1 on OOM (the table is unchanged). */
int ember_idtab_insert(struct ember_idtab *t, uint64_t hash, uint32_t id);

struct ember_profile;
struct ember_frame;
/* Id of the frame of p equal to *f, whose strings are p's interned ones;
 * UINT32_MAX when there is none.  Never adds. */
uint32_t profile_frame_find(const struct ember_profile *p, const struct ember_frame *f);

/* Grow *arr (elements of size elem) so that it holds at least need elements;
 * capacity doubles.  0, or -1 on OOM or overflow (the array is unchanged). */
int ember_grow(void **arr, size_t *cap, size_t elem, size_t need);

#endif
