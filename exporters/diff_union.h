/* Both runs of a differential output in one profile (private to
 * exporters/): the diff writers then reuse the single-profile machinery
 * (labels, flame tree, folded ranks, pprof tables) unchanged, and a row's
 * thread says which run it belongs to. */
#ifndef EMBER_DIFF_UNION_H
#define EMBER_DIFF_UNION_H

#include "profile.h"

enum { DIFF_THREAD_BASE = 0, DIFF_THREAD_NEW = 1 };

/* Initialise u with every frame and stack of base and new_, interned anew
 * so that a frame of both runs is one frame of u, and every row on thread
 * DIFF_THREAD_BASE or DIFF_THREAD_NEW.  u's count_max is twice
 * EMBER_COUNT_MAX, so no count is cut: a sum over one thread's rows stays
 * at most EMBER_COUNT_MAX, over all rows at most twice that.  u's meta is
 * NEW's (its command, rate, start and duration).  0 (free u with
 * ember_profile_free), or -1 with errno ENOMEM (u is then freed). */
int diff_union(struct ember_profile *u, const struct ember_profile *base, const struct ember_profile *new_);

#endif
