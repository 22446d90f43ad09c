/* The canonical copies of `ember diff` (diff_internal.h): each run as the
 * comparison sees it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"

/* dst (empty) = src with renamed frame names, line numbers dropped unless
 * matching by line, and no build ids (a rebuilt library is still the same
 * library to a comparison).  Unless matching by line, addresses without
 * a symbol collapse into their module, and runs of them into one frame.
 * Frames that become equal merge, and so do their stacks.  0, or -1 on OOM. */
int diff_canon_run(struct ember_profile *dst, const struct ember_profile *src, const struct ember_diff_opts *o)
{
	uint32_t nframes = ember_profile_nframes(src), nthreads = ember_profile_nthreads(src);
	uint32_t *fmap = malloc(((size_t)nframes + 1) * sizeof(*fmap));
	bool *blob = calloc((size_t)nframes + 1, sizeof(*blob));
	uint32_t *tmap = malloc(((size_t)nthreads + 1) * sizeof(*tmap));
	char *buf = NULL;
	size_t cap = 0;
	int ret = -1;

	if (!fmap || !tmap || !blob || ember_profile_set_meta(dst, ember_profile_meta(src)) < 0)
		goto out;
	for (uint32_t i = 0; i < nframes; i++) {
		struct ember_frame f = *ember_profile_frame_at(src, i);
		f.name = ember_diff_renames_apply(o->renames, f.name, &buf, &cap);
		if (!f.name)
			goto out;
		if (o->by != EMBER_REPORT_BY_LINE)
			f.line = f.first_line = 0;
		/* "[libtorch_cpu.so+0x2112a45]", an address with no symbol, as
		 * "[libtorch_cpu.so]": one row per stripped library instead of
		 * one per address. */
		size_t mlen = o->by != EMBER_REPORT_BY_LINE ? ember_unsymbolized_module(f.name) : 0;
		char mod[300];
		if (mlen && mlen + 2 < sizeof mod - 1) {
			snprintf(mod, sizeof mod, "[%.*s]", (int)mlen, f.name + 1);
			f.name = mod;
			blob[i] = true;
		}
		f.build_id = "";
		if ((fmap[i] = ember_profile_frame(dst, &f)) == UINT32_MAX)
			goto out;
	}
	for (uint32_t t = 0; t < nthreads; t++) {
		const struct ember_thread *th = ember_profile_thread_at(src, t);
		if ((tmap[t] = ember_profile_thread(dst, th->pid, th->tid, th->name)) == UINT32_MAX)
			goto out;
	}
	struct ember_profile_map map = { .frame = fmap, .merge_runs = blob, .thread = tmap,
					 .row_flags = EMBER_ROW_FLAGS_KNOWN };
	ret = ember_profile_add_rows_of(dst, src, &map);
out:
	free(blob);
	free(fmap);
	free(tmap);
	free(buf);
	return ret;
}
