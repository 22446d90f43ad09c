/* The searches every table of the symbolizer shares: the binary search of a
 * table sorted by address (symtab.c, kallsyms.c, inline_chain.c's CU
 * ranges, jit_map.c) and the alias preference by leading underscores
 * (symtab.c, kallsyms.c).  Whole in this header, inline: they run at every
 * lookup.  Private to symbolizer/. */
#ifndef EMBER_SYM_SEARCH_H
#define EMBER_SYM_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Entries of v[0..n), each `size` bytes and starting with a uint64_t key,
 * sorted by that key: the number of entries whose key is <= key, i.e. the
 * index just past the last entry at or below key.  One binary search for the
 * symbol tables, kallsyms, CU ranges and JIT entries. */
static inline size_t sym_upper_bound(const void *v, size_t n, size_t size, uint64_t key)
{
	const unsigned char *b = v;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;
		memcpy(&k, b + mid * size, sizeof k);
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Leading underscores of a symbol name: among aliases at one address the
 * one with fewer reads better ("malloc" over "__libc_malloc"). */
static inline size_t sym_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

#endif
