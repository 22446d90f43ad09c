/* Top-N reports: self and total samples per function, line or module. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "profile_internal.h"

/* Labels longer than this many characters are shortened in the middle, so
 * that both the start of a name and the file:line at its end stay visible. */
#define LABEL_MAX_CHARS 80

/* A key's counts while the rows are made; id: the final, deterministic
 * tie-break (the order keys were met). */
struct key_count {
	const char *label;
	uint64_t self, total;
	uint32_t id;
};

static int cmp_by_self(const void *a, const void *b)
{
	const struct key_count *x = a, *y = b;
	int c;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if ((c = strcmp(x->label, y->label)) != 0)
		return c;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

int report_count_weighted(const struct ember_profile *p, const uint32_t *frame_key, const bool *skip,
			  const uint64_t *weight, uint32_t nkeys, uint64_t *self, uint64_t *total)
{
	uint32_t *stamp = calloc((size_t)nkeys + 1, sizeof(*stamp));   /* 1 + the last stack counted */

	if (!stamp)
		return -1;
	for (uint32_t s = 0; s < p->nstacks; s++) {
		uint32_t n;
		const uint32_t *ids = ember_profile_stack_frames(p, s, &n);
		uint64_t c = weight[s];
		bool leaf = true;

		for (uint32_t i = n; c && i-- > 0;) {
			uint32_t kid = frame_key[ids[i]];
			if (skip && skip[ids[i]])
				continue;
			/* the innermost frame of the view is the one running */
			if (leaf && kid != UINT32_MAX)
				self[kid] += c;
			leaf = false;
			if (kid == UINT32_MAX || stamp[kid] == s + 1)
				continue;
			stamp[kid] = s + 1;
			total[kid] += c;
		}
	}
	free(stamp);
	return 0;
}

/* Adds into self[] and total[] (nkeys each) per key of frame_key (frame
 * id -> key, UINT32_MAX: none).  0, or -1 on OOM. */
static int count_stacks(const struct ember_profile *p, const uint32_t *frame_key, uint32_t nkeys,
			uint64_t *self, uint64_t *total)
{
	uint64_t *stack_count = calloc((size_t)p->nstacks + 1, sizeof(*stack_count));
	int ret;

	if (!stack_count)
		return -1;
	/* Per stack first: rows of one stack on many threads cost one walk. */
	for (uint32_t r = 0; r < p->nrows; r++)
		stack_count[p->rows[r].stack] += p->rows[r].count;
	ret = report_count_weighted(p, frame_key, NULL, stack_count, nkeys, self, total);
	free(stack_count);
	return ret;
}

int ember_report_count(const struct ember_profile *p, ember_report_key_fn key_of, void *ctx, uint32_t *nkeys,
		       uint64_t **self, uint64_t **total)
{
	uint32_t *frame_key = malloc(((size_t)p->nframes + 1) * sizeof(*frame_key));
	uint32_t n = 0;
	int ret = -1;

	*self = *total = NULL;
	*nkeys = 0;
	if (!frame_key)
		return -1;
	for (uint32_t i = 0; i < p->nframes; i++) {
		frame_key[i] = UINT32_MAX;
		/* [truncated], [unknown] and thread roots are no function */
		if (p->frames[i].kind == EMBER_FRAME_SPECIAL)
			continue;
		if ((frame_key[i] = key_of(ctx, &p->frames[i])) == UINT32_MAX)
			goto out;
		if (frame_key[i] >= n)
			n = frame_key[i] + 1;
	}
	*self = calloc((size_t)n + 1, sizeof(**self));
	*total = calloc((size_t)n + 1, sizeof(**total));
	if (!*self || !*total || count_stacks(p, frame_key, n, *self, *total) < 0) {
		free(*self);
		free(*total);
		*self = *total = NULL;
		goto out;
	}
	*nkeys = n;
	ret = 0;
out:
	free(frame_key);
	return ret;
}

void ember_report_rows_free(struct ember_report_row *rows, size_t nrows)
{
	if (!rows)
		return;
	for (size_t i = 0; i < nrows; i++)
		free(rows[i].label);
	free(rows);
}

int ember_report_rows(const struct ember_profile *p, enum ember_report_key key,
		      struct ember_report_row **rows, size_t *nrows)
{
	struct ember_keys *k = ember_keys_new(key, EMBER_KEYS_EXACT);
	struct ember_report_row *out = NULL;
	struct key_count *kc = NULL;
	uint64_t *self = NULL, *total = NULL;
	uint32_t nkeys;
	size_t n = 0;
	int ret = -1;

	*rows = NULL;
	*nrows = 0;
	if (!k || ember_report_count(p, ember_key_of, k, &nkeys, &self, &total) < 0 ||
	    !(kc = malloc(((size_t)nkeys + 1) * sizeof(*kc))))
		goto out;
	/* Keys of frames that never occur in a counted stack have total 0. */
	for (uint32_t i = 0; i < nkeys; i++)
		if (total[i])
			kc[n++] = (struct key_count){ .label = ember_key_label(k, i), .self = self[i],
						      .total = total[i], .id = i };
	if (n) {
		qsort(kc, n, sizeof(*kc), cmp_by_self);
		out = calloc(n, sizeof(*out));
		if (!out)
			goto out;
		for (size_t i = 0; i < n; i++) {
			out[i].label = strdup(kc[i].label);
			if (!out[i].label) {
				ember_report_rows_free(out, i);
				out = NULL;
				goto out;
			}
			out[i].self = kc[i].self;
			out[i].total = kc[i].total;
		}
	}
	*rows = out;
	*nrows = n;
	ret = 0;
out:
	free(kc);
	free(self);
	free(total);
	ember_keys_free(k);
	return ret;
}

/* ---- printing ---- */

/* label as the tables show it into out, which has room for 3 x
 * strlen(label) + 4 bytes (an ill-formed byte becomes 3): control
 * characters (C0, DEL, C1), which could move a terminal's cursor or start
 * an escape sequence and would break a row of any format, as '?'; with max
 * > 0 at most max characters, a longer label keeping its first two thirds
 * and its end around U+2026.  Returns the length written (NUL-terminated). */
static size_t shorten_label(const char *label, size_t max, char *out)
{
	const unsigned char *s = (const unsigned char *)label;
	size_t n = strlen(label), chars = 0, head, tail, idx = 0;
	char *o = out;
	uint32_t cp;

	for (size_t i = 0; i < n; i += ember_utf8_next(s + i, n - i, &cp))
		chars++;
	head = !max || chars <= max ? chars : (max - 1) * 2 / 3;
	tail = !max || chars <= max ? 0 : max - 1 - head;
	for (size_t i = 0; i < n; idx++) {
		size_t len = ember_utf8_next(s + i, n - i, &cp);
		if (idx < head || idx >= chars - tail) {
			if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
				*o++ = '?';
			} else if (cp == 0xfffd) {   /* also for ill-formed bytes */
				memcpy(o, "\xef\xbf\xbd", 3);
				o += 3;
			} else {
				memcpy(o, s + i, len);
				o += len;
			}
		} else if (idx == head) {
			memcpy(o, "\xe2\x80\xa6", 3);   /* U+2026 HORIZONTAL ELLIPSIS */
			o += 3;
		}
		i += len;
	}
	*o = '\0';
	return (size_t)(o - out);
}

