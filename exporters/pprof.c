/* pprof: a perftools.profiles.Profile protobuf (docs/formats.md §5),
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
 * and "pid" (numbers), e.g. pprof -tagfocus=tid=4250.  Comments (pprof
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
 * the tables, not the encoded file.  The wire encoding is pprof_wire.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "diff_union.h"
#include "exporters.h"
#include "json_out.h"
#include "pprof_wire.h"
#include "profile_internal.h"

/* ---- tables ---- */

struct pp_func {
	uint32_t name, system_name, filename;
	uint32_t start_line;
};

struct pp_loc {
	uint32_t mapping;      /* id, 0: none */
	uint32_t off, n;       /* lines: line_data[off .. off + 2n), (function id, line) pairs */
};

struct pp_mapping {
	uint32_t filename;
	bool has_filenames, has_lines, has_inline;
	uint64_t root_samples;  /* samples whose outermost machine frame is here */
	uint32_t id;            /* as written: the likely main binary is 1 */
};

struct pp_ctx {
	const struct ember_profile *p;
	struct pb scratch;     /* sanitised text */

	/* string table: strings[i] is string index i */
	struct ember_strtab *text;
	const char **strings;
	uint32_t *string_len;
	size_t nstrings, strings_cap, string_len_cap;
	struct ember_idtab string_tab;   /* by interned pointer */

	struct pp_func *funcs;           /* function id - 1 */
	size_t nfuncs, funcs_cap;
	struct ember_idtab func_tab;

	struct pp_loc *locs;             /* location id - 1 */
	size_t nlocs, locs_cap;
	uint32_t *line_data;
	size_t line_len, line_cap;
	struct ember_idtab loc_tab;

	struct pp_mapping *maps;         /* mapping id - 1 */
	size_t nmaps, maps_cap, main_map;
	uint32_t *map_of_string;         /* string index -> mapping id, 0 */
	size_t map_of_string_cap;

	uint32_t *frame_func;            /* ember frame id -> function id, 0 until known */
	uint32_t *frame_map;             /* ember frame id -> mapping id + 1, 0 until known */

	uint32_t *stack_off, *stack_n;   /* stack -> its leaf-first locations in stack_locs */
	uint32_t *stack_root;            /* stack -> mapping of its outermost machine frame, 0 */
	uint64_t *stack_locs;
	size_t stack_locs_len, stack_locs_cap;
	uint32_t unknown_loc;            /* location of an empty stack, 0 until needed */

	bool oom;
};

static bool eq_string(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct pp_ctx *)ctx)->strings[id] == key;
}

/* String index of s[0..n) made valid UTF-8 with controls as spaces. */
static uint32_t str_idx_n(struct pp_ctx *c, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	struct pb *b = &c->scratch;

	b->len = 0;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t len = ember_utf8_next(u + i, n - i, &cp);
		if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
			pb_raw(b, " ", 1);
		else if (cp == 0xfffd)
			pb_raw(b, "\xef\xbf\xbd", 3);
		else
			pb_raw(b, u + i, len);
		i += len;
	}
	if (b->oom || b->len >= UINT32_MAX) {
		c->oom = true;
		return 0;
	}
	const char *t = ember_strtab_intern(c->text, b->len ? (const char *)b->b : "", b->len);
	if (!t) {
		c->oom = true;
		return 0;
	}
	uint64_t h = ember_hash_ptr(t);
	uint32_t id = ember_idtab_find(&c->string_tab, h, eq_string, c, t);
	if (id != UINT32_MAX)
		return id;
	if (ember_grow((void **)&c->strings, &c->strings_cap, sizeof(*c->strings), c->nstrings + 1) < 0 ||
	    ember_grow((void **)&c->string_len, &c->string_len_cap, sizeof(*c->string_len), c->nstrings + 1) < 0 ||
	    ember_idtab_insert(&c->string_tab, h, (uint32_t)c->nstrings) < 0) {
		c->oom = true;
		return 0;
	}
	c->strings[c->nstrings] = t;
	c->string_len[c->nstrings] = (uint32_t)b->len;
	return (uint32_t)c->nstrings++;
}

