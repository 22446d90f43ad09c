/* The alias preference by leading underscores that the symbol tables share
 * (symtab.c, kallsyms.c); their binary search is common/sorted.h's.
 * Private to symbolizer/. */
#ifndef EMBER_SYM_SEARCH_H
#define EMBER_SYM_SEARCH_H

#include <stddef.h>

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
