/* speedscope's own file format (docs/consumers.md §4): one "sampled" profile
 * per thread over shared frames, weights in nanoseconds.
 *
 * Frames: name (an empty one prints "[unknown]"); file and line for Python
 * frames; for native, interpreter and kernel frames the source file and line
 * when known, else the module as the file (so speedscope's detail pane says
 * libc.so.6 or [kernel.kallsyms]).  Ember frames that print alike share one
 * speedscope frame, as speedscope identifies frames by index.
 *
 * Samples: with a complete timeline (json_out.h) a thread's samples are in
 * time order, consecutive identical stacks merged, so "Time Order" is the
 * real order (gaps are not shown: the format has no timestamps).  Without
 * one, one sample per stack in flame-graph order.  Each weight is samples x
 * interval in nanoseconds (unit "nanoseconds"): integers, exact, > 0, and
 * speedscope prints them as times; beyond 2^64 - 1 ns (585 years) a weight
 * stays at 2^64 - 1 rather than wrap. */
#define _GNU_SOURCE /* putc_unlocked, fputs_unlocked */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "exporters.h"
#include "json_out.h"
#include "hash.h"
#include "idtab.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"
#define NO_FRAME UINT32_MAX

static const char unknown_name[] = "[unknown]";

/* One speedscope frame: what it prints. */
struct ss_frame {
	const char *name;
	const char *file;      /* NULL: no file */
	uint32_t line;         /* 0: no line */
};

struct ss_ctx {
	const struct ember_profile *p;
	uint32_t *index;       /* ember frame id -> speedscope frame, NO_FRAME if unused */
	struct ss_frame *frames;
	uint32_t nframes;
	uint32_t unknown;      /* the frame of an empty stack, NO_FRAME until needed */
	struct ember_idtab tab;
};

static struct ss_frame frame_of(const struct ember_frame *f)
{
	struct ss_frame s = { .name = f->name && *f->name ? f->name : unknown_name };
	const char *file = f->file && *f->file ? f->file : NULL;

	switch (f->kind) {
	case EMBER_FRAME_PYTHON:
		break;
	case EMBER_FRAME_SPECIAL:
		file = NULL;
		break;
	default:
		if (!file && f->module && *f->module)
			return (struct ss_frame){ s.name, f->module, 0 };
	}
	s.file = file;
	s.line = file ? f->line : 0;
	return s;
}

static uint64_t hash_frame(const struct ss_frame *f)
{
	/* the profile interns strings: equal strings, equal pointers */
	return ember_hash_mix(ember_hash_ptr(f->name) ^ ember_hash_ptr(f->file) * 31 ^ f->line);
}

static bool eq_frame(const void *ctx, uint32_t id, const void *key)
{
	const struct ss_frame *a = &((const struct ss_ctx *)ctx)->frames[id], *b = key;

	return a->name == b->name && a->file == b->file && a->line == b->line;
}

static uint32_t add_frame(struct ss_ctx *c, const struct ss_frame *f)
{
	uint64_t h = hash_frame(f);
	uint32_t id = ember_idtab_find(&c->tab, h, eq_frame, c, f);

	if (id != UINT32_MAX)
		return id;
	id = c->nframes;
	if (ember_idtab_insert(&c->tab, h, id) < 0)
		return NO_FRAME;
	c->frames[c->nframes++] = *f;
	return id;
}

/* Give every frame of stack its speedscope index. */
static int use_stack(struct ss_ctx *c, uint32_t stack)
{
	uint32_t n;
	const uint32_t *ids = ember_profile_stack_frames(c->p, stack, &n);

	if (n == 0 && c->unknown == NO_FRAME) {
		struct ss_frame f = { unknown_name, NULL, 0 };
		if ((c->unknown = add_frame(c, &f)) == NO_FRAME)
			return -1;
	}
	for (uint32_t k = 0; k < n; k++) {
		if (c->index[ids[k]] != NO_FRAME)
			continue;
		struct ss_frame f = frame_of(ember_profile_frame_at(c->p, ids[k]));
		if ((c->index[ids[k]] = add_frame(c, &f)) == NO_FRAME)
			return -1;
	}
	return 0;
}

