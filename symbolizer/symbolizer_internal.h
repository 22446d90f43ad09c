/* What symbolizer.c offers beyond the public contract of symbolizer.h, for
 * the unit test alone: hooks that point the symbolizer at fake inputs.
 * The pieces it is built from declare themselves: demangle.h, symtab.h,
 * inline_chain.h, kallsyms.h, jit_map.h and sym_search.h. */
#ifndef EMBER_SYMBOLIZER_INTERNAL_H
#define EMBER_SYMBOLIZER_INTERNAL_H

#include "symbolizer.h"

/* Read kernel symbols from `path` instead of /proc/kallsyms (tests use a
 * fake file).  Must be called before the first ember_symbolize_kernel. */
int ember_symbolizer_set_kallsyms_path(struct ember_symbolizer *sym, const char *path);

#endif
