/* JSON text output and the layout helpers shared by the speedscope, Chrome
 * trace and pprof writers (json_out.h). */
#define _GNU_SOURCE /* qsort_r, putc_unlocked, fwrite_unlocked */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "utf8.h"

/* ---- JSON text ---- */

void ember_json_strn(FILE *out, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0;   /* u[run..i) is copied verbatim */

	putc_unlocked('"', out);
	while (i < n) {
		unsigned char c = u[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			i++;           /* the common case: printable ASCII */
			continue;
		}
		uint32_t cp;
		size_t len = ember_utf8_next(u + i, n - i, &cp);
		bool plain = cp >= 0xa0 && cp != 0x2028 && cp != 0x2029 && cp != 0xfffd;
		if (plain) {
			i += len;
			continue;
		}
		fwrite_unlocked(u + run, 1, i - run, out);
		i += len;
		run = i;
		switch (cp) {
		case '"': fputs_unlocked("\\\"", out); break;
		case '\\': fputs_unlocked("\\\\", out); break;
		case '\n': fputs_unlocked("\\n", out); break;
		case '\t': fputs_unlocked("\\t", out); break;
		case '\r': fputs_unlocked("\\r", out); break;
		case '\b': fputs_unlocked("\\b", out); break;
		case '\f': fputs_unlocked("\\f", out); break;
		case 0xfffd: fputs_unlocked("\xef\xbf\xbd", out); break; /* also for ill-formed bytes */
		default:
			/* other C0, DEL, C1, U+2028, U+2029 */
			fputs_unlocked("\\u", out);
			for (int shift = 12; shift >= 0; shift -= 4)
				putc_unlocked(hex[(cp >> shift) & 0xf], out);
		}
	}
	fwrite_unlocked(u + run, 1, n - run, out);
	putc_unlocked('"', out);
}

void ember_json_str(FILE *out, const char *s)
{
	ember_json_strn(out, s ? s : "", s ? strlen(s) : 0);
}

void ember_json_u64(FILE *out, uint64_t v)
{
	char buf[24];
	size_t i = sizeof(buf);

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite_unlocked(buf + i, 1, sizeof(buf) - i, out);
}

void ember_json_us(FILE *out, uint64_t ns)
{
	char frac[4] = { (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10), (char)('0' + ns % 10), 0 };

	ember_json_u64(out, ns / 1000);
	putc_unlocked('.', out);
	fwrite_unlocked(frac, 1, 3, out);
}

int ember_json_finish(FILE *out)
{
	errno = 0;
	if (fflush(out) == 0 && !ferror(out))
		return 0;
	if (!errno)
		errno = EIO;
	return -1;
}

/* ---- layout ---- */

uint64_t ember_export_interval_ns(const struct ember_profile *p)
{
	double ns = ember_profile_interval_s(p) * 1e9;

	if (!(ns >= 1.0))
		return 1;
	if (ns >= 1e18)
		return 1000000000000000000ull;
	return (uint64_t)(ns + 0.5);   /* no libm */
}

bool ember_export_timeline_complete(const struct ember_profile *p)
{
	uint32_t nthreads = ember_profile_nthreads(p);
	size_t ntimed = ember_profile_ntimed(p);

	if (!ntimed || !nthreads)
		return false;

	uint64_t *diff = calloc(nthreads, sizeof(*diff));
	bool ok = diff != NULL;

	if (!ok)
		return false;
	/* rows add, timed samples subtract: every thread must end at 0 */
	for (uint32_t r = 0; r < ember_profile_nrows(p); r++) {
		const struct ember_sample_row *row = ember_profile_row_at(p, r);
		diff[row->thread] += row->count;
	}
	for (size_t i = 0; i < ntimed && ok; i++) {
		const struct ember_timed_sample *t = ember_profile_timed_at(p, i);
		if (t->thread >= nthreads || t->stack >= ember_profile_nstacks(p) || diff[t->thread] == 0)
			ok = false;
		else
			diff[t->thread]--;
	}
	for (uint32_t t = 0; t < nthreads && ok; t++)
		ok = diff[t] == 0;
	free(diff);
	return ok;
}

