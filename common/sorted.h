/* The one binary search of ember's sorted tables: symbols, kallsyms, CU
 * ranges, JIT entries, ELF functions, bytecode ranges, line-table runs,
 * attribution's timelines.  (A process's loads are found by a search of
 * ranges that stops at the one holding the address: unwind/process_model.c.)
 * Whole in this header, inline: the callers are lookups on the hot path.
 *
 * A table is entries v[0..n), each `size` bytes, whose key is an unsigned
 * integer of key_size bytes (8 or 4) at the entry's start, sorted by that
 * key.  The lower bound of k (the first entry whose key is >= k) is the
 * upper bound of k - 1, and 0 for k = 0. */
#ifndef EMBER_SORTED_H
#define EMBER_SORTED_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t ember_sorted_key(const unsigned char *entry, size_t key_size)
{
	if (key_size == 4) {
		uint32_t k;
		memcpy(&k, entry, sizeof k);
		return k;
	}
	uint64_t k;
	memcpy(&k, entry, sizeof k);
	return k;
}

/* How many entries have a key <= key: the index just past the last entry
 * at or below key. */
static inline size_t ember_upper_bound(const void *v, size_t n, size_t size, size_t key_size, uint64_t key)
{
	const unsigned char *b = v;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ember_sorted_key(b + mid * size, key_size) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* How many entries have a key < key: the first at or above it. */
static inline size_t ember_lower_bound(const void *v, size_t n, size_t size, size_t key_size, uint64_t key)
{
	return key ? ember_upper_bound(v, n, size, key_size, key - 1) : 0;
}

#endif