static uint32_t str_idx(struct pp_ctx *c, const char *s)
{
	return str_idx_n(c, s ? s : "", s ? strlen(s) : 0);
}

static bool eq_func(const void *ctx, uint32_t id, const void *key)
{
	const struct pp_func *a = &((const struct pp_ctx *)ctx)->funcs[id], *b = key;

	return a->name == b->name && a->system_name == b->system_name && a->filename == b->filename &&
	       a->start_line == b->start_line;
}

/* Function id (1-based) of f. */
static uint32_t func_id(struct pp_ctx *c, const struct pp_func *f)
{
	uint64_t h = ember_hash_bytes(f, sizeof(*f), 0x5eed);
	uint32_t id = ember_idtab_find(&c->func_tab, h, eq_func, c, f);

	if (id != UINT32_MAX)
		return id + 1;
	if (ember_grow((void **)&c->funcs, &c->funcs_cap, sizeof(*c->funcs), c->nfuncs + 1) < 0 ||
	    ember_idtab_insert(&c->func_tab, h, (uint32_t)c->nfuncs) < 0) {
		c->oom = true;
		return 1;
	}
	c->funcs[c->nfuncs++] = *f;
	return (uint32_t)c->nfuncs;
}

static uint32_t frame_func(struct pp_ctx *c, uint32_t frame)
{
	if (c->frame_func[frame])
		return c->frame_func[frame];

	const struct ember_frame *f = &c->p->frames[frame];
	const char *name = f->name && *f->name ? f->name : "[unknown]";
	struct pp_func fn = { .name = str_idx(c, name), .filename = str_idx(c, f->file),
			      .start_line = f->first_line };
	fn.system_name = fn.name;
	return c->frame_func[frame] = func_id(c, &fn);
}

/* Mapping id of the module of a native, interpreter or kernel frame; 0. */
static uint32_t frame_mapping(struct pp_ctx *c, uint32_t frame)
{
	const struct ember_frame *f = &c->p->frames[frame];

	if (c->frame_map[frame])
		return c->frame_map[frame] - 1;
	if (f->kind == EMBER_FRAME_PYTHON || f->kind == EMBER_FRAME_SPECIAL || !f->module || !*f->module) {
		c->frame_map[frame] = 1;
		return 0;
	}

	uint32_t s = str_idx(c, f->module);
	if (c->oom)
		return 0;
	if (s >= c->map_of_string_cap) {
		size_t old = c->map_of_string_cap;
		if (ember_grow((void **)&c->map_of_string, &c->map_of_string_cap, sizeof(uint32_t), (size_t)s + 1) < 0) {
			c->oom = true;
			return 0;
		}
		memset(c->map_of_string + old, 0, (c->map_of_string_cap - old) * sizeof(uint32_t));
	}
	if (!c->map_of_string[s]) {
		if (ember_grow((void **)&c->maps, &c->maps_cap, sizeof(*c->maps), c->nmaps + 1) < 0) {
			c->oom = true;
			return 0;
		}
		c->maps[c->nmaps++] = (struct pp_mapping){ .filename = s };
		c->map_of_string[s] = (uint32_t)c->nmaps;
	}
	c->frame_map[frame] = c->map_of_string[s] + 1;
	return c->map_of_string[s];
}

struct loc_key {
	uint32_t mapping, n;
	const uint32_t *lines;  /* n (function, line) pairs */
};

static uint64_t hash_loc(const struct loc_key *k)
{
	return ember_hash_bytes(k->lines, (size_t)k->n * 2 * sizeof(uint32_t), k->mapping);
}

static bool eq_loc(const void *ctx, uint32_t id, const void *key)
{
	const struct pp_ctx *c = ctx;
	const struct pp_loc *a = &c->locs[id];
	const struct loc_key *b = key;

	return a->mapping == b->mapping && a->n == b->n &&
	       memcmp(c->line_data + a->off, b->lines, (size_t)b->n * 2 * sizeof(uint32_t)) == 0;
}

/* Location id (1-based) of mapping + the (function, line) pairs, which are
 * the last 2n entries of line_data (dropped again when the location exists). */
