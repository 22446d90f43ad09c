/* The string interner of ember: one copy of each string, stable pointers.
 *
 * Interned strings live in arena blocks that are never moved or freed before
 * the table is, so a returned pointer is valid for the table's lifetime and
 * two equal strings always get the same pointer (pointer equality is string
 * equality).  Not thread-safe. */
#ifndef EMBER_COMMON_STRTAB_H
#define EMBER_COMMON_STRTAB_H

#include <stddef.h>

struct ember_strtab;

struct ember_strtab *ember_strtab_new(void);
void ember_strtab_free(struct ember_strtab *t);
/* NUL-terminated interned copy of s[0..len); NULL on OOM.  A NUL inside s is
 * kept in the comparison but ends the C string. */
const char *ember_strtab_intern(struct ember_strtab *t, const char *s, size_t len);
/* The same for a C string (NULL reads as ""). */
const char *ember_strtab_cstr(struct ember_strtab *t, const char *s);
/* Number of distinct strings held, for tests and diagnostics. */
size_t ember_strtab_count(const struct ember_strtab *t);

#endif
