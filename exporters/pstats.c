/* pstats: the marshal file cProfile's `dump_stats` writes, built from samples,
 * for `python -m pstats`, snakeviz and gprof2dot.  docs/consumers.md §3 has
 * the data model (§3.1), the marshal subset (§3.2), what consumers need
 * (§3.3) and the mapping from samples (§3.4) implemented here.
 *
 * Keys (file, line, name), one per function:
 *   Python    (file, first_line, name); `line` when first_line is 0, so the
 *             frames of one function at different lines are one key
 *   native    ("~", 0, "<name>")            pstats prints {name}
 *   interp    ("~", 0, "<name>")            (interpreter internals are native code)
 *   kernel    ("~", 0, "<name [kernel]>")
 *   special   skipped ([truncated], [unknown], roots)
 *   threads   ("~", 0, "<thread NAME (TID)>") above each thread's stacks,
 *             and ("~", 0, "<all threads>") above those, when o->threads
 *             (§3.4: snakeviz then shows one whole tree)
 *   no frame  ("~", 0, "<unknown>") when a sample has no frame left
 *   no sample ("~", 0, "<no samples>") as the only entry: an empty dict
 *             does not load
 * Strings are valid UTF-8 (an ill-formed sequence becomes U+FFFD), control
 * characters become ' ' (they break pstats' line-per-function output), and
 * an empty name reads "[unknown]".
 *
 * Values, with Δ = ember_profile_interval_s(): hits = samples with the key on
 * the stack, counted once per sample however deep the recursion (cProfile's
 * outermost-activation rule); self = samples with the key as the leaf.
 *   (cc, nc, tt, ct) = (hits, hits, self·Δ, hits·Δ)
 *   callers[p] = (nc, cc, tt, ct) = (e, e, leaf·Δ, e·Δ), e = samples in which
 *   p calls the key directly (once per sample), leaf = those where the key
 *   is the leaf called by p.
 * Every caller key is a top-level key.  Output is sorted by (file, line,
 * name), so equal profiles give equal bytes.
 *
 * Marshal subset (§3.2, pstats_marshal.h): only '{' ... '0', '(' + int32
 * count, 'i' ('l' past int32), 'g' and 'u', never FLAG_REF: Python 2.7 to
 * 3.13 all read it. */
#define _GNU_SOURCE /* qsort_r, putc_unlocked, fwrite_unlocked */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "exporters.h"
#include "grow.h"
#include "hash.h"
#include "idtab.h"
#include "pstats_marshal.h"
#include "strtab.h"
#include "text.h"

#define NO_KEY UINT32_MAX

/* One pstats key: a function. */
struct ps_key {
	const char *enc;       /* the marshal bytes of the key tuple, interned */
	uint32_t enc_len;
	uint32_t line;
	const char *file, *name; /* sanitised, for sorting */
	uint64_t hits, self;
	uint32_t stamp;        /* row + 1 that last counted hits */
	uint32_t rank;         /* position in the output */
};

/* A caller edge: caller calls callee directly. */
struct ps_edge {
	uint32_t callee, caller;
	uint64_t hits, leaf;
	uint32_t stamp;
};

struct ps_ctx {
	const struct ember_profile *p;
	struct ember_strtab *strings;
	struct ps_key *keys;
	size_t nkeys, keys_cap;
	struct ember_idtab key_index;    /* interned enc pointer -> key */
	struct ps_edge *edges;
	size_t nedges, edges_cap;
	struct ember_idtab edge_index;   /* (callee, caller) -> edge */
	uint32_t *frame_key;             /* by frame id: key, NO_KEY (special), or unset */
	uint32_t *thread_key;            /* by thread index, NO_KEY until needed */
	uint32_t all_key, unknown_key;
	struct text_buf buf;             /* scratch for building a key's bytes */
};

#define KEY_UNSET (UINT32_MAX - 1)

/* 'u' + int32 byte length + the UTF-8 of prefix, s sanitised (dflt when
 * empty), suffix. */
static int put_str(struct text_buf *b, const char *prefix, const char *s, const char *dflt,
		   const char *suffix)
{
	unsigned char u[5] = { 'u' };
	size_t at = b->len;

	if (tb_put(b, u, 5) < 0 || tb_puts(b, prefix) < 0 || tb_put_clean(b, s, strlen(s)) < 0 ||
	    (!*s && tb_puts(b, dflt) < 0) || tb_puts(b, suffix) < 0)
		return -1;
	if (b->len - at - 5 > INT32_MAX) {
		errno = EOVERFLOW;
		return -1;
	}
	marshal_le32((unsigned char *)b->s + at + 1, (uint32_t)(b->len - at - 5));
	return 0;
}

