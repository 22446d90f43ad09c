/* Folded ("collapsed") stacks, the input of flamegraph.pl, inferno,
 * speedscope and gprof2dot: the plain writer and the two-column writer of
 * `ember diff`.  Frame texts are folded_text.c's. */
#define _GNU_SOURCE /* qsort_r, fwrite_unlocked, putc_unlocked */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "diff_union.h"
#include "exporters.h"
#include "folded_text.h"
#include "strtab.h"

/* ---- ember_write_folded ----
 *
 * Sorting works on integer ranks, not strings: every distinct frame text
 * gets a rank, then every distinct stack text gets a rank by sorting the
 * stacks, then lines sort by (thread root rank, stack rank).  That is their
 * bytewise order because a thread root always has more frames after it.
 *
 * Frame texts are interned: equal texts, equal pointers and equal ranks.
 * Ranks order texts as "text;" compares bytewise, which is how two stacks
 * compare at their first differing frame when more frames follow on both. */
struct folded_text {
	const char *s;
	uint32_t len;
	uint32_t rank;
};

#define STACK_KEYS 4

/* A stack with samples, and the ranks of its first frames that have more
 * frames after them, copied here so that most comparisons during the sort
 * decide without a cache miss into the profile's stack arrays. */
struct folded_stack {
	uint32_t stack;
	uint32_t nkey;
	uint32_t key[STACK_KEYS];
	uint64_t count;        /* over all threads; 0: not printed */
};

/* A row as an output line, before lines that print alike merge. */
struct folded_line {
	uint32_t thread_rank, stack_rank;
	uint32_t thread, stack;
	uint64_t count;
};

struct folded_ctx {
	const struct ember_profile *p;
	struct folded_text *frames;   /* by frame id */
	struct folded_text *threads;  /* by thread index: root frame texts */
	struct folded_text unknown;   /* stands in for an empty stack */
};

/* Frames of a stack as printed: an empty stack prints as [unknown]. */
static uint32_t stack_frames(const struct folded_ctx *c, uint32_t stack)
{
	uint32_t n = ember_profile_stack_depth(c->p, stack);

	return n ? n : 1;
}

static const struct folded_text *stack_frame(const struct folded_ctx *c, uint32_t stack, uint32_t k)
{
	uint32_t n;
	const uint32_t *ids = ember_profile_stack_frames(c->p, stack, &n);

	return n ? &c->frames[ids[k]] : &c->unknown;
}

/* Bytewise order of the stack strings: text a followed by ';' when more
 * frames follow, or by the end of the stack, which sorts before any byte. */
static int cmp_frame_texts(const char *a, bool more_a, const char *b, bool more_b)
{
	for (size_t i = 0;; i++) {
		int ca = a[i] ? (unsigned char)a[i] : more_a ? ';' : -1;
		int cb = b[i] ? (unsigned char)b[i] : more_b ? ';' : -1;
		if (ca != cb)
			return ca < cb ? -1 : 1;
		if (!a[i] || !b[i])
			return 0;
	}
}

static int cmp_stacks(const void *x, const void *y, void *arg)
{
	const struct folded_ctx *c = arg;
	const struct folded_stack *a = x, *b = y;
	uint32_t k;

	for (k = 0; k < a->nkey && k < b->nkey; k++)
		if (a->key[k] != b->key[k])
			return a->key[k] < b->key[k] ? -1 : 1;

	uint32_t na = stack_frames(c, a->stack), nb = stack_frames(c, b->stack);
	for (; k < na && k < nb; k++) {
		const struct folded_text *ta = stack_frame(c, a->stack, k);
		const struct folded_text *tb = stack_frame(c, b->stack, k);
		bool more_a = k + 1 < na, more_b = k + 1 < nb;

		if (ta->rank == tb->rank)
			continue;
		/* Ranks assume a ';' after both; at a stack's end only the
		 * bytes can tell (one text may be a prefix of the other). */
		if (more_a && more_b)
			return ta->rank < tb->rank ? -1 : 1;
		return cmp_frame_texts(ta->s, more_a, tb->s, more_b);
	}
	return na < nb ? -1 : na > nb;
}

static int cmp_lines(const void *x, const void *y)
{
	const struct folded_line *a = x, *b = y;

	if (a->thread_rank != b->thread_rank)
		return a->thread_rank < b->thread_rank ? -1 : 1;
	return a->stack_rank < b->stack_rank ? -1 : a->stack_rank > b->stack_rank;
}

static int cmp_text_ptrs(const void *x, const void *y)
{
	const struct folded_text *a = *(const struct folded_text *const *)x;
	const struct folded_text *b = *(const struct folded_text *const *)y;

	return a->s == b->s ? 0 : cmp_frame_texts(a->s, true, b->s, true);
}

static int intern_text(struct folded_text *t, struct ember_strtab *strings, const struct text_buf *b)
{
	if (b->len >= UINT32_MAX || !(t->s = ember_strtab_intern(strings, b->s, b->len)))
		return -1;
	t->len = (uint32_t)b->len;
	return 0;
}