static int cmp_threads(const void *x, const void *y, void *arg)
{
	const struct ember_profile *p = arg;
	const struct ember_thread *a = ember_profile_thread_at(p, *(const uint32_t *)x);
	const struct ember_thread *b = ember_profile_thread_at(p, *(const uint32_t *)y);

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : *(const uint32_t *)x > *(const uint32_t *)y;
}

uint32_t *ember_export_sorted_threads(const struct ember_profile *p)
{
	uint32_t nthreads = ember_profile_nthreads(p);
	uint32_t *t = malloc(((size_t)nthreads + 1) * sizeof(*t));

	if (!t)
		return NULL;
	for (uint32_t i = 0; i < nthreads; i++)
		t[i] = i;
	qsort_r(t, nthreads, sizeof(*t), cmp_threads, (void *)p);
	return t;
}

static int cmp_str(const char *a, const char *b)
{
	return a == b ? 0 : strcmp(a ? a : "", b ? b : "");
}

static int cmp_frames(const struct ember_profile *p, uint32_t x, uint32_t y)
{
	const struct ember_frame *a = ember_profile_frame_at(p, x), *b = ember_profile_frame_at(p, y);
	int c;

	if (x == y)
		return 0;
	if ((c = cmp_str(a->name, b->name)) || (c = cmp_str(a->file, b->file)))
		return c;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	if ((c = cmp_str(a->module, b->module)))
		return c;
	return x < y ? -1 : 1;
}

static int cmp_rows(const void *x, const void *y, void *arg)
{
	const struct ember_profile *p = arg;
	const struct ember_sample_row *a = ember_profile_row_at(p, *(const uint32_t *)x);
	const struct ember_sample_row *b = ember_profile_row_at(p, *(const uint32_t *)y);
	int c;

	if (a->thread != b->thread && (c = cmp_threads(&a->thread, &b->thread, arg)))
		return c;
	if (a->stack == b->stack)
		return 0;
	uint32_t na, nb;
	const uint32_t *fa = ember_profile_stack_frames(p, a->stack, &na);
	const uint32_t *fb = ember_profile_stack_frames(p, b->stack, &nb);
	for (uint32_t k = 0; k < na && k < nb; k++)
		if ((c = cmp_frames(p, fa[k], fb[k])))
			return c;
	if (na != nb)
		return na < nb ? -1 : 1;
	return a->stack < b->stack ? -1 : 1;
}

uint32_t *ember_export_sorted_rows(const struct ember_profile *p, size_t *n)
{
	uint32_t nrows = ember_profile_nrows(p);
	uint32_t *r = malloc(((size_t)nrows + 1) * sizeof(*r));

	*n = 0;
	if (!r)
		return NULL;
	for (uint32_t i = 0; i < nrows; i++)
		if (ember_profile_row_at(p, i)->count)
			r[(*n)++] = i;
	qsort_r(r, *n, sizeof(*r), cmp_rows, (void *)p);
	return r;
}

int ember_export_timeline_by_thread(const struct ember_profile *p, size_t **idx, size_t **start)
{
	uint32_t nthreads = ember_profile_nthreads(p);
	size_t ntimed = ember_profile_ntimed(p);
	size_t *s = calloc((size_t)nthreads + 2, sizeof(*s));
	size_t *x = malloc((ntimed + 1) * sizeof(*x));

	if (!s || !x) {
		free(s);
		free(x);
		return -1;
	}
	/* counting sort by thread: stable, so each group stays in time order */
	for (size_t i = 0; i < ntimed; i++) {
		uint32_t t = ember_profile_timed_at(p, i)->thread;
		if (t < nthreads)
			s[t + 2]++;
	}
	for (uint32_t t = 0; t < nthreads; t++)
		s[t + 2] += s[t + 1];
	for (size_t i = 0; i < ntimed; i++) {
		uint32_t t = ember_profile_timed_at(p, i)->thread;
		if (t < nthreads)
			x[s[t + 1]++] = i;
	}
	*idx = x;
	*start = s;
	return 0;
}
