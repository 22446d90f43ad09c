/* pprof: a perftools.profiles.Profile protobuf (docs/consumers.md §5),
 * encoded by hand and gzip-compressed with zlib.
 *
 * Values: sample_type [samples/count, cpu/nanoseconds], period_type
 * cpu/nanoseconds, period = the sample interval in ns, so value[1] =
 * value[0] x period (Go's CPU profile convention); pprof shows the last type.
 *
 * Functions: one per (name, system_name, filename, start_line); name and
 * system_name are the frame name ("[unknown]" when empty), start_line is a
 * Python function's first line.  Locations: one per distinct (mapping, line
 * list).  A native frame inlined into its caller shares its caller's
 * location, as a Line before the caller's (pprof's inline convention).
 * Locations are leaf first in each sample; an empty stack is one
 * "[unknown]" location.
 *
 * Mappings: one per module of the native, interpreter and kernel frames, with
 * filename = the module and has_functions set (so pprof never tries to
 * symbolize); ember keeps no addresses, so memory ranges and addresses are 0.
 * Python frames have mapping_id 0 (unknown mapping, allowed).
 *
 * Labels on each sample: "thread" (the thread name, when it has one), "tid"
 * and "pid" (numbers), e.g. pprof -tagfocus=tid=4250; a pool thread's
 * samples put under their dispatcher's stack (docs/pools.md) also
 * "dispatcher_frames": how many frames from the root are the dispatcher's.  Comments (pprof
 * -comments): the exporter, the command, the sample counters.
 *
 * A differential profile (ember_write_pprof_diff, `ember diff -o X.pb.gz`)
 * holds both runs: NEW's samples as they are, BASE's negated (on NEW's
 * scale) with the label pprof::base=true and no thread labels -- what
 * `pprof -diff_base` builds in memory -- plus comments naming the runs and
 * the normalisation.
 *
 * Strings are made valid UTF-8 (U+FFFD for ill-formed bytes) and control
 * characters become spaces, so text reports stay one line per entry.
 *
 * The top-level fields are streamed through deflate one at a time: memory is
 * the tables (pprof_tables.c), not the encoded file.  The wire encoding is
 * pprof_wire.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "diff_union.h"
#include "exporters.h"
#include "json_out.h"
#include "pprof_tables.h"
#include "pprof_wire.h"

static void write_value_type(struct gz *g, struct pb *m, uint32_t field, uint32_t type, uint32_t unit)
{
	m->len = 0;
	pb_uint(m, 1, type);
	pb_uint(m, 2, unit);
	gz_field(g, field, m);
}

struct pp_labels {
	uint32_t thread, tid, pid;   /* key string indices */
	uint32_t dispatcher;         /* "dispatcher_frames", when a row is attributed; else 0 */
	uint32_t *thread_name;       /* by thread index; 0: no label */
	uint32_t base_key, base_true;   /* diff: "pprof::base", "true" */
};

/* A differential profile (ember_write_pprof_diff): the profile is the
 * union of both runs, thread DIFF_THREAD_BASE holding BASE's rows. */
struct pp_diff {
	const struct ember_diff_export_opts *o;
	double base_factor;          /* BASE counts -> NEW's scale */
};

/* Values of one row: counts, and cpu = counts x period.  A diff negates
 * BASE on NEW's scale (rounded) and drops thread labels (the runs' threads
 * are unrelated); pprof -diff_base does the same with its base profile. */
static bool row_values(const struct ember_sample_row *row, const struct pp_diff *diff, uint64_t period,
		       uint64_t values[2], bool *base)
{
	uint64_t n = row->count;

	*base = diff && row->thread == DIFF_THREAD_BASE;
	if (*base) {
		double scaled = (double)n * diff->base_factor + 0.5;
		n = scaled >= 9.2e18 ? (uint64_t)INT64_MAX : (uint64_t)scaled;
	}
	if (!n)
		return false;
	/* n <= EMBER_COUNT_MAX (profile.h), an int64; the cpu value stops
	 * there too rather than wrap */
	uint64_t cpu = ember_count_mul(n, period);
	cpu = cpu > EMBER_COUNT_MAX ? EMBER_COUNT_MAX : cpu;
	values[0] = *base ? (uint64_t)-(int64_t)n : n;   /* int64 on the wire: 10-byte varint */
	values[1] = *base ? (uint64_t)-(int64_t)cpu : cpu;
	return true;
}

