/* Private to profile/ (and to the unit tests of its internals): what the
 * model's own files share beyond the public contract (profile.h, report.h).
 * Hashing, the interner, the id table and array growth are common/'s. */
#ifndef EMBER_PROFILE_INTERNAL_H
#define EMBER_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "idtab.h"
#include "strtab.h"
#include "utf8.h"

#include "profile.h"
#include "report.h"

/* Interned copy of s (len bytes, need not be NUL-terminated); NULL on OOM. */
const char *ember_profile_str(struct ember_profile *p, const char *s, size_t len);

/* True when path holds an .ember profile (by content, not by name). */
bool ember_profile_is_ember_file(const char *path);
/* Read an .ember file into an empty profile.  Returns enum ember_load_status
 * with a one-line message naming the file (and the byte offset) in err. */
int ember_profile_load_ember(struct ember_profile *p, const char *path, char *err, size_t errlen);
/* Id of the frame of p equal to *f, whose strings are p's interned ones;
 * UINT32_MAX when there is none.  Never adds. */
uint32_t profile_frame_find(const struct ember_profile *p, const struct ember_frame *f);

/* Add into self[] and total[] (nkeys each) for the live table (top.c) and
 * the samples without symbols (report_unsym.c): stack s weighs weight[s];
 * frame_key[f] is frame f's key (UINT32_MAX: none); a frame with skip[f]
 * set is out of the view (skip NULL: none is), and self goes to the
 * innermost frame in it.  0, or -1 on OOM. */
int report_count_weighted(const struct ember_profile *p, const uint32_t *frame_key, const bool *skip,
			  const uint64_t *weight, uint32_t nkeys, uint64_t *self, uint64_t *total);

#endif
