/* Folded ("collapsed") stacks, the input of flamegraph.pl, inferno,
 * speedscope and gprof2dot.  docs/formats.md §1 has what each of them
 * accepts; the sanitising here is its §1.5. */
#define _GNU_SOURCE /* qsort_r, fwrite_unlocked, putc_unlocked */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "diff_union.h"
#include "exporters.h"
#include "profile_internal.h"

struct text_buf {
	char *s;
	size_t len, cap;
};

static int tb_put(struct text_buf *b, const void *s, size_t n)
{
	if (ember_grow((void **)&b->s, &b->cap, 1, b->len + n + 1) < 0)
		return -1;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

#define tb_puts(b, s) tb_put((b), (s), strlen(s))

/* Whitespace as Perl's Unicode \s knows it (flamegraph.pl decodes its input
 * as UTF-8), less the ASCII controls, which never survive sanitising. */
static bool is_space_cp(uint32_t cp)
{
	return cp == ' ' || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
	       (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
	       cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* Start of the character before s[end] (the text is valid UTF-8). */
static size_t prev_char(const char *s, size_t start, size_t end)
{
	while (--end > start && ((unsigned char)s[end] & 0xc0) == 0x80)
		;
	return end;
}

static uint32_t char_at(const char *s, size_t i, size_t end)
{
	uint32_t cp;

	ember_utf8_next((const unsigned char *)s + i, end - i, &cp);
	return cp;
}

/* End of s[start..end) without its trailing whitespace. */
static size_t trim_end(const char *s, size_t start, size_t end)
{
	while (end > start && is_space_cp(char_at(s, prev_char(s, start, end), end)))
		end = prev_char(s, start, end);
	return end;
}

/* Append s to b sanitised, trimmed of whitespace at both ends.  Returns the
 * number of bytes appended, or -1 on OOM. */
static long put_sanitized(struct text_buf *b, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), start = b->len, i = 0;

	while (i < n) {
		uint32_t cp;
		size_t len = ember_utf8_next(u + i, n - i, &cp);
		int rc;

		if (cp == ';')
			rc = tb_put(b, ":", 1);   /* the frame separator */
		else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == 0x2028 || cp == 0x2029)
			/* Controls break lines (LF, CR; NEL for Python's
			 * splitlines, LS/PS for JavaScript regexes) or XML, and
			 * TAB is a count separator to flamegraph.pl. */
			rc = tb_put(b, " ", 1);
		else if (cp == 0xfffd)
			rc = tb_put(b, "\xef\xbf\xbd", 3); /* also for invalid bytes */
		else
			rc = tb_put(b, u + i, len);
		if (rc < 0)
			return -1;
		i += len;
	}

	if (b->len == start)
		return 0;      /* b->s may still be NULL */
	/* Consumers disagree on leading and trailing blanks (inferno trims the
	 * line, flamegraph.pl keeps them), so no frame has any.  (The blanks
	 * are ' ', or 2-byte U+0085/U+00A0, or 3-byte U+1680 and above.) */
	size_t end = trim_end(b->s, start, b->len), lead = start;
	while (lead < end && is_space_cp(char_at(b->s, lead, end)))
		lead += b->s[lead] == ' ' ? 1 : ((unsigned char)b->s[lead] < 0xe0 ? 2 : 3);
	memmove(b->s + start, b->s + lead, end - lead);
	b->len = start + (end - lead);
	b->s[b->len] = '\0';
	return (long)(b->len - start);
}

#define is_digit(c) ((c) >= '0' && (c) <= '9')

/* Does s[start..end) end in whitespace + a number as flamegraph.pl reads
 * counts (\s+?\d+(\.\d*)?$)?  Then the last frame of a line would be read
 * as the first count of a differential line. */
static bool ends_in_count(const char *s, size_t start, size_t end)
{
	size_t i = end;

	while (i > start && is_digit(s[i - 1]))
		i--;
	if (i > start && s[i - 1] == '.') {
		size_t j = i - 1;
		while (j > start && is_digit(s[j - 1]))
			j--;
		if (j == i - 1)
			return false;  /* ".5": the number is preceded by '.' */
		i = j;
	} else if (i == end) {
		return false;
	}
	return i > start && is_space_cp(char_at(s, prev_char(s, start, i), i));
}

/* The sanitised text of frame f, appended to b. */
static int frame_text(struct text_buf *b, const struct ember_frame *f)
{
	size_t start = b->len;

	long name_len = put_sanitized(b, f->name ? f->name : "");

	if (name_len < 0 || (name_len == 0 && tb_puts(b, "[unknown]") < 0))
		return -1;
	if (f->kind == EMBER_FRAME_KERNEL)
		return tb_puts(b, "_[k]");   /* the perf/FlameGraph kernel annotation */
	if (f->kind == EMBER_FRAME_PYTHON && f->file) {
		/* py-spy's "name (file:line)": gprof2dot and inferno's python
		 * palette recognise it. */
		size_t open = b->len;
		long n;
		char num[16];

		if (tb_puts(b, " (") < 0 || (n = put_sanitized(b, f->file)) < 0)
			return -1;
		if (n > 0) {
			snprintf(num, sizeof(num), ":%" PRIu32 ")", f->line);
			return tb_puts(b, f->line ? num : ")");
		}
		b->len = open;  /* no file: the bare name */
		b->s[open] = '\0';
	}
	if (ends_in_count(b->s, start, b->len))
		return tb_puts(b, "_");
	return 0;
}

/* "name (tid)", py-spy's "thread (tid)" when the thread was never named. */
static int thread_text(struct text_buf *b, const struct ember_thread *t)
{
	char num[24];
	long n = put_sanitized(b, t->name ? t->name : "");

	if (n < 0)
		return -1;
	snprintf(num, sizeof(num), "%s (%" PRIu32 ")", n ? "" : "thread", t->tid);
	return tb_puts(b, num);
}

size_t ember_folded_frame_text(const struct ember_frame *f, char *buf, size_t size)
{
	struct text_buf b = { 0 };
	size_t n;

	if (!size)
		return 0;
	if (frame_text(&b, f) < 0) {
		free(b.s);
		*buf = '\0';
		return 0;
	}
	n = b.len;
	if (n >= size) {
		/* Cut at a character boundary and keep the rules: no trailing
		 * blank, and room for the '_' after a cut ending in " 123". */
		n = size - 1;
		while (n > 0 && ((unsigned char)b.s[n] & 0xc0) == 0x80)
			n--;
		for (;;) {
			n = trim_end(b.s, 0, n);
			if (n == 0 || !ends_in_count(b.s, 0, n))
				break;
			if (n + 1 < size) {
				b.s[n++] = '_';
				break;
			}
			n--;   /* drop a digit to make room */
		}
	}
	memcpy(buf, b.s, n);
	buf[n] = '\0';
	free(b.s);
	return n;
}

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
	return c->p->stack_len[stack] ? c->p->stack_len[stack] : 1;
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
	size_t nf = c->p->nframes, n = nf + nthreads + 1, i;
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
	struct text_buf b = { 0 };
	int ret = -1;

	c->frames = malloc(((size_t)p->nframes + 1) * sizeof(*c->frames));
	c->threads = malloc(((size_t)nthreads + 1) * sizeof(*c->threads));
	if (!c->frames || !c->threads || tb_puts(&b, "[unknown]") < 0 ||
	    intern_text(&c->unknown, strings, &b) < 0)
		goto out;
	for (uint32_t i = 0; i < p->nframes; i++) {
		b.len = 0;
		if (frame_text(&b, &p->frames[i]) < 0 || intern_text(&c->frames[i], strings, &b) < 0)
			goto out;
	}
	for (uint32_t i = 0; i < nthreads; i++) {
		b.len = 0;
		if (thread_text(&b, &p->threads[i]) < 0 || intern_text(&c->threads[i], strings, &b) < 0)
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
	struct folded_stack *st = calloc((size_t)p->nstacks + 1, sizeof(*st));
	uint32_t *rank = calloc((size_t)p->nstacks + 1, sizeof(*rank));
	size_t m = 0;

	if (!st || !rank) {
		free(st);
		free(rank);
		return NULL;
	}
	for (uint32_t r = 0; r < p->nrows; r++)
		st[p->rows[r].stack].count += p->rows[r].count;
	for (uint32_t s = 0; s < p->nstacks; s++) {
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

/* One line per row, sorted by (thread root, stack) ranks; lines of equal
 * ranks merge.  Without threads every thread rank is 0, so this is also
 * where rows of one stack on several threads add up. */
static int print_lines(FILE *out, const struct folded_ctx *c, const uint32_t *stack_rank, bool threads)
{
	const struct ember_profile *p = c->p;
	struct folded_line *lines = malloc(((size_t)p->nrows + 1) * sizeof(*lines));
	char num[32];
	size_t n = 0;

	if (!lines)
		return -1;
	for (uint32_t r = 0; r < p->nrows; r++) {
		const struct ember_sample_row *row = &p->rows[r];
		if (row->count)
			lines[n++] = (struct folded_line){
				.thread_rank = threads ? c->threads[row->thread].rank : 0,
				.stack_rank = stack_rank[row->stack],
				.thread = row->thread, .stack = row->stack, .count = row->count };
	}
	qsort(lines, n, sizeof(*lines), cmp_lines);
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
		uint32_t nf = stack_frames(c, lines[i].stack);
		for (uint32_t k = 0; k < nf; k++) {
			const struct folded_text *t = stack_frame(c, lines[i].stack, k);
			if (k)
				putc_unlocked(';', out);
			fwrite_unlocked(t->s, 1, t->len, out);
		}
		int len = snprintf(num, sizeof(num), " %" PRIu64 "\n", count);
		fwrite_unlocked(num, 1, (size_t)len, out);
		i = j;
	}
	free(lines);
	return 0;
}

/* The result of a locked print: 0 when it (rc) and the stream went well,
 * else -1 with errno (ENOMEM from the printer, the stream's error, or EIO;
 * the caller cleared errno before printing). */
static int finish_output(FILE *out, int rc)
{
	if (rc < 0) {
		errno = ENOMEM;
		return -1;
	}
	if (fflush(out) == 0 && !ferror(out))
		return 0;
	if (!errno)
		errno = EIO;
	return -1;
}

int ember_write_folded(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o)
{
	bool threads = o && o->threads;
	struct folded_ctx c = { .p = p };
	struct ember_strtab *strings = ember_strtab_new();
	uint32_t *stack_rank = NULL;
	int ret = -1, rc;

	if (!strings || build_texts(&c, strings, threads ? p->nthreads : 0) < 0 ||
	    !(stack_rank = rank_stacks(&c))) {
		errno = ENOMEM;
		goto out;
	}
	/* One lock for the whole output instead of one per call. */
	flockfile(out);
	errno = 0;
	rc = print_lines(out, &c, stack_rank, threads);
	funlockfile(out);
	ret = finish_output(out, rc);
out:
	free(stack_rank);
	free(c.frames);
	free(c.threads);
	ember_strtab_free(strings);
	return ret;
}

/* ---- ember_write_folded_diff: "stack BASE NEW" ----
 *
 * Both runs in one profile (diff_union.c), a row's thread being its run;
 * stacks are ranked as above, so a stack of both runs is one line and the
 * lines come out in bytewise order.  BASE counts are put on NEW's scale and
 * rounded (not truncated, as difffolded.pl -n does: a stack of 1 sample
 * scaled by 0.6 is still there).  A line that rounds to "0 0" is left out. */
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

static int print_diff_lines(FILE *out, const struct folded_ctx *c, const uint32_t *stack_rank, double base_factor)
{
	const struct ember_profile *p = c->p;
	struct folded_line *lines = malloc(((size_t)p->nrows + 1) * sizeof(*lines));
	char num[64];
	size_t n = 0;

	if (!lines)
		return -1;
	for (uint32_t r = 0; r < p->nrows; r++) {
		const struct ember_sample_row *row = &p->rows[r];
		if (row->count)
			lines[n++] = (struct folded_line){ .stack_rank = stack_rank[row->stack], .thread = row->thread,
							   .stack = row->stack, .count = row->count };
	}
	qsort(lines, n, sizeof(*lines), cmp_lines);
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

int ember_write_folded_diff(FILE *out, const struct ember_profile *base, const struct ember_profile *new_,
			    const struct ember_diff_export_opts *o)
{
	struct ember_profile u;
	struct folded_ctx c = { .p = &u };
	struct ember_strtab *strings = NULL;
	uint32_t *stack_rank = NULL;
	double factor = o->scale[1] > 0 ? o->scale[0] / o->scale[1] : 1;
	int ret = -1, rc;

	if (ember_profile_init(&u) != 0) {
		errno = ENOMEM;
		return -1;
	}
	if (diff_union(&u, base, new_) < 0 || !(strings = ember_strtab_new()) || build_texts(&c, strings, 0) < 0 ||
	    !(stack_rank = rank_stacks(&c))) {
		errno = ENOMEM;
		goto out;
	}
	flockfile(out);
	errno = 0;
	rc = print_diff_lines(out, &c, stack_rank, factor);
	funlockfile(out);
	ret = finish_output(out, rc);
out:
	free(stack_rank);
	free(c.frames);
	free(c.threads);
	ember_strtab_free(strings);
	ember_profile_free(&u);
	return ret;
}