static uint32_t loc_id(struct pp_ctx *c, uint32_t mapping, uint32_t n)
{
	size_t off = c->line_len - (size_t)n * 2;
	struct loc_key k = { mapping, n, c->line_data + off };
	uint64_t h = hash_loc(&k);
	uint32_t id = ember_idtab_find(&c->loc_tab, h, eq_loc, c, &k);

	if (id != UINT32_MAX) {
		c->line_len = off;
		return id + 1;
	}
	if (ember_grow((void **)&c->locs, &c->locs_cap, sizeof(*c->locs), c->nlocs + 1) < 0 ||
	    ember_idtab_insert(&c->loc_tab, h, (uint32_t)c->nlocs) < 0) {
		c->oom = true;
		return 1;
	}
	c->locs[c->nlocs++] = (struct pp_loc){ mapping, (uint32_t)off, n };
	return (uint32_t)c->nlocs;
}

static void push_line(struct pp_ctx *c, uint32_t func, uint32_t line)
{
	if (ember_grow((void **)&c->line_data, &c->line_cap, sizeof(uint32_t), c->line_len + 2) < 0) {
		c->oom = true;
		return;
	}
	c->line_data[c->line_len++] = func;
	c->line_data[c->line_len++] = line;
}

static void push_stack_loc(struct pp_ctx *c, uint64_t loc)
{
	if (ember_grow((void **)&c->stack_locs, &c->stack_locs_cap, sizeof(uint64_t), c->stack_locs_len + 1) < 0)
		c->oom = true;
	else
		c->stack_locs[c->stack_locs_len++] = loc;
}

/* Is frame b (inlined) part of the same machine frame as its caller a? */
static bool joins(const struct ember_frame *a, const struct ember_frame *b)
{
	return b->inlined && a->kind != EMBER_FRAME_PYTHON && a->kind != EMBER_FRAME_SPECIAL &&
	       b->kind != EMBER_FRAME_PYTHON && b->kind != EMBER_FRAME_SPECIAL && a->module == b->module;
}

/* Leaf-first location ids of stack, once per stack. */
static void build_stack(struct pp_ctx *c, uint32_t stack)
{
	if (c->stack_n[stack] || c->oom)
		return;

	uint32_t n;
	const uint32_t *ids = ember_profile_stack_frames(c->p, stack, &n);
	const struct ember_frame *fr = c->p->frames;

	c->stack_off[stack] = (uint32_t)c->stack_locs_len;
	if (n == 0) {
		if (!c->unknown_loc) {
			struct pp_func fn = { .name = str_idx(c, "[unknown]") };
			fn.system_name = fn.name;
			push_line(c, func_id(c, &fn), 0);
			c->unknown_loc = loc_id(c, 0, 1);
		}
		push_stack_loc(c, c->unknown_loc);
		c->stack_n[stack] = 1;
		return;
	}
	/* Walk leaf to root; a machine frame is [a..b]: b, its inlined
	 * callers up to a, the frame that is not inlined into another. */
	uint32_t count = 0, root = 0;
	for (uint32_t b = n; b-- > 0;) {
		uint32_t a = b;
		while (a > 0 && joins(&fr[ids[a - 1]], &fr[ids[a]]))
			a--;
		for (uint32_t k = b + 1; k-- > a;)   /* innermost first */
			push_line(c, frame_func(c, ids[k]), fr[ids[k]].line);
		uint32_t mapping = frame_mapping(c, ids[a]);
		if (c->oom)
			return;
		if (mapping) {
			struct pp_mapping *m = &c->maps[mapping - 1];
			for (uint32_t k = a; k <= b; k++) {
				m->has_filenames |= fr[ids[k]].file && *fr[ids[k]].file;
				m->has_lines |= fr[ids[k]].line != 0;
			}
			m->has_inline |= b > a;
		}
		push_stack_loc(c, loc_id(c, mapping, b - a + 1));
		if (mapping)
			root = mapping;
		count++;
		b = a;
	}
	c->stack_n[stack] = count;
	c->stack_root[stack] = root;
}

/* ---- writing ---- */

