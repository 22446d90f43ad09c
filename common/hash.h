/* Hashing for ember's tables: a strong 64-bit mixer, and hashes of bytes,
 * pointers and integers built on it.  Header-only: they are in every hot
 * loop that looks something up. */
#ifndef EMBER_COMMON_HASH_H
#define EMBER_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The golden-ratio multiplier: spreads consecutive keys (addresses, ids)
 * over the whole word before mixing. */
#define EMBER_HASH_GOLDEN 0x9e3779b97f4a7c15ULL

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
	uint64_t h = seed ^ (n * EMBER_HASH_GOLDEN);
	uint64_t w;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ ember_hash_mix(w)) * EMBER_HASH_GOLDEN;
	}
	if (n) {
		w = 0;
		memcpy(&w, s, n);
		h = (h ^ ember_hash_mix(w ^ 0xa5)) * EMBER_HASH_GOLDEN;
	}
	return ember_hash_mix(h);
}

static inline uint64_t ember_hash_ptr(const void *ptr)
{
	return ember_hash_mix((uint64_t)(uintptr_t)ptr);
}

/* One word folded into a running hash of a sequence (a stack's frames):
 * one multiply, so a 50-frame key costs little on the sampling path; the
 * low bits are weak until the caller finishes with ember_hash_mix. */
static inline uint64_t ember_hash_step(uint64_t h, uint64_t w)
{
	return ((h << 5 | h >> 59) ^ w) * EMBER_HASH_GOLDEN;
}

/* Two words, order-sensitive: (a, b) and (b, a) differ. */
static inline uint64_t ember_hash_pair(uint64_t a, uint64_t b)
{
	return ember_hash_mix(ember_hash_mix(a * EMBER_HASH_GOLDEN) ^ b);
}

#endif
