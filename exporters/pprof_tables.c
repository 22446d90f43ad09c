/* The tables of the pprof writer (pprof_tables.h): every string,
 * function, location and mapping a profile needs, interned through id
 * tables, and each stack as leaf-first location ids. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "pprof_tables.h"

int pp_ctx_init(struct pp_ctx *c, const struct ember_profile *p)
{
	size_t nframes = ember_profile_nframes(p), nstacks = ember_profile_nstacks(p);

	*c = (struct pp_ctx){ .p = p };
	c->frame_func = calloc(nframes + 1, sizeof(uint32_t));
	c->frame_map = calloc(nframes + 1, sizeof(uint32_t));
	c->stack_off = calloc(nstacks + 1, sizeof(uint32_t));
	c->stack_n = calloc(nstacks + 1, sizeof(uint32_t));
	c->stack_root = calloc(nstacks + 1, sizeof(uint32_t));
	c->text = ember_strtab_new();
	if (!c->frame_func || !c->frame_map || !c->stack_off || !c->stack_n || !c->stack_root || !c->text ||
	    ember_idtab_init(&c->string_tab) < 0 || ember_idtab_init(&c->func_tab) < 0 ||
	    ember_idtab_init(&c->loc_tab) < 0)
		c->oom = true;
	return c->oom ? -1 : 0;
}

void pp_ctx_free(struct pp_ctx *c)
{
	ember_strtab_free(c->text);
	ember_idtab_free(&c->string_tab);
	ember_idtab_free(&c->func_tab);
	ember_idtab_free(&c->loc_tab);
	free(c->scratch.s);
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

static bool eq_string(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct pp_ctx *)ctx)->strings[id] == key;
}

/* String index of s[0..n) made valid UTF-8 with controls as spaces. */
static uint32_t str_idx_n(struct pp_ctx *c, const char *s, size_t n)
{
	struct text_buf *b = &c->scratch;

	b->len = 0;
	if (tb_put_clean(b, s, n) < 0 || b->len >= UINT32_MAX) {
		c->oom = true;
		return 0;
	}
	const char *t = ember_strtab_intern(c->text, b->len ? b->s : "", b->len);
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

uint32_t pp_str(struct pp_ctx *c, const char *s)
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

	const struct ember_frame *f = ember_profile_frame_at(c->p, frame);
	const char *name = f->name && *f->name ? f->name : "[unknown]";
	struct pp_func fn = { .name = pp_str(c, name), .filename = pp_str(c, f->file),
			      .start_line = f->first_line };
	fn.system_name = fn.name;
	return c->frame_func[frame] = func_id(c, &fn);
}

/* Mapping id of the module of a native, interpreter or kernel frame; 0. */
static uint32_t frame_mapping(struct pp_ctx *c, uint32_t frame)
{
	const struct ember_frame *f = ember_profile_frame_at(c->p, frame);

	if (c->frame_map[frame])
		return c->frame_map[frame] - 1;
	if (f->kind == EMBER_FRAME_PYTHON || f->kind == EMBER_FRAME_SPECIAL || !f->module || !*f->module) {
		c->frame_map[frame] = 1;
		return 0;
	}

	uint32_t s = pp_str(c, f->module);
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

void pp_build_stack(struct pp_ctx *c, uint32_t stack)
{
	if (c->stack_n[stack] || c->oom)
		return;

	uint32_t n;
	const uint32_t *ids = ember_profile_stack_frames(c->p, stack, &n);

	c->stack_off[stack] = (uint32_t)c->stack_locs_len;
	if (n == 0) {
		if (!c->unknown_loc) {
			struct pp_func fn = { .name = pp_str(c, "[unknown]") };
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
		while (a > 0 && joins(ember_profile_frame_at(c->p, ids[a - 1]), ember_profile_frame_at(c->p, ids[a])))
			a--;
		for (uint32_t k = b + 1; k-- > a;)   /* innermost first */
			push_line(c, frame_func(c, ids[k]), ember_profile_frame_at(c->p, ids[k])->line);
		uint32_t mapping = frame_mapping(c, ids[a]);
		if (c->oom)
			return;
		if (mapping) {
			struct pp_mapping *m = &c->maps[mapping - 1];
			for (uint32_t k = a; k <= b; k++) {
				const struct ember_frame *f = ember_profile_frame_at(c->p, ids[k]);
				m->has_filenames |= f->file && *f->file;
				m->has_lines |= f->line != 0;
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

/* pprof reports call mapping 1 the main binary ("File:" in its header):
 * make it the module where most samples' outermost machine frame is (the
 * executable's _start, or the interpreter's), the rest in order of use. */
void pp_number_mappings(struct pp_ctx *c)
{
	size_t main = 0;   /* then 1 is main, 2.. the others in order */

	for (size_t i = 1; i < c->nmaps; i++)
		if (c->maps[i].root_samples > c->maps[main].root_samples)
			main = i;
	for (size_t i = 0, id = 2; i < c->nmaps; i++)
		c->maps[i].id = i == main ? 1 : (uint32_t)id++;
	c->main_map = main;
}