char *ember_report_label(const char *label, size_t max)
{
	char *out = malloc(3 * strlen(label) + 4);

	if (out)
		shorten_label(label, max, out);
	return out;
}

void ember_report_put_label(FILE *out, const char *label, size_t max)
{
	char small[512];
	size_t need = 3 * strlen(label) + 4;
	char *buf = need <= sizeof small ? small : malloc(need);

	if (!buf)
		return;   /* out of memory: the label is left out, the table goes on */
	fwrite(buf, 1, shorten_label(label, max, buf), out);
	if (buf != small)
		free(buf);
}

static int cmp_by_total(const void *a, const void *b)
{
	const struct ember_report_row *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return strcmp(x->label, y->label);
}

/* A count as the table shows it: samples, or milliseconds in a wall-clock
 * profile (ms_per: the milliseconds a count stands for; 0: samples). */
static int put_count(char *buf, size_t len, uint64_t c, double ms_per)
{
	return ms_per > 0 ? snprintf(buf, len, "%.1f", (double)c * ms_per) : snprintf(buf, len, "%" PRIu64, c);
}

static void print_table(FILE *out, const struct ember_report_row *rows, size_t n, bool by_total,
			uint64_t all, const char *keyname, double ms_per)
{
	char num[32];
	int width = 7; /* strlen("samples") */

	for (size_t i = 0; i < n; i++) {
		int w = put_count(num, sizeof(num), by_total ? rows[i].total : rows[i].self, ms_per);
		if (w > width)
			width = w;
	}
	if (ms_per > 0)
		fprintf(out, "ember: top %zu by %s (of %.3f s, on and off CPU):\n", n, by_total ? "total" : "self",
			(double)all * ms_per / 1e3);
	else
		fprintf(out, "ember: top %zu by %s (of %" PRIu64 " samples):\n", n, by_total ? "total" : "self", all);
	fprintf(out, "   self%%  total%%  %*s  %s\n", width, ms_per > 0 ? "ms" : "samples", keyname);
	for (size_t i = 0; i < n; i++) {
		put_count(num, sizeof(num), by_total ? rows[i].total : rows[i].self, ms_per);
		fprintf(out, "  %5.1f%%  %5.1f%%  %*s  ",
			100.0 * (double)rows[i].self / (double)all,
			100.0 * (double)rows[i].total / (double)all,
			width, num);
		ember_report_put_label(out, rows[i].label, LABEL_MAX_CHARS);
		putc('\n', out);
	}
}