static void write_samples(struct pp_ctx *c, struct gz *g, const struct pp_labels *lk, uint64_t period,
			  const struct pp_diff *diff)
{
	const struct ember_profile *p = c->p;
	struct pb m = { 0 }, label = { 0 };

	for (uint32_t r = 0; r < ember_profile_nrows(p) && !g->err; r++) {
		const struct ember_sample_row *row = ember_profile_row_at(p, r);
		const struct ember_thread *t = ember_profile_thread_at(p, row->thread);
		uint64_t values[2];
		bool base;

		if (!row->count || !row_values(row, diff, period, values, &base))
			continue;
		m.len = 0;
		pb_packed(&m, 1, c->stack_locs + c->stack_off[row->stack], c->stack_n[row->stack]);
		pb_packed(&m, 2, values, 2);
		if (diff) {
			if (base) {
				label.len = 0;
				pb_uint(&label, 1, lk->base_key);
				pb_uint(&label, 2, lk->base_true);
				pb_msg(&m, 3, &label);
			}
			gz_field(g, 2, &m);
			continue;
		}
		if (lk->thread_name[row->thread]) {
			label.len = 0;
			pb_uint(&label, 1, lk->thread);
			pb_uint(&label, 2, lk->thread_name[row->thread]);
			pb_msg(&m, 3, &label);
		}
		label.len = 0;
		pb_uint(&label, 1, lk->tid);
		pb_uint(&label, 3, t->tid);
		pb_msg(&m, 3, &label);
		label.len = 0;
		pb_uint(&label, 1, lk->pid);
		pb_uint(&label, 3, t->pid);
		pb_msg(&m, 3, &label);
		if (row->depth) {
			label.len = 0;
			pb_uint(&label, 1, lk->dispatcher);
			pb_uint(&label, 3, row->depth);
			pb_msg(&m, 3, &label);
		}
		gz_field(g, 2, &m);
	}
	free(m.b);
	free(label.b);
}

static void write_tables(struct pp_ctx *c, struct gz *g)
{
	struct pb m = { 0 }, line = { 0 };

	for (uint32_t id = 1; id <= c->nmaps && !g->err; id++) {
		size_t i = id == 1 ? c->main_map : id - 2 < c->main_map ? id - 2 : id - 1;
		const struct pp_mapping *mp = &c->maps[i];
		m.len = 0;
		pb_uint(&m, 1, id);
		pb_uint(&m, 5, mp->filename);
		pb_uint(&m, 7, 1);
		pb_uint(&m, 8, mp->has_filenames);
		pb_uint(&m, 9, mp->has_lines);
		pb_uint(&m, 10, mp->has_inline);
		gz_field(g, 3, &m);
	}
	for (size_t i = 0; i < c->nlocs && !g->err; i++) {
		const struct pp_loc *l = &c->locs[i];
		m.len = 0;
		pb_uint(&m, 1, i + 1);
		pb_uint(&m, 2, l->mapping ? c->maps[l->mapping - 1].id : 0);
		for (uint32_t k = 0; k < l->n; k++) {
			line.len = 0;
			pb_uint(&line, 1, c->line_data[l->off + 2 * k]);
			pb_uint(&line, 2, c->line_data[l->off + 2 * k + 1]);
			pb_msg(&m, 4, &line);
		}
		gz_field(g, 4, &m);
	}
	for (size_t i = 0; i < c->nfuncs && !g->err; i++) {
		const struct pp_func *f = &c->funcs[i];
		m.len = 0;
		pb_uint(&m, 1, i + 1);
		pb_uint(&m, 2, f->name);
		pb_uint(&m, 3, f->system_name);
		pb_uint(&m, 4, f->filename);
		pb_uint(&m, 5, f->start_line);
		gz_field(g, 5, &m);
	}
	for (size_t i = 0; i < c->nstrings && !g->err; i++) {
		/* string_table[0] is "" and written explicitly: 32 00 */
		struct pb s = { .b = (unsigned char *)c->strings[i], .len = c->string_len[i] };
		gz_field(g, 6, &s);
	}
	free(m.b);
	free(line.b);
}

/* The diff's own comments: which run is which, and the normalisation. */
static void diff_comments(struct pp_ctx *c, const struct pp_diff *diff, uint32_t *out)
{
	const struct ember_diff_export_opts *o = diff->o;
	char *s = NULL;

	if (asprintf(&s, "diff: NEW = %s; BASE = %s, negated and labelled pprof::base=true (as pprof -diff_base)",
		     o->new_name ? o->new_name : "NEW", o->base_name ? o->base_name : "BASE") >= 0) {
		out[0] = pp_str(c, s);
		free(s);
	} else {
		c->oom = true;
	}
	if (asprintf(&s, "normalization: %s; BASE counts x %.6g onto NEW's scale", o->normalization ? o->normalization : "-",
		     diff->base_factor) >= 0) {
		out[1] = pp_str(c, s);
		free(s);
	} else {
		c->oom = true;
	}
}

/* The strings of the value types, by index. */
struct pp_types {
	uint32_t samples, count, cpu, ns;
};

/* Pass 1: every string, function, location and mapping, the labels and the
 * comments.  0, or -1 (c->oom) on OOM. */