static void put_frames(FILE *out, const struct ss_ctx *c)
{
	for (uint32_t i = 0; i < c->nframes; i++) {
		const struct ss_frame *f = &c->frames[i];
		fputs_unlocked(i ? ",\n{\"name\":" : "\n{\"name\":", out);
		ember_json_str(out, f->name);
		if (f->file) {
			fputs_unlocked(",\"file\":", out);
			ember_json_str(out, f->file);
		}
		if (f->line) {
			fputs_unlocked(",\"line\":", out);
			ember_json_u64(out, f->line);
		}
		putc_unlocked('}', out);
	}
}

static void put_stack(FILE *out, const struct ss_ctx *c, uint32_t stack, bool first)
{
	uint32_t n;
	const uint32_t *ids = ember_profile_stack_frames(c->p, stack, &n);

	fputs_unlocked(first ? "[" : ",[", out);
	if (n == 0)
		ember_json_u64(out, c->unknown);
	for (uint32_t k = 0; k < n; k++) {
		if (k)
			putc_unlocked(',', out);
		ember_json_u64(out, c->index[ids[k]]);
	}
	putc_unlocked(']', out);
}

/* "name (tid)", or "name (pid P, tid T)" when the profile has several
 * processes; an unnamed thread is "thread". */
static void put_thread_name(FILE *out, const struct ember_thread *t, bool pids)
{
	const char *name = t->name && *t->name ? t->name : "thread";
	char num[64];
	char *buf;
	size_t n = strlen(name), m;

	if (pids)
		m = (size_t)snprintf(num, sizeof(num), " (pid %" PRIu32 ", tid %" PRIu32 ")", t->pid, t->tid);
	else
		m = (size_t)snprintf(num, sizeof(num), " (%" PRIu32 ")", t->tid);
	if (!(buf = malloc(n + m + 1))) {
		ember_json_str(out, name);   /* OOM: the name alone is still valid */
		return;
	}
	memcpy(buf, name, n);
	memcpy(buf + n, num, m + 1);
	ember_json_strn(out, buf, n + m);
	free(buf);
}

struct ss_layout {
	uint32_t *threads;     /* sorted, with samples */
	uint32_t nthreads;
	uint64_t *total;       /* samples by thread index */
	uint32_t *rows;        /* sorted rows (no timeline) */
	size_t nrows;
	size_t *tl_idx, *tl_start; /* timeline by thread, or NULL */
};

