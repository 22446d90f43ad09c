/* Resolving a run into a profile (build_profile.c), for run.c. */
#ifndef EMBER_RECORD_BUILD_PROFILE_H
#define EMBER_RECORD_BUILD_PROFILE_H

#include <stdint.h>

#include "attribute.h"
#include "jit_map.h"
#include "pools.h"
#include "raw_stacks.h"
#include "record.h"
#include "session.h"

struct build_in {
	const struct raw_stacks *raw;
	const struct ember_sampler *sampler;      /* its modules and thread names */
	const struct ember_py_session *python;    /* NULL: no Python frames */
	struct ember_jit_map *jit;                /* names of JIT code */
	const struct ember_record_opts *opts;     /* merge, subprocesses, full_filenames */
	bool wait_frames;                         /* a pool's waiting frames kept under its wait mark */
};
/* How the samples of pool threads were placed (attribute.h), and how many
 * only waited, in the profile's units (samples; --idle: microseconds). */
struct build_attr_stats {
	uint64_t worker[EMBER_POOL_KIND_COUNT];     /* samples of each pool's threads (a program's
	                                             * own: only those attributed) */
	uint64_t attributed[ATTR_HOW_COUNT];        /* ... put under their dispatcher, by how */
	uint64_t unattributed[ATTR_WHY_COUNT];      /* ... not, by why */
	uint64_t wait[EMBER_POOL_KIND_COUNT];       /* samples that wait for a pool: its threads'
	                                             * and its dispatchers' */
};

/* Symbolize every raw stack, merge the Python frames read with it and add
 * it to p, the samples of pool threads under the stacks that dispatched
 * their work (unless opts->no_attribution). *mismatched counts the samples
 * whose Python frames disagreed with their native stack; *stats (may be
 * NULL) what attribution did. 0, or -1 on OOM. */
int build_profile(const struct build_in *in, struct ember_profile *p, uint64_t *mismatched,
		  struct build_attr_stats *stats);

/* The same, kept up to date during the capture (a live profile): the
 * builder keeps what it resolved, so that each update adds the new samples
 * to p as counts and symbolizes only addresses it has not seen. p must be
 * the same profile on every call, changed by nothing else. NULL on OOM;
 * update: 0, or -1 on OOM (*mismatched grows by the new uncertain samples). */
struct profile_builder;
struct profile_builder *profile_builder_new(const struct build_in *in, struct ember_profile *p);
int profile_builder_update(struct profile_builder *bd, const struct build_in *in, struct ember_profile *p,
			   uint64_t *mismatched);
void profile_builder_free(struct profile_builder *bd);
/* What attribution did in the updates so far. */
void profile_builder_stats(const struct profile_builder *bd, struct build_attr_stats *out);

#endif
