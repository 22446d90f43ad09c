/* Checks every harness of a profile reader runs on what the reader
 * accepted: the model's ids all resolve, the top-N counting works on it,
 * and the profile survives a round trip through the .ember writer and
 * reader unchanged (counts per stack, frames, threads). */
#ifndef EMBER_FUZZ_PROFILE_H
#define EMBER_FUZZ_PROFILE_H

#include "fuzz_util.h"

#include <string.h>

#include "profile.h"
#include "profile_internal.h"

/* Every id the model holds names something that exists. */
static inline void fuzz_check_model(const struct ember_profile *p)
{
	for (uint32_t i = 0; i < p->nframes; i++) {
		const struct ember_frame *f = &p->frames[i];
		FUZZ_ASSERT(f->name && f->file && f->module && f->build_id);
		FUZZ_ASSERT((unsigned)f->kind < EMBER_FRAME_KIND_COUNT);
	}
	for (uint32_t s = 0; s < p->nstacks; s++) {
		uint32_t n;
		const uint32_t *ids = ember_profile_stack_frames(p, s, &n);
		for (uint32_t k = 0; k < n; k++)
			FUZZ_ASSERT(ids[k] < p->nframes);
	}
	for (uint32_t r = 0; r < p->nrows; r++)
		FUZZ_ASSERT(p->rows[r].stack < p->nstacks && p->rows[r].thread < p->nthreads);
	for (size_t t = 0; t < p->ntimeline; t++) {
		FUZZ_ASSERT(p->timeline[t].stack < p->nstacks && p->timeline[t].thread < p->nthreads);
		FUZZ_ASSERT(t == 0 || p->timeline[t - 1].time_ns <= p->timeline[t].time_ns);
	}
}

/* The top-N table's counting: a key's self samples are some of its total
 * ones, and no key is on more samples than the profile has. */
static inline void fuzz_check_report(const struct ember_profile *p)
{
	uint64_t all = ember_profile_total(p);
	for (int key = EMBER_REPORT_BY_FUNCTION; key <= EMBER_REPORT_BY_MODULE; key++) {
		struct ember_report_row *rows;
		size_t n;
		if (ember_report_rows(p, (enum ember_report_key)key, &rows, &n) < 0)
			continue;
		for (size_t i = 0; i < n; i++)
			FUZZ_ASSERT(rows[i].label && rows[i].self <= rows[i].total && rows[i].total <= all);
		ember_report_rows_free(rows, n);
	}
}

/* Sum of the samples of stack s over all threads. */
static inline uint64_t fuzz_stack_count(const struct ember_profile *p, uint32_t s)
{
	uint64_t c = 0;
	for (uint32_t r = 0; r < p->nrows; r++)
		if (p->rows[r].stack == s)
			c += p->rows[r].count;
	return c;
}

/* Save p as an .ember file (in memory) and read it back: the same frames,
 * stacks (with the same counts), threads and timeline. */
static inline void fuzz_round_trip(const struct ember_profile *p)
{
	char path[64], err[512];
	int fd = fuzz_memfd(NULL, 0, path, sizeof path);
	if (fd < 0)
		return;
	struct ember_profile q;
	if (ember_profile_init(&q) != 0) {
		close(fd);
		return;
	}
	if (ember_profile_save(p, path, err, sizeof err) == 0) {
		int rc = ember_profile_load(&q, path, 0, NULL, err, sizeof err);
		if (rc != EMBER_LOAD_OK)
			fprintf(stderr, "round trip: %s\n", err);
		FUZZ_ASSERT(rc == EMBER_LOAD_OK);
		FUZZ_ASSERT(q.nframes == p->nframes && q.nstacks == p->nstacks && q.nthreads == p->nthreads);
		FUZZ_ASSERT(q.ntimeline == p->ntimeline);
		FUZZ_ASSERT(ember_profile_total(&q) == ember_profile_total(p));
		for (uint32_t i = 0; i < p->nframes; i++) {
			const struct ember_frame *a = &p->frames[i], *b = &q.frames[i];
			FUZZ_ASSERT(a->kind == b->kind && a->line == b->line && a->first_line == b->first_line &&
				    a->inlined == b->inlined && a->flags == b->flags);
			FUZZ_ASSERT(!strcmp(a->name, b->name) && !strcmp(a->file, b->file) &&
				    !strcmp(a->module, b->module) && !strcmp(a->build_id, b->build_id));
		}
		for (uint32_t s = 0; s < p->nstacks; s++) {
			uint32_t na, nb;
			const uint32_t *ia = ember_profile_stack_frames(p, s, &na), *ib = ember_profile_stack_frames(&q, s, &nb);
			FUZZ_ASSERT(na == nb && (na == 0 || !memcmp(ia, ib, na * sizeof *ia)));
			FUZZ_ASSERT(fuzz_stack_count(p, s) == fuzz_stack_count(&q, s));
		}
	}
	ember_profile_free(&q);
	close(fd);
}

/* One line of message for a refused input, as the CLI prints it. */
static inline void fuzz_check_error(const char *err)
{
	FUZZ_ASSERT(err[0] && !strchr(err, '\n'));
}

#endif
