/* The cold path from captured addresses to a symbolic profile: every raw
 * stack resolved (resolve.h: symbolized, its Python frames merged) into a
 * root-first stack of the profile, counted per thread, and the samples'
 * timeline laid out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "build_profile.h"
#include "resolve.h"

/* Declare the sampler's modules not declared yet (a run loads more as it
 * goes: a live profile is resolved many times). 0, or -1 on OOM. */
static int sync_modules(struct ember_resolver *rv, uint32_t *declared, const struct build_in *in)
{
	uint32_t nmods = ember_sampler_module_count(in->sampler);
	for (; *declared < nmods; (*declared)++) {
		struct ember_module_info mi;
		ember_sampler_module(in->sampler, *declared, &mi);
		if (ember_resolver_add_module(rv, *declared, &mi, in->jit) != 0)
			return -1;
	}
	return 0;
}

/* The resolved stack of raw entry v, NULL on OOM. */
static const struct ember_resolved *resolve_entry(struct ember_resolver *rv, const struct build_in *in,
						 const struct raw_stack_view *v, struct ember_resolved *out)
{
	char label[320];
	struct ember_resolve_in ri = {
		.frames = v->frames, .nframes = v->nframes, .kernel_ips = v->kernel_ips, .nkernel = v->nkernel,
		.sample_flags = v->flags, .py = v->py, .npy = v->npy, .pyflags = v->pyflags,
		.reader = in->python ? ember_py_session_reader(in->python, v->pid) : NULL,
	};
	if (in->opts->subprocesses) {
		const char *cmd = in->python ? ember_py_session_cmdline(in->python, v->pid) : "";
		snprintf(label, sizeof label, "process %u: %s", v->pid, cmd[0] ? cmd : "?");
		ri.root_label = label;
	}
	return ember_resolve(rv, &ri, out) == 0 ? out : NULL;
}

/* Lay out the timeline: raw entry k became profile stack entry_stack[k]
 * of thread entry_thread[k]. A timeline cut short would show only the
 * start of the run: none is better than a misleading one (the counts are
 * complete either way). */
static int add_timeline(const struct raw_stacks *raw, struct ember_profile *p, const uint32_t *entry_stack,
			const uint32_t *entry_thread, size_t nentries)
{
	bool complete;
	size_t cursor = 0;
	uint64_t time_ns = 0;
	uint32_t entry;

	raw_stacks_timeline_count(raw, &complete);
	while (complete && raw_stacks_timeline_next(raw, &cursor, &time_ns, &entry))
		if (entry < nentries && ember_profile_add_timed(p, time_ns, entry_stack[entry], entry_thread[entry]) != 0)
			return -1;
	/* Rings of different CPUs interleave: put samples back in time order. */
	ember_profile_sort_timeline(p);
	return 0;
}

/* A profile being built from the raw stacks, once or (live) again and
 * again: raw entry k became stack entry_stack[k] of thread entry_thread[k]
 * with entry_count[k] samples so far. */
struct profile_builder {
	struct ember_resolver *rv;
	uint32_t modules;          /* the sampler's modules declared to rv */
	uint32_t *entry_stack, *entry_thread;
	uint64_t *entry_count;
	size_t nentries, es_cap, et_cap, ec_cap;
};

/* The profile row flags of raw entry v's samples. */
static uint32_t row_flags(const struct raw_stack_view *v)
{
	return v->flags & EMBER_SAMPLE_OFF_CPU ? EMBER_ROW_OFF_CPU : 0;
}

/* Raw entry v, new, into p. 0, or -1 on OOM. */
static int builder_add_entry(struct profile_builder *bd, const struct build_in *in, struct ember_profile *p,
			     const struct raw_stack_view *v, uint64_t *mismatched)
{
	struct ember_resolved rs;
	if (!resolve_entry(bd->rv, in, v, &rs) || EMBER_GROW(bd->entry_stack, bd->es_cap, bd->nentries + 1) != 0 ||
	    EMBER_GROW(bd->entry_thread, bd->et_cap, bd->nentries + 1) != 0 ||
	    EMBER_GROW(bd->entry_count, bd->ec_cap, bd->nentries + 1) != 0)
		return -1;
	if (rs.uncertain)
		*mismatched += v->samples;
	uint32_t sid = ember_profile_stack(p, rs.ids, rs.n);
	/* A Python thread is named as Python names it ("MainThread",
	 * "Thread-3 (worker)"); others (BLAS, OpenMP workers) by their comm. */
	const char *tname = in->python ? ember_py_session_thread_name(in->python, v->pid, v->tid) : NULL;
	if (!tname)
		tname = ember_sampler_thread_name(in->sampler, v->pid, v->tid);
	uint32_t tix = ember_profile_thread(p, v->pid, v->tid, tname);
	if (sid == UINT32_MAX || tix == UINT32_MAX || ember_profile_add_row(p, sid, tix, row_flags(v), v->count) != 0)
		return -1;
	bd->entry_stack[bd->nentries] = sid;
	bd->entry_thread[bd->nentries] = tix;
	bd->entry_count[bd->nentries++] = v->count;
	return 0;
}

/* Bring p up to the raw stacks: the samples of entries already in it are
 * added as counts, and only new entries are resolved. 0, or -1 on OOM. */
int profile_builder_update(struct profile_builder *bd, const struct build_in *in, struct ember_profile *p,
			  uint64_t *mismatched)
{
	size_t cursor = 0;
	struct raw_stack_view v;
	if (sync_modules(bd->rv, &bd->modules, in) != 0)
		return -1;
	while (raw_stacks_next(in->raw, &cursor, &v)) {
		size_t k = cursor - 1;
		if (k >= bd->nentries) {
			if (builder_add_entry(bd, in, p, &v, mismatched) != 0)
				return -1;
			continue;
		}
		if (v.count > bd->entry_count[k] &&
		    ember_profile_add_row(p, bd->entry_stack[k], bd->entry_thread[k], row_flags(&v),
					  v.count - bd->entry_count[k]) != 0)
			return -1;
		bd->entry_count[k] = v.count;
	}
	return 0;
}

void profile_builder_free(struct profile_builder *bd)
{
	if (!bd)
		return;
	free(bd->entry_stack);
	free(bd->entry_thread);
	free(bd->entry_count);
	ember_resolver_free(bd->rv);
	free(bd);
}

struct profile_builder *profile_builder_new(const struct build_in *in, struct ember_profile *p)
{
	struct profile_builder *bd = calloc(1, sizeof *bd);
	if (!bd)
		return NULL;
	struct ember_resolver_opts ro = { .merge = in->opts->merge, .full_filenames = in->opts->full_filenames };
	if (!(bd->rv = ember_resolver_new(p, &ro)) || sync_modules(bd->rv, &bd->modules, in) != 0) {
		profile_builder_free(bd);
		return NULL;
	}
	return bd;
}

int build_profile(const struct build_in *in, struct ember_profile *p, uint64_t *mismatched)
{
	*mismatched = 0;
	struct profile_builder *bd = profile_builder_new(in, p);
	int rc = bd ? profile_builder_update(bd, in, p, mismatched) : -1;
	/* A wall-clock profile (--idle) has none: its timeline's samples would
	 * each stand for the profile's interval, a microsecond, not a period. */
	if (rc == 0 && !in->opts->sampler.off_cpu)
		rc = add_timeline(in->raw, p, bd->entry_stack, bd->entry_thread, bd->nentries);
	profile_builder_free(bd);
	return rc;
}