/* Rank all texts: sort them once, so that sorting compares integers. */
static int rank_texts(struct folded_ctx *c, uint32_t nthreads)
{
	size_t nf = ember_profile_nframes(c->p), n = nf + nthreads + 1, i;
	struct folded_text **all = malloc(n * sizeof(*all));
	uint32_t rank = 0;

	if (!all)
		return -1;
	for (i = 0; i < nf; i++)
		all[i] = &c->frames[i];
	for (i = 0; i < nthreads; i++)
		all[nf + i] = &c->threads[i];
	all[n - 1] = &c->unknown;
	qsort(all, n, sizeof(*all), cmp_text_ptrs);
	for (i = 0; i < n; i++) {
		if (i && all[i]->s != all[i - 1]->s)
			rank++;
		all[i]->rank = rank;
	}
	free(all);
	return 0;
}

/* Intern and rank the text of every frame and (with threads) thread root. */
static int build_texts(struct folded_ctx *c, struct ember_strtab *strings, uint32_t nthreads)
{
	const struct ember_profile *p = c->p;
	uint32_t nframes = ember_profile_nframes(p);
	struct text_buf b = { 0 };
	int ret = -1;

	c->frames = malloc(((size_t)nframes + 1) * sizeof(*c->frames));
	c->threads = malloc(((size_t)nthreads + 1) * sizeof(*c->threads));
	if (!c->frames || !c->threads || tb_puts(&b, "[unknown]") < 0 ||
	    intern_text(&c->unknown, strings, &b) < 0)
		goto out;
	for (uint32_t i = 0; i < nframes; i++) {
		b.len = 0;
		if (folded_frame_text(&b, ember_profile_frame_at(p, i)) < 0 ||
		    intern_text(&c->frames[i], strings, &b) < 0)
			goto out;
	}
	for (uint32_t i = 0; i < nthreads; i++) {
		b.len = 0;
		if (folded_thread_text(&b, ember_profile_thread_at(p, i)) < 0 ||
		    intern_text(&c->threads[i], strings, &b) < 0)
			goto out;
	}
	ret = rank_texts(c, nthreads);
out:
	free(b.s);
	return ret;
}

/* Rank of every stack with samples (by stack id), from sorting them;
 * stacks that print alike (frames differing only in what the text leaves
 * out, e.g. first_line) get the same rank.  NULL on OOM. */
static uint32_t *rank_stacks(const struct folded_ctx *c)
{
	const struct ember_profile *p = c->p;
	uint32_t nstacks = ember_profile_nstacks(p);
	struct folded_stack *st = calloc((size_t)nstacks + 1, sizeof(*st));
	uint32_t *rank = calloc((size_t)nstacks + 1, sizeof(*rank));
	size_t m = 0;

	if (!st || !rank) {
		free(st);
		free(rank);
		return NULL;
	}
	for (uint32_t r = 0; r < ember_profile_nrows(p); r++) {
		const struct ember_sample_row *row = ember_profile_row_at(p, r);
		st[row->stack].count += row->count;
	}
	for (uint32_t s = 0; s < nstacks; s++) {
		if (!st[s].count)
			continue;
		/* compact in place: m <= s */
		struct folded_stack *e = &st[m++];
		uint32_t nf = stack_frames(c, s);
		*e = (struct folded_stack){ .stack = s, .count = st[s].count };
		e->nkey = nf - 1 < STACK_KEYS ? nf - 1 : STACK_KEYS;
		for (uint32_t k = 0; k < e->nkey; k++)
			e->key[k] = stack_frame(c, s, k)->rank;
	}
	qsort_r(st, m, sizeof(*st), cmp_stacks, (void *)c);
	for (size_t i = 0, r = 0; i < m; i++) {
		if (i && cmp_stacks(&st[i - 1], &st[i], (void *)c) != 0)
			r++;
		rank[st[i].stack] = (uint32_t)r;
	}
	free(st);
	return rank;
}

/* Lines of rows with samples, sorted by (thread root, stack) ranks (the
 * thread rank 0 for all without threads); *n gets their number.  NULL on
 * OOM. */
static struct folded_line *sorted_lines(const struct folded_ctx *c, const uint32_t *stack_rank, bool threads,
					size_t *n)
{
	const struct ember_profile *p = c->p;
	uint32_t nrows = ember_profile_nrows(p);
	struct folded_line *lines = malloc(((size_t)nrows + 1) * sizeof(*lines));

	*n = 0;
	if (!lines)
		return NULL;
	for (uint32_t r = 0; r < nrows; r++) {
		const struct ember_sample_row *row = ember_profile_row_at(p, r);
		if (row->count)
			lines[(*n)++] = (struct folded_line){
				.thread_rank = threads ? c->threads[row->thread].rank : 0,
				.stack_rank = stack_rank[row->stack],
				.thread = row->thread, .stack = row->stack, .count = row->count };
	}
	qsort(lines, *n, sizeof(*lines), cmp_lines);
	return lines;
}

