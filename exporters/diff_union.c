/* diff_union: see diff_union.h. */
#include <errno.h>
#include <stdlib.h>

#include "diff_union.h"

/* Every frame of p, and its rows on thread (their flags dropped: a
 * differential output compares samples, on CPU or not). */
static int add_run(struct ember_profile *u, const struct ember_profile *p, uint32_t thread)
{
	uint32_t nframes = ember_profile_nframes(p);
	uint32_t *fmap = malloc(((size_t)nframes + 1) * sizeof(*fmap));
	int ret = -1;

	if (!fmap)
		return -1;
	for (uint32_t i = 0; i < nframes; i++)
		if ((fmap[i] = ember_profile_frame(u, ember_profile_frame_at(p, i))) == UINT32_MAX)
			goto out;
	struct ember_profile_map map = { .frame = fmap, .one_thread = thread };
	ret = ember_profile_add_rows_of(u, p, &map);
out:
	free(fmap);
	return ret;
}

static int fill(struct ember_profile *u, const struct ember_profile *base, const struct ember_profile *new_)
{
	/* Threads of the two runs are unrelated (other tids, other timing):
	 * one pseudo-thread per run, in this order, so index = run. */
	if (ember_profile_thread(u, 0, DIFF_THREAD_BASE, "BASE") != DIFF_THREAD_BASE ||
	    ember_profile_thread(u, 0, DIFF_THREAD_NEW, "NEW") != DIFF_THREAD_NEW ||
	    ember_profile_set_meta(u, ember_profile_meta(new_)) < 0)
		return -1;
	return add_run(u, base, DIFF_THREAD_BASE) < 0 || add_run(u, new_, DIFF_THREAD_NEW) < 0 ? -1 : 0;
}

int diff_union(struct ember_profile *u, const struct ember_profile *base, const struct ember_profile *new_)
{
	if (ember_profile_init(u) != 0) {
		errno = ENOMEM;
		return -1;
	}
	/* Each run's rows add up to at most EMBER_COUNT_MAX: both together
	 * fit without a cut (and a thread's sum stays under the one limit). */
	ember_profile_set_count_max(u, 2 * EMBER_COUNT_MAX);
	if (fill(u, base, new_) < 0) {
		ember_profile_free(u);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}
