/* Writing .ember files (ember_file.h): the whole content is built in memory,
 * section by section, then gzip-compressed in one go. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ember_file.h"
#include "profile.h"
#include "profile_internal.h"
#include "varint.h"

struct wbuf {
	uint8_t *data;
	size_t len, cap;
	bool oom;
};

static void put(struct wbuf *b, const void *src, size_t n)
{
	if (b->oom)
		return;
	if (ember_grow((void **)&b->data, &b->cap, 1, b->len + n) < 0) {
		b->oom = true;
		return;
	}
	memcpy(b->data + b->len, src, n);
	b->len += n;
}

static void put_u(struct wbuf *b, uint64_t v)
{
	uint8_t tmp[EMBER_VARINT_MAX];
	put(b, tmp, ember_varint_put(tmp, v));
}
static void put_raw_str(struct wbuf *b, const char *s)
{
	size_t n = strlen(s);
	put_u(b, n);
	put(b, s, n);
}

static void section(struct wbuf *out, uint8_t tag, const struct wbuf *body)
{
	put(out, &tag, 1);
	put_u(out, body->len);
	put(out, body->data, body->len);
}

/* The string table: string -> index, keyed by interned pointer. */
struct strings {
	const char **strs;
	size_t n, cap;
	struct ember_idtab index;
	bool oom;
};

static bool str_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct strings *)ctx)->strs[id] == key;
}

/* Index of interned string s, adding it to the table. */
static uint64_t str_id(struct strings *t, const char *s)
{
	uint64_t h = ember_hash_ptr(s);
	uint32_t id = ember_idtab_find(&t->index, h, str_eq, t, s);
	if (id != UINT32_MAX)
		return id;
	if (ember_grow((void **)&t->strs, &t->cap, sizeof(*t->strs), t->n + 1) < 0 ||
	    ember_idtab_insert(&t->index, h, (uint32_t)t->n) < 0) {
		t->oom = true;
		return 0;
	}
	t->strs[t->n] = s;
	return t->n++;
}

/* Meta as (key, kind, value) triples: readers skip keys they do not know,
 * so new metadata needs no new format version. */
static void meta_u(struct wbuf *b, const char *key, uint64_t v)
{
	put_raw_str(b, key);
	put_u(b, 0);
	put_u(b, v);
}

static void meta_s(struct wbuf *b, const char *key, const char *v)
{
	put_raw_str(b, key);
	put_u(b, 1);
	put_raw_str(b, v ? v : "");
}

static void write_meta(struct wbuf *sec, const struct ember_run_meta *m)
{
	meta_s(sec, "command", m->command);
	meta_s(sec, "source", m->source);
	meta_u(sec, "pid", m->pid);
	meta_u(sec, "freq_hz", m->freq_hz);
	meta_u(sec, "start_unix_ns", m->start_unix_ns);
	meta_u(sec, "duration_ns", m->duration_ns);
	meta_u(sec, "samples", m->samples);
	meta_u(sec, "lost", m->lost);
	meta_u(sec, "truncated", m->truncated);
	meta_u(sec, "unwind_errors", m->unwind_errors);
	meta_u(sec, "mismatched", m->mismatched);
	meta_u(sec, "kernel_frames", m->kernel_frames);
	meta_u(sec, "interval_ns", m->interval_ns);
	if (m->wall_clock)
		meta_u(sec, "wall_clock", 1);
}

/* Frame flags, for the frames that have some; the number of those frames.
 * *twins: a version 1 reader would see two frames as one. */
static uint32_t write_flags(struct wbuf *flags, const struct ember_profile *p, bool *twins)
{
	uint32_t nflagged = 0;

	*twins = false;
	for (uint32_t i = 0; i < p->nframes; i++) {
		struct ember_frame plain = p->frames[i];
		if (!plain.flags)
			continue;
		nflagged++;
		plain.flags = 0;
		*twins |= profile_frame_find(p, &plain) != UINT32_MAX;
	}
	put_u(flags, nflagged);
	for (uint32_t i = 0; i < p->nframes && nflagged; i++)
		if (p->frames[i].flags) {
			put_u(flags, i);
			put_u(flags, p->frames[i].flags);
		}
	return nflagged;
}

static void write_frames(struct wbuf *frames, struct strings *strs, const struct ember_profile *p)
{
	put_u(frames, p->nframes);
	for (uint32_t i = 0; i < p->nframes; i++) {
		const struct ember_frame *f = &p->frames[i];
		put_u(frames, (uint64_t)f->kind);
		put_u(frames, str_id(strs, f->name));
		put_u(frames, str_id(strs, f->file));
		put_u(frames, f->line);
		put_u(frames, f->first_line);
		put_u(frames, str_id(strs, f->module));
		put_u(frames, str_id(strs, f->build_id));
		put_u(frames, f->inlined ? 1 : 0);
	}
}

static void write_threads(struct wbuf *threads, struct strings *strs, const struct ember_profile *p)
{
	put_u(threads, p->nthreads);
	for (uint32_t i = 0; i < p->nthreads; i++) {
		put_u(threads, p->threads[i].pid);
		put_u(threads, p->threads[i].tid);
		put_u(threads, str_id(strs, p->threads[i].name));
	}
}

static void write_stacks(struct wbuf *sec, const struct ember_profile *p)
{
	put_u(sec, p->nstacks);
	for (uint32_t i = 0; i < p->nstacks; i++) {
		uint32_t n;
		const uint32_t *ids = ember_profile_stack_frames(p, i, &n);
		put_u(sec, n);
		for (uint32_t k = 0; k < n; k++)
			put_u(sec, ids[k]);
	}
}