static int collect(struct pp_ctx *c, struct pp_types *vt, struct pp_labels *lk, uint32_t comments[5],
		   const struct pp_diff *diff)
{
	const struct ember_profile *p = c->p;
	const struct ember_run_meta *meta = ember_profile_meta(p);
	char text[256];

	pp_str(c, "");                     /* string_table[0] */
	vt->samples = pp_str(c, "samples");
	vt->count = pp_str(c, "count");
	vt->cpu = pp_str(c, "cpu");
	vt->ns = pp_str(c, "nanoseconds");
	lk->thread = pp_str(c, "thread");
	lk->tid = pp_str(c, "tid");
	lk->pid = pp_str(c, "pid");
	for (uint32_t r = 0; r < ember_profile_nrows(p) && !diff && !lk->dispatcher; r++)
		if (ember_profile_row_at(p, r)->depth)
			lk->dispatcher = pp_str(c, "dispatcher_frames");
	if (diff) {
		lk->base_key = pp_str(c, "pprof::base");
		lk->base_true = pp_str(c, "true");
	}
	for (uint32_t r = 0; r < ember_profile_nrows(p) && !c->oom; r++) {
		const struct ember_sample_row *row = ember_profile_row_at(p, r);
		if (!row->count)
			continue;
		pp_build_stack(c, row->stack);
		if (!c->oom && c->stack_root[row->stack])
			c->maps[c->stack_root[row->stack] - 1].root_samples += row->count;
		const char *name = ember_profile_thread_at(p, row->thread)->name;
		if (!diff && !lk->thread_name[row->thread] && name && *name)
			lk->thread_name[row->thread] = pp_str(c, name);
	}
	comments[0] = pp_str(c, "exporter: ember@" EMBER_VERSION);
	if (meta->command && *meta->command) {
		char *s = NULL;
		if (asprintf(&s, "command: %s", meta->command) >= 0) {
			comments[1] = pp_str(c, s);
			free(s);
		} else {
			c->oom = true;
		}
	}
	snprintf(text, sizeof(text), "samples: %" PRIu64 " taken, %" PRIu64 " lost, %" PRIu64 " truncated, "
		 "%" PRIu64 " unwind errors; %" PRIu32 " Hz", meta->samples, meta->lost, meta->truncated,
		 meta->unwind_errors, meta->freq_hz);
	if (diff)   /* the counters are NEW's alone: not the diff's */
		diff_comments(c, diff, comments + 3);
	else
		comments[2] = pp_str(c, text);
	if (c->oom)
		return -1;
	pp_number_mappings(c);
	return 0;
}

/* Pass 2: the fields through deflate, in the order Go writes them. */
static void stream(struct pp_ctx *c, struct gz *g, const struct pp_types *vt, const struct pp_labels *lk,
		   const uint32_t comments[5], const struct pp_diff *diff)
{
	const struct ember_run_meta *meta = ember_profile_meta(c->p);
	uint64_t period = ember_export_interval_ns(c->p);
	struct pb m = { 0 };

	write_value_type(g, &m, 1, vt->samples, vt->count);
	write_value_type(g, &m, 1, vt->cpu, vt->ns);
	write_samples(c, g, lk, period, diff);
	write_tables(c, g);
	gz_scalar(g, 9, meta->start_unix_ns);
	gz_scalar(g, 10, meta->duration_ns);
	write_value_type(g, &m, 11, vt->cpu, vt->ns);
	gz_scalar(g, 12, period);
	m.len = 0;
	for (size_t i = 0; i < 5; i++)
		if (comments[i])
			pb_uint(&m, 13, comments[i]);   /* unpacked: the field's content is its items */
	if (m.oom)
		g->err = ENOMEM;
	else
		gz_write(g, m.b, m.len);
	free(m.b);
	if (!g->err) {
		g->zs.next_in = NULL;
		g->zs.avail_in = 0;
		gz_run(g, Z_FINISH);
	}
}

static int write_pprof(FILE *out, const struct ember_profile *p, const struct pp_diff *diff)
{
	struct pp_ctx c;
	struct pp_types vt;
	struct pp_labels lk = { 0 };
	struct gz *g = NULL;
	uint32_t comments[5] = { 0 };
	int ret = -1;

	lk.thread_name = calloc((size_t)ember_profile_nthreads(p) + 1, sizeof(uint32_t));
	if (pp_ctx_init(&c, p) < 0 || !lk.thread_name || collect(&c, &vt, &lk, comments, diff) < 0 ||
	    !(g = calloc(1, sizeof(*g)))) {
		c.oom = true;
		goto out;
	}
	g->out = out;
	if (deflateInit2(&g->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16 /* gzip */, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		c.oom = true;   /* zlib's only failure here is memory */
		goto out;
	}
	stream(&c, g, &vt, &lk, comments, diff);
	deflateEnd(&g->zs);
	if (g->err)
		errno = g->err;
	else
		ret = ember_json_finish(out);   /* fflush + ferror */
out:
	if (c.oom) {
		errno = ENOMEM;
		ret = -1;
	}
	free(g);
	free(lk.thread_name);
	pp_ctx_free(&c);
	return ret;
}

int ember_write_pprof(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o)
{
	(void)o;   /* threads are labels, always */
	return write_pprof(out, p, NULL);
}

int ember_write_pprof_diff(FILE *out, const struct ember_profile *base, const struct ember_profile *new_,
			   const struct ember_diff_export_opts *o)
{
	struct ember_profile u;
	struct pp_diff diff = { .o = o, .base_factor = o->scale[1] > 0 ? o->scale[0] / o->scale[1] : 1 };

	if (diff_union(&u, base, new_) < 0)
		return -1;
	int ret = write_pprof(out, &u, &diff);
	ember_profile_free(&u);
	return ret;
}