static int put_int(struct text_buf *b, uint64_t v)
{
	unsigned char m[16];

	return tb_put(b, m, marshal_int(m, v));
}

/* ---- keys ---- */

struct key_probe {
	const char *enc;
};

static bool key_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ps_ctx *c = ctx;

	return c->keys[id].enc == ((const struct key_probe *)key)->enc;
}

/* The text of the 'u' string at enc + at, interned (NUL-terminated). */
static const char *str_at(struct ps_ctx *c, const char *enc, size_t at)
{
	uint32_t len = 0;

	for (int i = 0; i < 4; i++)
		len |= (uint32_t)(unsigned char)enc[at + 1 + i] << (8 * i);
	return ember_strtab_intern(c->strings, enc + at + 5, len);
}

/* Key for (file, line, prefix + name (dflt when empty) + suffix); NO_KEY on
 * OOM (errno set). */
static uint32_t make_key(struct ps_ctx *c, const char *file, uint32_t line, const char *prefix,
			 const char *name, const char *dflt, const char *suffix)
{
	static const unsigned char tuple3[5] = { '(', 3, 0, 0, 0 };
	size_t name_at;

	c->buf.len = 0;
	if (tb_put(&c->buf, tuple3, 5) < 0 || put_str(&c->buf, "", file, "", "") < 0 || put_int(&c->buf, line) < 0)
		goto oom;
	name_at = c->buf.len;
	if (put_str(&c->buf, prefix, name, dflt, suffix) < 0)
		goto oom;

	const char *enc = ember_strtab_intern(c->strings, c->buf.s, c->buf.len);
	if (!enc || c->buf.len > UINT32_MAX)
		goto oom;
	struct key_probe probe = { enc };
	uint64_t h = ember_hash_ptr(enc);
	uint32_t id = ember_idtab_find(&c->key_index, h, key_eq, c, &probe);
	if (id != UINT32_MAX)
		return id;
	if (ember_grow((void **)&c->keys, &c->keys_cap, sizeof(*c->keys), c->nkeys + 1) < 0 ||
	    c->nkeys >= KEY_UNSET - 1)
		goto oom;
	id = (uint32_t)c->nkeys;
	struct ps_key *k = &c->keys[id];
	*k = (struct ps_key){ .enc = enc, .enc_len = (uint32_t)c->buf.len, .line = line };
	k->file = str_at(c, enc, 5);
	k->name = str_at(c, enc, name_at);
	if (!k->file || !k->name || ember_idtab_insert(&c->key_index, h, id) < 0)
		goto oom;
	c->nkeys++;
	return id;
oom:
	if (errno != EOVERFLOW)
		errno = ENOMEM;
	return NO_KEY;
}

#define builtin_key(c, prefix, name, suffix) make_key((c), "~", 0, (prefix), (name), "[unknown]", (suffix))

/* Key of frame id f, NO_KEY for skipped frames; *err on OOM. */
static uint32_t frame_key(struct ps_ctx *c, uint32_t f, bool *err)
{
	const struct ember_frame *fr = ember_profile_frame_at(c->p, f);
	uint32_t k;

	if (c->frame_key[f] != KEY_UNSET)
		return c->frame_key[f];
	switch (fr->kind) {
	case EMBER_FRAME_PYTHON:
		k = make_key(c, fr->file ? fr->file : "", fr->first_line ? fr->first_line : fr->line,
			     "", fr->name ? fr->name : "", "[unknown]", "");
		break;
	case EMBER_FRAME_KERNEL:
		k = builtin_key(c, "<", fr->name ? fr->name : "", " [kernel]>");
		break;
	case EMBER_FRAME_SPECIAL:
		return c->frame_key[f] = NO_KEY;
	default:       /* native, interpreter */
		k = builtin_key(c, "<", fr->name ? fr->name : "", ">");
		break;
	}
	if (k == NO_KEY)
		*err = true;
	return c->frame_key[f] = k;
}

