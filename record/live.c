/* A live profile of a run (record.h, ember_record_live_*): one profile and
 * one builder kept across updates, so that each update resolves only the
 * raw stacks new since the previous one. */
#include <stdlib.h>

#include "build_profile.h"
#include "run_state.h"

struct ember_record_live {
	struct ember_record *r;
	struct ember_record_opts opts;     /* the run's, with the live merge */
	struct ember_profile p;
	struct profile_builder *bd;        /* made at the first update: the sampler's modules exist then */
	uint64_t mismatched;
	bool broken;                       /* out of memory once: the profile is incomplete */
};

struct ember_record_live *ember_record_live_new(struct ember_record *r, const struct ember_merge_opts *merge)
{
	struct ember_record_live *l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	if (ember_profile_init(&l->p) != 0) {
		free(l);
		return NULL;
	}
	l->r = r;
	l->opts = r->opts;
	l->opts.merge = *merge;
	return l;
}

const struct ember_profile *ember_record_live_update(struct ember_record_live *l)
{
	struct ember_record *r = l->r;
	struct build_in in = { .raw = r->raw, .sampler = r->sampler, .python = r->python, .jit = r->jit,
			       .opts = &l->opts };
	if (l->broken || r->oom)
		return NULL;
	record_fill_meta(r, &l->p);
	if (!l->bd && !(l->bd = profile_builder_new(&in, &l->p)))
		l->broken = true;
	else if (profile_builder_update(l->bd, &in, &l->p, &l->mismatched) != 0)
		l->broken = true;
	l->p.meta.mismatched = l->mismatched;
	return l->broken ? NULL : &l->p;
}

void ember_record_live_free(struct ember_record_live *l)
{
	if (!l)
		return;
	profile_builder_free(l->bd);
	ember_profile_free(&l->p);
	free(l);
}