static void write_value_type(struct gz *g, struct pb *m, uint32_t field, uint32_t type, uint32_t unit)
{
	m->len = 0;
	pb_uint(m, 1, type);
	pb_uint(m, 2, unit);
	gz_field(g, field, m);
}

struct pp_labels {
	uint32_t thread, tid, pid;   /* key string indices */
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
	values[0] = *base ? (uint64_t)-(int64_t)n : n;   /* int64 on the wire: 10-byte varint */
	values[1] = values[0] * period;
	return true;
}

static void write_samples(struct pp_ctx *c, struct gz *g, const struct pp_labels *lk, uint64_t period,
			  const struct pp_diff *diff)
{
	const struct ember_profile *p = c->p;
	struct pb m = { 0 }, label = { 0 };

	for (uint32_t r = 0; r < p->nrows && !g->err; r++) {
		const struct ember_sample_row *row = &p->rows[r];
		const struct ember_thread *t = &p->threads[row->thread];
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
		gz_field(g, 2, &m);
	}
	free(m.b);
	free(label.b);
}

/* pprof reports call mapping 1 the main binary ("File:" in its header):
 * make it the module where most samples' outermost machine frame is (the
 * executable's _start, or the interpreter's), the rest in order of use. */
static void number_mappings(struct pp_ctx *c)
{
	size_t main = 0;   /* then 1 is main, 2.. the others in order */

	for (size_t i = 1; i < c->nmaps; i++)
		if (c->maps[i].root_samples > c->maps[main].root_samples)
			main = i;
	for (size_t i = 0, id = 2; i < c->nmaps; i++)
		c->maps[i].id = i == main ? 1 : (uint32_t)id++;
	c->main_map = main;
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

static void ctx_free(struct pp_ctx *c)
{
	ember_strtab_free(c->text);
	ember_idtab_free(&c->string_tab);
	ember_idtab_free(&c->func_tab);
	ember_idtab_free(&c->loc_tab);
	free(c->scratch.b);
	free(c->strings);
	free(c->string_len);
	free(c->funcs);
	free(c->locs);
	free(c->line_data);
	free(c->maps);
	free(c->map_of_string);
	free(c->frame_func);
	free(c->frame_map);
	free(c->stack_off);
	free(c->stack_n);
	free(c->stack_root);
	free(c->stack_locs);
}

/* The diff's own comments: which run is which, and the normalisation. */
static void diff_comments(struct pp_ctx *c, const struct pp_diff *diff, uint32_t *out)
{
	const struct ember_diff_export_opts *o = diff->o;
	char *s = NULL;

	if (asprintf(&s, "diff: NEW = %s; BASE = %s, negated and labelled pprof::base=true (as pprof -diff_base)",
		     o->new_name ? o->new_name : "NEW", o->base_name ? o->base_name : "BASE") >= 0) {
		out[0] = str_idx(c, s);
		free(s);
	} else {
		c->oom = true;
	}
	if (asprintf(&s, "normalization: %s; BASE counts x %.6g onto NEW's scale", o->normalization ? o->normalization : "-",
		     diff->base_factor) >= 0) {
		out[1] = str_idx(c, s);
		free(s);
	} else {
		c->oom = true;
	}
}

static int write_pprof(FILE *out, const struct ember_profile *p, const struct pp_diff *diff)
{
	const struct ember_run_meta *meta = &p->meta;
	struct pp_ctx c = { .p = p };
	struct pp_labels lk = { 0 };
	struct gz *g = NULL;
	uint64_t period = ember_export_interval_ns(p);
	uint32_t comments[5] = { 0 }, samples, count, cpu, ns;
	char text[256];
	int ret = -1;

	c.frame_func = calloc((size_t)p->nframes + 1, sizeof(uint32_t));
	c.frame_map = calloc((size_t)p->nframes + 1, sizeof(uint32_t));
	c.stack_off = calloc((size_t)p->nstacks + 1, sizeof(uint32_t));
	c.stack_n = calloc((size_t)p->nstacks + 1, sizeof(uint32_t));
	c.stack_root = calloc((size_t)p->nstacks + 1, sizeof(uint32_t));
	lk.thread_name = calloc((size_t)p->nthreads + 1, sizeof(uint32_t));
	c.text = ember_strtab_new();
	if (!c.frame_func || !c.frame_map || !c.stack_off || !c.stack_n || !c.stack_root || !lk.thread_name || !c.text ||
	    ember_idtab_init(&c.string_tab) < 0 || ember_idtab_init(&c.func_tab) < 0 ||
	    ember_idtab_init(&c.loc_tab) < 0) {
		c.oom = true;
		goto out;
	}

	/* Pass 1: every string, function, location and mapping. */
	str_idx(&c, "");                     /* string_table[0] */
	samples = str_idx(&c, "samples");
	count = str_idx(&c, "count");
	cpu = str_idx(&c, "cpu");
	ns = str_idx(&c, "nanoseconds");
	lk.thread = str_idx(&c, "thread");
	lk.tid = str_idx(&c, "tid");
	lk.pid = str_idx(&c, "pid");
	if (diff) {
		lk.base_key = str_idx(&c, "pprof::base");
		lk.base_true = str_idx(&c, "true");
	}
	for (uint32_t r = 0; r < p->nrows && !c.oom; r++) {
		const struct ember_sample_row *row = &p->rows[r];
		if (!row->count)
			continue;
		build_stack(&c, row->stack);
		if (!c.oom && c.stack_root[row->stack])
			c.maps[c.stack_root[row->stack] - 1].root_samples += row->count;
		const char *name = p->threads[row->thread].name;
		if (!diff && !lk.thread_name[row->thread] && name && *name)
			lk.thread_name[row->thread] = str_idx(&c, name);
	}
	comments[0] = str_idx(&c, "exporter: ember@" EMBER_VERSION);
	comments[1] = 0;
	if (meta->command && *meta->command) {
		size_t n = strlen(meta->command);
		char *s = malloc(n + 10);
		if (s) {
			memcpy(s, "command: ", 9);
			memcpy(s + 9, meta->command, n + 1);
			comments[1] = str_idx(&c, s);
			free(s);
		} else {
			c.oom = true;
		}
	}
	snprintf(text, sizeof(text), "samples: %" PRIu64 " taken, %" PRIu64 " lost, %" PRIu64 " truncated, "
		 "%" PRIu64 " unwind errors; %" PRIu32 " Hz", meta->samples, meta->lost, meta->truncated,
		 meta->unwind_errors, meta->freq_hz);
	if (diff)   /* the counters are NEW's alone: not the diff's */
		diff_comments(&c, diff, comments + 3);
	else
		comments[2] = str_idx(&c, text);
	if (c.oom)
		goto out;
	number_mappings(&c);

	/* Pass 2: stream the fields, in the order Go writes them. */
	if (!(g = calloc(1, sizeof(*g)))) {
		c.oom = true;
		goto out;
	}
	g->out = out;
	if (deflateInit2(&g->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16 /* gzip */, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		c.oom = true;   /* zlib's only failure here is memory */
		goto out;
	}
	struct pb m = { 0 };
	write_value_type(g, &m, 1, samples, count);
	write_value_type(g, &m, 1, cpu, ns);
	write_samples(&c, g, &lk, period, diff);
	write_tables(&c, g);
	gz_scalar(g, 9, meta->start_unix_ns);
	gz_scalar(g, 10, meta->duration_ns);
	write_value_type(g, &m, 11, cpu, ns);
	gz_scalar(g, 12, period);
	m.len = 0;
	for (size_t i = 0; i < sizeof(comments) / sizeof(comments[0]); i++)
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
	deflateEnd(&g->zs);
	if (g->err) {
		errno = g->err;
	} else {
		ret = ember_json_finish(out);   /* fflush + ferror */
	}
out:
	if (c.oom) {
		errno = ENOMEM;
		ret = -1;
	}
	free(g);
	free(lk.thread_name);
	ctx_free(&c);
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
	int ret;

	if (ember_profile_init(&u) != 0) {
		errno = ENOMEM;
		return -1;
	}
	if (diff_union(&u, base, new_) < 0) {
		errno = ENOMEM;
		ret = -1;
	} else {
		ret = write_pprof(out, &u, &diff);
	}
	ember_profile_free(&u);
	return ret;
}
