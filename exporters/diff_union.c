/* diff_union: see diff_union.h. */
#include <errno.h>
#include <stdlib.h>

#include "diff_union.h"
#include "profile_internal.h"

static int add_run(struct ember_profile *u, const struct ember_profile *p, uint32_t thread)
{
	uint32_t *fmap = malloc(((size_t)p->nframes + 1) * sizeof(*fmap));
	uint32_t *ids = NULL;
	size_t cap = 0;
	int ret = -1;

	if (!fmap)
		return -1;
	for (uint32_t i = 0; i < p->nframes; i++)
		if ((fmap[i] = ember_profile_frame(u, &p->frames[i])) == UINT32_MAX)
			goto out;
	for (uint32_t r = 0; r < p->nrows; r++) {
		const struct ember_sample_row *row = &p->rows[r];
		uint32_t n;
		const uint32_t *sf = ember_profile_stack_frames(p, row->stack, &n);
		if (!row->count)
			continue;
		if (ember_grow((void **)&ids, &cap, sizeof(*ids), (size_t)n + 1) < 0)
			goto out;
		for (uint32_t k = 0; k < n; k++)
			ids[k] = fmap[sf[k]];
		uint32_t st = ember_profile_stack(u, ids, n);
		if (st == UINT32_MAX || ember_profile_add(u, st, thread, row->count) < 0)
			goto out;
	}
	ret = 0;
out:
	free(fmap);
	free(ids);
	return ret;
}

static int fill(struct ember_profile *u, const struct ember_profile *base, const struct ember_profile *new_)
{
	const struct ember_run_meta *m = &new_->meta;

	/* Threads of the two runs are unrelated (other tids, other timing):
	 * one pseudo-thread per run, in this order, so index = run. */
	if (ember_profile_thread(u, 0, DIFF_THREAD_BASE, "BASE") != DIFF_THREAD_BASE ||
	    ember_profile_thread(u, 0, DIFF_THREAD_NEW, "NEW") != DIFF_THREAD_NEW)
		return -1;
	u->meta = *m;
	u->meta.command = ember_profile_cstr(u, m->command);
	u->meta.source = ember_profile_cstr(u, m->source);
	if (!u->meta.command || !u->meta.source)
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
	u->count_max = 2 * EMBER_COUNT_MAX;
	if (fill(u, base, new_) < 0) {
		ember_profile_free(u);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}