static void print_stack(FILE *out, const struct folded_ctx *c, uint32_t stack)
{
	uint32_t nf = stack_frames(c, stack);

	for (uint32_t k = 0; k < nf; k++) {
		const struct folded_text *t = stack_frame(c, stack, k);
		if (k)
			putc_unlocked(';', out);
		fwrite_unlocked(t->s, 1, t->len, out);
	}
}

/* One line per row; lines of equal ranks merge.  Without threads every
 * thread rank is 0, so this is also where rows of one stack on several
 * threads add up. */
static int print_lines(FILE *out, const struct folded_ctx *c, const uint32_t *stack_rank, bool threads)
{
	char num[32];
	size_t n;
	struct folded_line *lines = sorted_lines(c, stack_rank, threads, &n);

	if (!lines)
		return -1;
	for (size_t i = 0; i < n && !ferror(out);) {
		uint64_t count = lines[i].count;
		size_t j = i + 1;

		while (j < n && cmp_lines(&lines[i], &lines[j]) == 0)
			count += lines[j++].count;
		if (threads) {
			const struct folded_text *root = &c->threads[lines[i].thread];
			fwrite_unlocked(root->s, 1, root->len, out);
			putc_unlocked(';', out);
		}
		print_stack(out, c, lines[i].stack);
		int len = snprintf(num, sizeof(num), " %" PRIu64 "\n", count);
		fwrite_unlocked(num, 1, (size_t)len, out);
		i = j;
	}
	free(lines);
	return 0;
}

/* The two-column lines of ember_write_folded_diff: the profile is the union
 * of both runs (diff_union.c), a row's thread being its run; a stack of
 * both runs is one line, and the lines come out in bytewise order.  BASE
 * counts are put on NEW's scale and rounded (not truncated, as
 * difffolded.pl -n does: a stack of 1 sample scaled by 0.6 is still there).
 * A line that rounds to "0 0" is left out. */
static int print_diff_lines(FILE *out, const struct folded_ctx *c, const uint32_t *stack_rank, double base_factor)
{
	char num[64];
	size_t n;
	struct folded_line *lines = sorted_lines(c, stack_rank, false, &n);

	if (!lines)
		return -1;
	for (size_t i = 0; i < n && !ferror(out);) {
		uint64_t count[2] = { 0, 0 };
		size_t j = i;

		for (; j < n && lines[j].stack_rank == lines[i].stack_rank; j++)
			count[lines[j].thread == DIFF_THREAD_BASE ? 0 : 1] += lines[j].count;
		double scaled = (double)count[0] * base_factor + 0.5;
		uint64_t b = scaled >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)scaled;
		if (b || count[1]) {
			print_stack(out, c, lines[i].stack);
			int len = snprintf(num, sizeof(num), " %" PRIu64 " %" PRIu64 "\n", b, count[1]);
			fwrite_unlocked(num, 1, (size_t)len, out);
		}
		i = j;
	}
	free(lines);
	return 0;
}

/* Rank p's texts and stacks, then print its lines under one stdio lock:
 * plain lines (thread roots with threads), or with diff the two-column
 * lines, BASE counts x base_factor.  0, or -1 with errno (ENOMEM, the
 * stream's error, or EIO). */
static int write_folded(FILE *out, const struct ember_profile *p, bool threads, bool diff, double base_factor)
{
	struct folded_ctx c = { .p = p };
	struct ember_strtab *strings = ember_strtab_new();
	uint32_t *stack_rank = NULL;
	int ret = -1, rc;

	if (!strings || build_texts(&c, strings, threads ? ember_profile_nthreads(p) : 0) < 0 ||
	    !(stack_rank = rank_stacks(&c))) {
		errno = ENOMEM;
		goto out;
	}
	flockfile(out);
	errno = 0;
	rc = diff ? print_diff_lines(out, &c, stack_rank, base_factor) : print_lines(out, &c, stack_rank, threads);
	funlockfile(out);
	if (rc < 0)
		errno = ENOMEM;
	else if (fflush(out) == 0 && !ferror(out))
		ret = 0;
	else if (!errno)
		errno = EIO;
out:
	free(stack_rank);
	free(c.frames);
	free(c.threads);
	ember_strtab_free(strings);
	return ret;
}

int ember_write_folded(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o)
{
	return write_folded(out, p, o && o->threads, false, 0);
}

int ember_write_folded_diff(FILE *out, const struct ember_profile *base, const struct ember_profile *new_,
			    const struct ember_diff_export_opts *o)
{
	struct ember_profile u;

	if (diff_union(&u, base, new_) < 0)
		return -1;
	int ret = write_folded(out, &u, false, true, o->scale[1] > 0 ? o->scale[0] / o->scale[1] : 1);
	ember_profile_free(&u);
	return ret;
}
