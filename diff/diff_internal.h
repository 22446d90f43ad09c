/* Private to diff/ (and its unit test): the canonical copies, applying
 * rename rules, and the helpers the comparison and the delta table share. */
#ifndef EMBER_DIFF_INTERNAL_H
#define EMBER_DIFF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "diff.h"

/* canon.c: dst (empty) = src with renamed frame names, line numbers dropped
 * unless matching by line, and no build ids; unless matching by line,
 * addresses without a symbol collapse into their module.  Frames that
 * become equal merge, and so do their stacks.  0, or -1 on OOM. */
int diff_canon_run(struct ember_profile *dst, const struct ember_profile *src, const struct ember_diff_opts *o);

/* rename.c: the number of rules (0 for NULL); a name after every rule in
 * order: name itself when no rule matched, else a string in *buf (grown as
 * needed; free it).  NULL on OOM. */
size_t ember_diff_renames_count(const struct ember_diff_renames *r);
const char *ember_diff_renames_apply(const struct ember_diff_renames *r, const char *name, char **buf,
				     size_t *cap);

/* compare.c: the unit of the row values: "%" (share) or "s", "s/iteration". */
const char *ember_diff_unit(const struct ember_diff *d);

#endif