static uint32_t thread_key(struct ps_ctx *c, uint32_t t)
{
	const struct ember_thread *th = ember_profile_thread_at(c->p, t);
	char tid[32];

	if (c->thread_key[t] != NO_KEY)
		return c->thread_key[t];
	const char *name = th->name ? th->name : "";
	/* "<thread (TID)>" when the thread was never named */
	snprintf(tid, sizeof(tid), "%s(%" PRIu32 ")>", *name ? " " : "", th->tid);
	return c->thread_key[t] = make_key(c, "~", 0, "<thread ", name, "", tid);
}

/* ---- edges ---- */

static bool edge_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ps_edge *e = &((const struct ps_ctx *)ctx)->edges[id], *k = key;

	return e->callee == k->callee && e->caller == k->caller;
}

static struct ps_edge *edge(struct ps_ctx *c, uint32_t callee, uint32_t caller)
{
	struct ps_edge q = { .callee = callee, .caller = caller };
	uint64_t h = ember_hash_pair(callee, caller);
	uint32_t id = ember_idtab_find(&c->edge_index, h, edge_eq, c, &q);

	if (id != UINT32_MAX)
		return &c->edges[id];
	if (c->nedges >= UINT32_MAX - 1 ||
	    ember_grow((void **)&c->edges, &c->edges_cap, sizeof(*c->edges), c->nedges + 1) < 0 ||
	    ember_idtab_insert(&c->edge_index, h, (uint32_t)c->nedges) < 0)
		return NULL;
	c->edges[c->nedges] = (struct ps_edge){ .callee = callee, .caller = caller };
	return &c->edges[c->nedges++];
}

/* ---- aggregation (§3.4 items 1-3) ---- */

/* Count row r: its keys once each, its leaf, its distinct adjacent pairs once
 * each.  seq has room for the stack's depth + 3. */
static int add_row(struct ps_ctx *c, uint32_t r, bool threads, uint32_t *seq)
{
	const struct ember_sample_row *row = ember_profile_row_at(c->p, r);
	uint32_t n = 0, nf, stamp = r + 1;
	const uint32_t *ids = ember_profile_stack_frames(c->p, row->stack, &nf);
	uint64_t w = row->count;
	bool err = false;

	if (threads) {
		seq[n++] = c->all_key;
		if ((seq[n++] = thread_key(c, row->thread)) == NO_KEY)
			return -1;
	}
	uint32_t first = n;
	for (uint32_t i = 0; i < nf; i++) {
		uint32_t k = frame_key(c, ids[i], &err);
		if (err)
			return -1;
		if (k != NO_KEY)
			seq[n++] = k;
	}
	if (n == first) {
		if (c->unknown_key == NO_KEY &&
		    (c->unknown_key = builtin_key(c, "<", "unknown", ">")) == NO_KEY)
			return -1;
		seq[n++] = c->unknown_key;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct ps_key *k = &c->keys[seq[i]];
		if (k->stamp != stamp) {
			k->stamp = stamp;
			k->hits += w;
		}
	}
	c->keys[seq[n - 1]].self += w;
	for (uint32_t i = 1; i < n; i++) {
		struct ps_edge *e = edge(c, seq[i], seq[i - 1]);
		if (!e)
			return -1;
		if (e->stamp != stamp) {
			e->stamp = stamp;
			e->hits += w;
		}
		if (i == n - 1)
			e->leaf += w;
	}
	return 0;
}

/* ---- output ---- */