static void put_profile_head(FILE *out, uint64_t end)
{
	fputs_unlocked(",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":", out);
	ember_json_u64(out, end);
}

static void put_thread_profile(FILE *out, const struct ss_ctx *c, const struct ss_layout *l,
			       uint32_t t, bool pids, uint64_t interval, size_t *row_pos)
{
	const struct ember_profile *p = c->p;

	fputs_unlocked("{\"type\":\"sampled\",\"name\":", out);
	put_thread_name(out, ember_profile_thread_at(p, t), pids);
	put_profile_head(out, ember_count_mul(l->total[t], interval));

	/* runs of one stack: (stack, samples), written twice (samples, weights) */
	for (int pass = 0; pass < 2; pass++) {
		bool first = true;
		fputs_unlocked(pass ? "],\n\"weights\":[" : ",\n\"samples\":[", out);
		if (l->tl_idx) {
			size_t i = l->tl_start[t], end = l->tl_start[t + 1];
			while (i < end) {
				uint32_t stack = ember_profile_timed_at(p, l->tl_idx[i])->stack;
				size_t j = i + 1;
				while (j < end && ember_profile_timed_at(p, l->tl_idx[j])->stack == stack)
					j++;
				if (pass == 0) {
					put_stack(out, c, stack, first);
				} else {
					if (!first)
						putc_unlocked(',', out);
					ember_json_u64(out, ember_count_mul(j - i, interval));
				}
				first = false;
				i = j;
			}
		} else {
			size_t i = *row_pos;
			for (; i < l->nrows && ember_profile_row_at(p, l->rows[i])->thread == t; i++) {
				const struct ember_sample_row *r = ember_profile_row_at(p, l->rows[i]);
				if (pass == 0) {
					put_stack(out, c, r->stack, first);
				} else {
					if (!first)
						putc_unlocked(',', out);
					ember_json_u64(out, ember_count_mul(r->count, interval));
				}
				first = false;
			}
			if (pass)
				*row_pos = i;
		}
	}
	fputs_unlocked("]}", out);
}

static int layout(struct ss_ctx *c, struct ss_layout *l)
{
	const struct ember_profile *p = c->p;
	uint32_t *sorted = ember_export_sorted_threads(p);

	uint32_t nthreads = ember_profile_nthreads(p);

	l->total = calloc((size_t)nthreads + 1, sizeof(*l->total));
	l->threads = sorted;
	if (!sorted || !l->total)
		return -1;
	for (uint32_t r = 0; r < ember_profile_nrows(p); r++) {
		const struct ember_sample_row *row = ember_profile_row_at(p, r);
		l->total[row->thread] += row->count;
	}
	for (uint32_t i = 0; i < nthreads; i++)
		if (l->total[sorted[i]])
			sorted[l->nthreads++] = sorted[i];

	if (ember_export_timeline_complete(p)) {
		if (ember_export_timeline_by_thread(p, &l->tl_idx, &l->tl_start) < 0)
			return -1;
		for (size_t i = 0; i < ember_profile_ntimed(p); i++)
			if (use_stack(c, ember_profile_timed_at(p, i)->stack) < 0)
				return -1;
	} else {
		if (!(l->rows = ember_export_sorted_rows(p, &l->nrows)))
			return -1;
		for (size_t i = 0; i < l->nrows; i++)
			if (use_stack(c, ember_profile_row_at(p, l->rows[i])->stack) < 0)
				return -1;
	}
	return 0;
}

int ember_write_speedscope(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o)
{
	/* Every thread is its own profile already: o->threads adds nothing. */
	(void)o;
	struct ss_ctx c = { .p = p, .unknown = NO_FRAME };
	struct ss_layout l = { 0 };
	uint64_t interval = ember_export_interval_ns(p);
	size_t nframes = ember_profile_nframes(p);
	const char *command = ember_profile_meta(p)->command;
	const char *name = command && *command ? command : "ember profile";
	int ret = -1;

	c.index = malloc((nframes + 1) * sizeof(*c.index));
	c.frames = malloc((nframes + 1) * sizeof(*c.frames));
	if (!c.index || !c.frames || ember_idtab_init(&c.tab) < 0) {
		free(c.index);
		free(c.frames);
		errno = ENOMEM;
		return -1;
	}
	memset(c.index, 0xff, (nframes + 1) * sizeof(*c.index));
	if (layout(&c, &l) < 0) {
		errno = ENOMEM;
		goto out;
	}

	bool pids = false;
	uint32_t active = 0;
	for (uint32_t i = 1; i < l.nthreads; i++) {
		if (ember_profile_thread_at(p, l.threads[i])->pid != ember_profile_thread_at(p, l.threads[0])->pid)
			pids = true;
		if (l.total[l.threads[i]] > l.total[l.threads[active]])
			active = i;
	}

	flockfile(out);
	fputs_unlocked("{\"$schema\":\"" SPEEDSCOPE_SCHEMA "\",\n\"exporter\":\"ember@" EMBER_VERSION "\",\n\"name\":", out);
	ember_json_str(out, name);
	fputs_unlocked(",\n\"activeProfileIndex\":", out);
	ember_json_u64(out, active);
	fputs_unlocked(",\n\"shared\":{\"frames\":[", out);
	put_frames(out, &c);
	fputs_unlocked("]},\n\"profiles\":[\n", out);
	size_t row_pos = 0;
	for (uint32_t i = 0; i < l.nthreads; i++) {
		if (i)
			fputs_unlocked(",\n", out);
		put_thread_profile(out, &c, &l, l.threads[i], pids, interval, &row_pos);
	}
	if (l.nthreads == 0) {
		/* No samples: one empty profile, so that speedscope opens the file. */
		fputs_unlocked("{\"type\":\"sampled\",\"name\":", out);
		ember_json_str(out, name);
		put_profile_head(out, 0);
		fputs_unlocked(",\"samples\":[],\"weights\":[]}", out);
	}
	fputs_unlocked("\n]}\n", out);
	funlockfile(out);
	ret = ember_json_finish(out);
out:
	ember_idtab_free(&c.tab);
	free(c.index);
	free(c.frames);
	free(l.threads);
	free(l.total);
	free(l.rows);
	free(l.tl_idx);
	free(l.tl_start);
	return ret;
}
