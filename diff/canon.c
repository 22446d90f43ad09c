/* The canonical copies of `ember diff` (diff_internal.h): each run as the
 * comparison sees it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"
#include "profile_internal.h"

static int copy_meta(struct ember_profile *dst, const struct ember_profile *src)
{
	dst->meta = src->meta;
	dst->meta.command = ember_profile_cstr(dst, src->meta.command);
	dst->meta.source = ember_profile_cstr(dst, src->meta.source);
	return dst->meta.command && dst->meta.source ? 0 : -1;
}

/* dst (empty) = src with renamed frame names, line numbers dropped unless
 * matching by line, and no build ids (a rebuilt library is still the same
 * library to a comparison).  Unless matching by line, addresses without
 * a symbol collapse into their module, and runs of them into one frame.
 * Frames that become equal merge, and so do their stacks.  0, or -1 on OOM. */
int diff_canon_run(struct ember_profile *dst, const struct ember_profile *src, const struct ember_diff_opts *o)
{
	uint32_t *fmap = malloc(((size_t)src->nframes + 1) * sizeof(*fmap));
	bool *blob = calloc((size_t)src->nframes + 1, sizeof(*blob));
	uint32_t *tmap = malloc(((size_t)src->nthreads + 1) * sizeof(*tmap));
	uint32_t *ids = NULL;
	size_t ids_cap = 0;
	char *buf = NULL;
	size_t cap = 0;
	int ret = -1;

	if (!fmap || !tmap || !blob || copy_meta(dst, src) < 0)
		goto out;
	for (uint32_t i = 0; i < src->nframes; i++) {
		struct ember_frame f = src->frames[i];
		f.name = ember_diff_renames_apply(o->renames, f.name ? f.name : "", &buf, &cap);
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
	for (uint32_t t = 0; t < src->nthreads; t++) {
		const struct ember_thread *th = &src->threads[t];
		if ((tmap[t] = ember_profile_thread(dst, th->pid, th->tid, th->name)) == UINT32_MAX)
			goto out;
	}
	for (uint32_t r = 0; r < src->nrows; r++) {
		const struct ember_sample_row *row = &src->rows[r];
		uint32_t n;
		const uint32_t *sf = ember_profile_stack_frames(src, row->stack, &n);
		if (!row->count)
			continue;
		if (ember_grow((void **)&ids, &ids_cap, sizeof(*ids), (size_t)n + 1) < 0)
			goto out;
		uint32_t m = 0;
		for (uint32_t k = 0; k < n; k++)
			if (!(m && blob[sf[k]] && ids[m - 1] == fmap[sf[k]]))
				ids[m++] = fmap[sf[k]];
		uint32_t st = ember_profile_stack(dst, ids, m);
		if (st == UINT32_MAX || ember_profile_add_row(dst, st, tmap[row->thread], row->flags, row->count) < 0)
			goto out;
	}
	ret = 0;
out:
	free(blob);
	free(fmap);
	free(tmap);
	free(ids);
	free(buf);
	return ret;
}