#define WALL_THREADS 10   /* threads the split lists, the busiest first */

struct thread_split {
	uint32_t thread;
	uint64_t on, off;
};

static int cmp_split(const void *a, const void *b)
{
	const struct thread_split *x = a, *y = b;
	uint64_t tx = x->on + x->off, ty = y->on + y->off;
	return tx != ty ? (tx > ty ? -1 : 1) : (x->thread > y->thread) - (x->thread < y->thread);
}

void ember_report_wall_split(FILE *out, const struct ember_profile *p)
{
	double s_per = ember_profile_interval_s(p);
	uint64_t all = ember_profile_total(p), off = p->off_cpu_total;
	if (!all)
		return;
	fprintf(out, "ember: wall-clock profile: %.3f s on CPU (%.1f%%), %.3f s off CPU (%.1f%%)\n",
		(double)(all - off) * s_per, 100.0 * (double)(all - off) / (double)all, (double)off * s_per,
		100.0 * (double)off / (double)all);
	struct thread_split *ts = calloc(p->nthreads ? p->nthreads : 1, sizeof *ts);
	if (!ts || p->nthreads < 2) {
		free(ts);
		return;
	}
	for (uint32_t i = 0; i < p->nthreads; i++)
		ts[i].thread = i;
	for (uint32_t i = 0; i < p->nrows; i++) {
		const struct ember_sample_row *r = &p->rows[i];
		if (r->flags & EMBER_ROW_OFF_CPU)
			ts[r->thread].off += r->count;
		else
			ts[r->thread].on += r->count;
	}
	qsort(ts, p->nthreads, sizeof *ts, cmp_split);
	for (uint32_t i = 0; i < p->nthreads && i < WALL_THREADS && ts[i].on + ts[i].off; i++) {
		const struct ember_thread *t = &p->threads[ts[i].thread];
		fprintf(out, "ember:   thread %u ", t->tid);
		ember_report_put_label(out, t->name, 40);
		fprintf(out, ": %.3f s on CPU, %.3f s off CPU\n", (double)ts[i].on * s_per, (double)ts[i].off * s_per);
	}
	free(ts);
}

void ember_report_print(FILE *out, const struct ember_profile *p,
			enum ember_report_key key, size_t top)
{
	static const char *const keynames[] = { "function", "line", "module" };
	const char *keyname = (unsigned)key < 3 ? keynames[key] : "key";
	uint64_t all = ember_profile_total(p);
	struct ember_report_row *rows;
	size_t n, nself = 0;

	if (!all) {
		fprintf(out, "ember: no samples\n");
		return;
	}
	if (ember_report_rows(p, key, &rows, &n) < 0) {
		fprintf(out, "ember: report: out of memory\n");
		return;
	}
	/* Every frame synthetic ([truncated], [unknown]): no rows, and no
	 * array to sort (rows is NULL). */
	if (!n) {
		fprintf(out, "ember: no symbolized frames in %" PRIu64 " samples\n", all);
		return;
	}
	if (top == 0 || top > n)
		top = n;
	/* Rows are sorted by self: those with self samples come first, and a
	 * function that never was the leaf has no place in a "by self" table. */
	while (nself < top && rows[nself].self)
		nself++;
	double ms_per = p->meta.wall_clock ? ember_profile_interval_s(p) * 1e3 : 0;
	if (p->meta.wall_clock)
		ember_report_wall_split(out, p);
	if (nself)
		print_table(out, rows, nself, false, all, keyname, ms_per);
	qsort(rows, n, sizeof(*rows), cmp_by_total);
	print_table(out, rows, top, true, all, keyname, ms_per);
	ember_report_rows_free(rows, n);
}