/* The row flags the W section holds: an attributed row says so in the A
 * section (a reader that skips it still reads the row right). */
#define W_FLAGS EMBER_ROW_OFF_CPU

/* Row flags, for the rows that have some (their indexes ascending); the
 * number of those rows. */
static uint32_t write_row_flags(struct wbuf *sec, const struct ember_profile *p)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < p->nrows; i++)
		n += (p->rows[i].flags & W_FLAGS) != 0;
	put_u(sec, n);
	for (uint32_t i = 0; i < p->nrows && n; i++)
		if (p->rows[i].flags & W_FLAGS) {
			put_u(sec, i);
			put_u(sec, p->rows[i].flags & W_FLAGS);
		}
	return n;
}

/* Attributed rows (their indexes ascending) and how many of their stack's
 * frames are the dispatcher's; the number of those rows. */
static uint32_t write_attributed(struct wbuf *sec, const struct ember_profile *p)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < p->nrows; i++)
		n += p->rows[i].depth != 0;
	put_u(sec, n);
	for (uint32_t i = 0; i < p->nrows && n; i++)
		if (p->rows[i].depth) {
			put_u(sec, i);
			put_u(sec, p->rows[i].depth);
		}
	return n;
}

static void write_rows(struct wbuf *sec, const struct ember_profile *p)
{
	put_u(sec, p->nrows);
	for (uint32_t i = 0; i < p->nrows; i++) {
		put_u(sec, p->rows[i].stack);
		put_u(sec, p->rows[i].thread);
		put_u(sec, p->rows[i].count);
	}
}

static void write_timeline(struct wbuf *sec, const struct ember_profile *p)
{
	uint64_t prev = 0;

	put_u(sec, p->ntimeline);
	for (size_t i = 0; i < p->ntimeline; i++) {
		const struct ember_timed_sample *t = &p->timeline[i];
		/* Sorted by time: deltas stay small.  Out of order is written as
		 * is (zigzag), so nothing is lost either way. */
		int64_t d = (int64_t)(t->time_ns - prev);
		put_u(sec, ember_zigzag(d));
		prev = t->time_ns;
		put_u(sec, t->stack);
		put_u(sec, t->thread);
	}
}

/* The whole content into out. */
static void write_content(struct wbuf *out, struct wbuf *sec, struct strings *strs, const struct ember_profile *p)
{
	struct wbuf flags = { 0 }, frames = { 0 }, threads = { 0 };
	bool twins;
	uint32_t nflagged = write_flags(&flags, p, &twins);

	bool row_flags = false;
	for (uint32_t i = 0; i < p->nrows && !row_flags; i++)
		row_flags = (p->rows[i].flags & W_FLAGS) != 0;
	put(out, EMBER_FILE_MAGIC, 8);
	put_u(out, row_flags ? 3 : twins ? 2 : 1);
	write_meta(sec, &p->meta);
	section(out, SEC_META, sec);

	/* Frames and threads refer to strings; collect them first. */
	write_frames(&frames, strs, p);
	write_threads(&threads, strs, p);
	sec->len = 0;
	put_u(sec, strs->n);
	for (size_t i = 0; i < strs->n; i++)
		put_raw_str(sec, strs->strs[i]);
	section(out, SEC_STRINGS, sec);
	if (nflagged)
		section(out, SEC_FRAME_FLAGS, &flags);   /* before the frames: it tells them apart */
	section(out, SEC_FRAMES, &frames);
	section(out, SEC_THREADS, &threads);

	sec->len = 0;
	write_stacks(sec, p);
	section(out, SEC_STACKS, sec);
	sec->len = 0;
	if (row_flags && write_row_flags(sec, p))
		section(out, SEC_ROW_FLAGS, sec);   /* before the rows: it tells them apart */
	sec->len = 0;
	if (write_attributed(sec, p))
		section(out, SEC_ATTRIBUTED, sec);  /* the same */
	sec->len = 0;
	write_rows(sec, p);
	section(out, SEC_ROWS, sec);
	sec->len = 0;
	write_timeline(sec, p);
	section(out, SEC_TIMELINE, sec);
	sec->len = 0;
	put_u(sec, ember_profile_total(p));
	section(out, SEC_END, sec);

	out->oom |= sec->oom || frames.oom || threads.oom || flags.oom;
	free(flags.data);
	free(frames.data);
	free(threads.data);
}

/* data[0..len) gzip-compressed to path: 0, or -1 with a message in err. */
static int gz_save(const char *path, const uint8_t *data, size_t len, char *err, size_t errlen)
{
	gzFile gz = gzopen(path, "wb6");
	if (!gz) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
		return -1;
	}
	size_t off = 0;
	while (off < len) {
		unsigned chunk = len - off > (1u << 30) ? 1u << 30 : (unsigned)(len - off);
		if (gzwrite(gz, data + off, chunk) != (int)chunk)
			break;
		off += chunk;
	}
	int zc = gzclose(gz);
	if (off != len || zc != Z_OK) {
		snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

int ember_profile_save(const struct ember_profile *p, const char *path, char *err, size_t errlen)
{
	struct wbuf out = { 0 }, sec = { 0 };
	struct strings strs = { 0 };
	int rc = -1;

	if (ember_idtab_init(&strs.index) < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	write_content(&out, &sec, &strs, p);
	if (out.oom || strs.oom)
		snprintf(err, errlen, "out of memory");
	else
		rc = gz_save(path, out.data, out.len, err, errlen);
	free(out.data);
	free(sec.data);
	free(strs.strs);
	ember_idtab_free(&strs.index);
	return rc;
}