static int cmp_keys(const void *x, const void *y)
{
	const struct ps_key *a = *(const struct ps_key *const *)x, *b = *(const struct ps_key *const *)y;
	int d = strcmp(a->file, b->file);

	if (d)
		return d;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp_edges(const void *x, const void *y, void *arg)
{
	const struct ps_edge *a = x, *b = y;
	const struct ps_key *k = arg;

	if (a->callee != b->callee)
		return k[a->callee].rank < k[b->callee].rank ? -1 : 1;
	if (a->caller != b->caller)
		return k[a->caller].rank < k[b->caller].rank ? -1 : 1;
	return 0;
}

static void write_dict(FILE *out, const struct ps_ctx *c, struct ps_key *const *order, size_t nout,
		       double dt)
{
	size_t e = 0;

	putc_unlocked('{', out);
	for (size_t i = 0; i < nout; i++) {
		const struct ps_key *k = order[i];
		uint32_t id = (uint32_t)(k - c->keys);

		fwrite_unlocked(k->enc, 1, k->enc_len, out);
		marshal_counts(out, 5, k->hits, (double)k->self * dt, (double)k->hits * dt);
		putc_unlocked('{', out);
		while (e < c->nedges && c->keys[c->edges[e].callee].rank < k->rank)
			e++;
		for (; e < c->nedges && c->edges[e].callee == id; e++) {
			const struct ps_edge *ed = &c->edges[e];
			const struct ps_key *caller = &c->keys[ed->caller];

			fwrite_unlocked(caller->enc, 1, caller->enc_len, out);
			marshal_counts(out, 4, ed->hits, (double)ed->leaf * dt, (double)ed->hits * dt);
		}
		putc_unlocked('0', out);
	}
	putc_unlocked('0', out);
}

static int build(struct ps_ctx *c, bool threads)
{
	const struct ember_profile *p = c->p;
	uint32_t nframes = ember_profile_nframes(p), nthreads = ember_profile_nthreads(p);
	uint32_t nrows = ember_profile_nrows(p), maxdepth = 0;

	c->frame_key = malloc(((size_t)nframes + 1) * sizeof(*c->frame_key));
	c->thread_key = malloc(((size_t)nthreads + 1) * sizeof(*c->thread_key));
	if (!c->frame_key || !c->thread_key)
		return -1;
	for (uint32_t i = 0; i < nframes; i++)
		c->frame_key[i] = KEY_UNSET;
	for (uint32_t i = 0; i < nthreads; i++)
		c->thread_key[i] = NO_KEY;
	for (uint32_t r = 0; r < nrows; r++) {
		uint32_t depth = ember_profile_stack_depth(p, ember_profile_row_at(p, r)->stack);
		if (depth > maxdepth)
			maxdepth = depth;
	}

	uint32_t *seq = malloc(((size_t)maxdepth + 3) * sizeof(*seq));
	if (!seq)
		return -1;
	int ret = 0;
	if (threads && (c->all_key = builtin_key(c, "<", "all threads", ">")) == NO_KEY)
		ret = -1;
	for (uint32_t r = 0; r < nrows && ret == 0; r++)
		if (ember_profile_row_at(p, r)->count)
			ret = add_row(c, r, threads, seq);
	free(seq);
	return ret;
}

int ember_write_pstats(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o)
{
	struct ps_ctx c = { .p = p, .all_key = NO_KEY, .unknown_key = NO_KEY };
	struct ps_key **order = NULL;
	size_t nout = 0;
	uint32_t none = NO_KEY;
	int ret = -1;

	errno = 0;
	if (!(c.strings = ember_strtab_new()) || ember_idtab_init(&c.key_index) < 0 ||
	    ember_idtab_init(&c.edge_index) < 0 || build(&c, o && o->threads) < 0)
		goto oom;
	/* Keys without samples (an "all threads" root above nothing) are left
	 * out; no edge names them.  None left: one "<no samples>" entry. */
	for (size_t i = 0; i < c.nkeys; i++)
		nout += c.keys[i].hits > 0;
	if (!nout && (none = builtin_key(&c, "<", "no samples", ">")) == NO_KEY)
		goto oom;
	if (!(order = malloc((nout + 1) * sizeof(*order))))
		goto oom;
	nout = 0;
	for (size_t i = 0; i < c.nkeys; i++)
		if (c.keys[i].hits || i == none)
			order[nout++] = &c.keys[i];
	qsort(order, nout, sizeof(*order), cmp_keys);
	for (size_t i = 0; i < c.nkeys; i++)
		c.keys[i].rank = UINT32_MAX;
	for (size_t i = 0; i < nout; i++)
		order[i]->rank = (uint32_t)i;
	if (c.nedges)
		qsort_r(c.edges, c.nedges, sizeof(*c.edges), cmp_edges, c.keys);

	flockfile(out);
	write_dict(out, &c, order, nout, ember_profile_interval_s(p));
	funlockfile(out);
	if (fflush(out) == 0 && !ferror(out))
		ret = 0;
	else if (!errno)
		errno = EIO;
	goto out;
oom:
	if (errno != EOVERFLOW)
		errno = ENOMEM;
out:
	free(order);
	free(c.keys);
	free(c.edges);
	free(c.frame_key);
	free(c.thread_key);
	free(c.buf.s);
	ember_idtab_free(&c.key_index);
	ember_idtab_free(&c.edge_index);
	ember_strtab_free(c.strings);
	return ret;
}
