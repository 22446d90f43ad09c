/* The .ember file: ember's own lossless profile format (docs/ember-format.md).
 *
 * A gzip stream whose content is the magic "EMBRPROF", a format version, and
 * tagged sections of LEB128 varints and length-prefixed strings.  Strings are
 * written once and referred to by index.  The reader checks every length and
 * index against what it has read, so a corrupt or truncated file gives an
 * error with the byte offset, never a crash. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.h"
#include "profile_internal.h"

#define MAGIC "EMBRPROF"
/* Version 2 only differs from 1 in one case: two frames that differ in
 * their flags alone (version 1 readers, which skip the flags section, would
 * see the same frame twice).  Without such a pair ember writes version 1. */
#define FORMAT_VERSION 2

enum section {
	SEC_META = 'M', SEC_STRINGS = 'S', SEC_FRAME_FLAGS = 'X', SEC_FRAMES = 'F', SEC_STACKS = 'K',
	SEC_THREADS = 'T', SEC_ROWS = 'R', SEC_TIMELINE = 'L', SEC_END = 'E',
};

/* ---- writing: build the whole content in memory, then gzip it ---- */

struct wbuf {
	uint8_t *data;
	size_t len, cap;
	bool oom;
	/* string -> index, keyed by interned pointer */
	const char **strs;
	size_t nstrs, strs_cap;
	struct ember_idtab index;
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
	uint8_t tmp[10];
	size_t n = 0;
	do {
		tmp[n] = v & 0x7f;
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	put(b, tmp, n);
}

static void put_raw_str(struct wbuf *b, const char *s)
{
	size_t n = strlen(s);
	put_u(b, n);
	put(b, s, n);
}

static bool str_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct wbuf *)ctx)->strs[id] == key;
}

/* Index of interned string s, adding it to the table. */
static uint64_t str_id(struct wbuf *b, const char *s)
{
	uint64_t h = ember_hash_ptr(s);
	uint32_t id = ember_idtab_find(&b->index, h, str_eq, b, s);
	if (id != UINT32_MAX)
		return id;
	if (ember_grow((void **)&b->strs, &b->strs_cap, sizeof(*b->strs), b->nstrs + 1) < 0 ||
	    ember_idtab_insert(&b->index, h, (uint32_t)b->nstrs) < 0) {
		b->oom = true;
		return 0;
	}
	b->strs[b->nstrs] = s;
	return b->nstrs++;
}

static void section(struct wbuf *out, uint8_t tag, const struct wbuf *body)
{
	put(out, &tag, 1);
	put_u(out, body->len);
	put(out, body->data, body->len);
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

int ember_profile_save(const struct ember_profile *p, const char *path, char *err, size_t errlen)
{
	struct wbuf out = { 0 }, sec = { 0 }, strs = { 0 };
	int rc = -1;
	if (ember_idtab_init(&strs.index) < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* Frame flags, for the frames that have some; and whether a version 1
	 * reader would see two frames as one. */
	struct wbuf flags = { 0 };
	uint32_t nflagged = 0;
	bool twins = false;
	for (uint32_t i = 0; i < p->nframes; i++) {
		struct ember_frame plain = p->frames[i];
		if (!plain.flags)
			continue;
		nflagged++;
		plain.flags = 0;
		twins |= profile_frame_find(p, &plain) != UINT32_MAX;
	}
	put_u(&flags, nflagged);
	for (uint32_t i = 0; i < p->nframes && nflagged; i++)
		if (p->frames[i].flags) {
			put_u(&flags, i);
			put_u(&flags, p->frames[i].flags);
		}
	put(&out, MAGIC, 8);
	put_u(&out, twins ? 2 : 1);

	const struct ember_run_meta *m = &p->meta;
	meta_s(&sec, "command", m->command);
	meta_s(&sec, "source", m->source);
	meta_u(&sec, "pid", m->pid);
	meta_u(&sec, "freq_hz", m->freq_hz);
	meta_u(&sec, "start_unix_ns", m->start_unix_ns);
	meta_u(&sec, "duration_ns", m->duration_ns);
	meta_u(&sec, "samples", m->samples);
	meta_u(&sec, "lost", m->lost);
	meta_u(&sec, "truncated", m->truncated);
	meta_u(&sec, "unwind_errors", m->unwind_errors);
	meta_u(&sec, "mismatched", m->mismatched);
	meta_u(&sec, "kernel_frames", m->kernel_frames);
	meta_u(&sec, "interval_ns", m->interval_ns);
	section(&out, SEC_META, &sec);

	/* Frames and threads refer to strings; collect them first. */
	struct wbuf frames = { 0 }, threads = { 0 };
	put_u(&frames, p->nframes);
	for (uint32_t i = 0; i < p->nframes; i++) {
		const struct ember_frame *f = &p->frames[i];
		put_u(&frames, (uint64_t)f->kind);
		put_u(&frames, str_id(&strs, f->name));
		put_u(&frames, str_id(&strs, f->file));
		put_u(&frames, f->line);
		put_u(&frames, f->first_line);
		put_u(&frames, str_id(&strs, f->module));
		put_u(&frames, str_id(&strs, f->build_id));
		put_u(&frames, f->inlined ? 1 : 0);
	}
	put_u(&threads, p->nthreads);
	for (uint32_t i = 0; i < p->nthreads; i++) {
		put_u(&threads, p->threads[i].pid);
		put_u(&threads, p->threads[i].tid);
		put_u(&threads, str_id(&strs, p->threads[i].name));
	}
	sec.len = 0;
	put_u(&sec, strs.nstrs);
	for (size_t i = 0; i < strs.nstrs; i++)
		put_raw_str(&sec, strs.strs[i]);
	section(&out, SEC_STRINGS, &sec);
	if (nflagged)
		section(&out, SEC_FRAME_FLAGS, &flags);   /* before the frames: it tells them apart */
	section(&out, SEC_FRAMES, &frames);
	section(&out, SEC_THREADS, &threads);

	sec.len = 0;
	put_u(&sec, p->nstacks);
	for (uint32_t i = 0; i < p->nstacks; i++) {
		uint32_t n;
		const uint32_t *ids = ember_profile_stack_frames(p, i, &n);
		put_u(&sec, n);
		for (uint32_t k = 0; k < n; k++)
			put_u(&sec, ids[k]);
	}
	section(&out, SEC_STACKS, &sec);

	sec.len = 0;
	put_u(&sec, p->nrows);
	for (uint32_t i = 0; i < p->nrows; i++) {
		put_u(&sec, p->rows[i].stack);
		put_u(&sec, p->rows[i].thread);
		put_u(&sec, p->rows[i].count);
	}
	section(&out, SEC_ROWS, &sec);

	sec.len = 0;
	put_u(&sec, p->ntimeline);
	uint64_t prev = 0;
	for (size_t i = 0; i < p->ntimeline; i++) {
		const struct ember_timed_sample *t = &p->timeline[i];
		/* Sorted by time: deltas stay small.  Out of order is written as
		 * is (zigzag), so nothing is lost either way. */
		int64_t d = (int64_t)(t->time_ns - prev);
		put_u(&sec, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
		prev = t->time_ns;
		put_u(&sec, t->stack);
		put_u(&sec, t->thread);
	}
	section(&out, SEC_TIMELINE, &sec);

	sec.len = 0;
	put_u(&sec, ember_profile_total(p));
	section(&out, SEC_END, &sec);

	if (out.oom || sec.oom || frames.oom || threads.oom || strs.oom || flags.oom) {
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	gzFile gz = gzopen(path, "wb6");
	if (!gz) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
		goto done;
	}
	size_t off = 0;
	while (off < out.len) {
		unsigned chunk = out.len - off > (1u << 30) ? 1u << 30 : (unsigned)(out.len - off);
		if (gzwrite(gz, out.data + off, chunk) != (int)chunk)
			break;
		off += chunk;
	}
	int zc = gzclose(gz);
	if (off != out.len || zc != Z_OK) {
		snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno ? errno : EIO));
		goto done;
	}
	rc = 0;
done:
	free(out.data);
	free(sec.data);
	free(frames.data);
	free(flags.data);
	free(threads.data);
	free(strs.data);
	free(strs.strs);
	ember_idtab_free(&strs.index);
	return rc;
}

/* ---- reading ---- */

struct rbuf {
	const uint8_t *data;
	size_t len, pos;
	size_t base;           /* offset of data within the file's content, for messages */
	bool bad;
};

static uint64_t get_u(struct rbuf *r)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->pos >= r->len) {
			r->bad = true;
			return 0;
		}
		uint8_t c = r->data[r->pos++];
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

static const char *get_str(struct rbuf *r, size_t *len)
{
	*len = 0;
	uint64_t n = get_u(r);
	if (r->bad || n > r->len - r->pos) {
		r->bad = true;
		return NULL;
	}
	const char *s = (const char *)r->data + r->pos;
	r->pos += n;
	*len = n;
	return s;
}

/* Read the whole decompressed content.  gzread reads plain files as they
 * are, which lets the caller tell a folded file from an .ember one. */
static uint8_t *slurp(const char *path, size_t *len, bool *gz_error, char *err, size_t errlen)
{
	*gz_error = false;
	gzFile gz = gzopen(path, "rb");
	if (!gz) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : ENOENT));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (!buf) {
			gzclose(gz);
			snprintf(err, errlen, "%s: out of memory", path);
			return NULL;
		}
		int got = gzread(gz, buf + n, (unsigned)(cap - n > (1u << 30) ? 1u << 30 : cap - n));
		if (got < 0) {
			*gz_error = true;
			break;
		}
		if (got == 0)
			break;
		n += (size_t)got;
		if (n == cap) {
			cap *= 2;
			uint8_t *nb = realloc(buf, cap);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	int errnum;
	char msg[128];
	/* gzerror's text lives in the gzFile: copy it before closing. */
	snprintf(msg, sizeof msg, "%s", gzerror(gz, &errnum));
	if (errnum != Z_OK && errnum != Z_BUF_ERROR)
		*gz_error = true;
	/* A gzip stream cut short reads as "unexpected end of file". */
	if (gzclose(gz) == Z_BUF_ERROR)
		*gz_error = true;
	if (*gz_error)
		snprintf(err, errlen, "%s: corrupt or truncated compressed data (%s)", path,
			 msg[0] && !strstr(msg, path) ? msg : "unexpected end of file");
	*len = n;
	return buf;
}

bool ember_profile_is_ember_file(const char *path)
{
	gzFile gz = gzopen(path, "rb");
	char magic[8];
	bool yes = gz && gzread(gz, magic, 8) == 8 && memcmp(magic, MAGIC, 8) == 0;
	if (gz)
		gzclose(gz);
	return yes;
}

static int parse(struct ember_profile *p, struct rbuf *r, const char *path, char *err, size_t errlen)
{
	const char **strs = NULL;
	uint8_t *frame_flags = NULL;          /* from the flags section, by frame id */
	uint64_t nframe_flags = 0;
	bool seen_frames = false;
	uint64_t nstrs = 0, total_rows = 0;
	bool seen_end = false;
	int rc = -1;
	const char *what = "header";

	r->pos = 8;
	uint64_t version = get_u(r);
	if (r->bad)
		goto corrupt;
	if (version > FORMAT_VERSION || version == 0) {
		snprintf(err, errlen, "%s: .ember format version %llu is newer than this ember reads (%d): "
			 "upgrade ember", path, (unsigned long long)version, FORMAT_VERSION);
		return -1;
	}
	while (r->pos < r->len && !seen_end) {
		uint8_t tag = r->data[r->pos++];
		uint64_t slen = get_u(r);
		if (r->bad || slen > r->len - r->pos) {
			snprintf(err, errlen, "%s: truncated .ember file: it ends inside a section (%zu bytes of "
				 "content)", path, r->len);
			goto out;
		}
		struct rbuf s = { r->data + r->pos, slen, 0, r->base + r->pos, false };
		r->pos += slen;
		switch (tag) {
		case SEC_META:
			what = "metadata";
			while (s.pos < s.len && !s.bad) {
				size_t kl = 0, vl = 0;
				const char *k = get_str(&s, &kl), *v = NULL;
				uint64_t kind = get_u(&s), u = 0;
				if (kind == 0)
					u = get_u(&s);
				else if (kind == 1)
					v = get_str(&s, &vl);
				else
					s.bad = true;
				if (s.bad)
					break;
#define KEY(name) (kl == sizeof(name) - 1 && memcmp(k, name, kl) == 0)
				struct ember_run_meta *m = &p->meta;
				if (KEY("command") && v)
					m->command = ember_profile_str(p, v, vl);
				else if (KEY("source") && v)
					m->source = ember_profile_str(p, v, vl);
				else if (KEY("pid"))
					m->pid = (uint32_t)u;
				else if (KEY("freq_hz"))
					m->freq_hz = (uint32_t)u;
				else if (KEY("start_unix_ns"))
					m->start_unix_ns = u;
				else if (KEY("duration_ns"))
					m->duration_ns = u;
				else if (KEY("samples"))
					m->samples = u;
				else if (KEY("lost"))
					m->lost = u;
				else if (KEY("truncated"))
					m->truncated = u;
				else if (KEY("unwind_errors"))
					m->unwind_errors = u;
				else if (KEY("mismatched"))
					m->mismatched = u;
				else if (KEY("kernel_frames"))
					m->kernel_frames = u != 0;
				else if (KEY("interval_ns"))
					m->interval_ns = u;
#undef KEY
			}
			break;
		case SEC_STRINGS:
			what = "string table";
			nstrs = get_u(&s);
			if (s.bad || nstrs > s.len) {
				s.bad = true;
				break;
			}
			strs = calloc(nstrs ? nstrs : 1, sizeof(*strs));
			if (!strs)
				goto oom;
			for (uint64_t i = 0; i < nstrs && !s.bad; i++) {
				size_t n;
				const char *str = get_str(&s, &n);
				if (str && !(strs[i] = ember_profile_str(p, str, n)))
					goto oom;
			}
			break;
		case SEC_FRAME_FLAGS: {
			what = "frame flags";
			uint64_t n = get_u(&s);
			if (s.bad || seen_frames || frame_flags || n > s.len) {
				s.bad = true;
				break;
			}
			for (uint64_t i = 0; i < n && !s.bad; i++) {
				uint64_t id = get_u(&s), fl = get_u(&s);
				/* ids ascend; a frame id is at most the frames a section can hold */
				if (s.bad || id >= r->len || (nframe_flags && id < nframe_flags)) {
					s.bad = true;
					break;
				}
				uint8_t *nf = realloc(frame_flags, id + 1);
				if (!nf)
					goto oom;
				memset(nf + nframe_flags, 0, id + 1 - nframe_flags);
				frame_flags = nf;
				nframe_flags = id + 1;
				frame_flags[id] = (uint8_t)(fl & EMBER_FRAME_FLAGS_KNOWN);   /* unknown bits: dropped */
			}
			break;
		}
		case SEC_FRAMES: {
			what = "frame table";
			seen_frames = true;
			uint64_t n = get_u(&s);
			for (uint64_t i = 0; i < n && !s.bad; i++) {
				uint64_t kind = get_u(&s), name = get_u(&s), file = get_u(&s), line = get_u(&s);
				uint64_t first = get_u(&s), mod = get_u(&s), bid = get_u(&s), inl = get_u(&s);
				if (s.bad || kind >= EMBER_FRAME_KIND_COUNT || name >= nstrs || file >= nstrs ||
				    mod >= nstrs || bid >= nstrs || line > UINT32_MAX || first > UINT32_MAX) {
					s.bad = true;
					break;
				}
				struct ember_frame f = { .kind = (enum ember_frame_kind)kind, .name = strs[name],
							 .file = strs[file], .line = (uint32_t)line,
							 .first_line = (uint32_t)first, .module = strs[mod],
							 .build_id = strs[bid], .inlined = inl != 0,
							 .flags = i < nframe_flags ? frame_flags[i] : 0 };
				/* Ids must come back as written: frames are unique. */
				if (ember_profile_frame(p, &f) != i) {
					s.bad = true;
					break;
				}
			}
			break;
		}
		case SEC_THREADS: {
			what = "thread table";
			uint64_t n = get_u(&s);
			for (uint64_t i = 0; i < n && !s.bad; i++) {
				uint64_t pid = get_u(&s), tid = get_u(&s), name = get_u(&s);
				if (s.bad || name >= nstrs || pid > UINT32_MAX || tid > UINT32_MAX ||
				    ember_profile_thread(p, (uint32_t)pid, (uint32_t)tid, strs[name]) != i)
					s.bad = true;
			}
			break;
		}
		case SEC_STACKS: {
			what = "stack table";
			uint64_t n = get_u(&s);
			uint32_t *ids = NULL;
			size_t cap = 0;
			for (uint64_t i = 0; i < n && !s.bad; i++) {
				uint64_t len = get_u(&s);
				if (s.bad || len > s.len - s.pos) {
					s.bad = true;
					break;
				}
				if (ember_grow((void **)&ids, &cap, sizeof(*ids), len + 1) < 0) {
					free(ids);
					goto oom;
				}
				for (uint64_t k = 0; k < len && !s.bad; k++) {
					uint64_t id = get_u(&s);
					if (id >= p->nframes)
						s.bad = true;
					ids[k] = (uint32_t)id;
				}
				if (!s.bad && ember_profile_stack(p, ids, (uint32_t)len) != i)
					s.bad = true;
			}
			free(ids);
			break;
		}
		case SEC_ROWS: {
			what = "sample rows";
			uint64_t n = get_u(&s);
			for (uint64_t i = 0; i < n && !s.bad; i++) {
				uint64_t st = get_u(&s), th = get_u(&s), c = get_u(&s);
				if (s.bad || st >= p->nstacks || th >= p->nthreads ||
				    ember_profile_add(p, (uint32_t)st, (uint32_t)th, c) != 0)
					s.bad = true;
				total_rows += c;
			}
			break;
		}
		case SEC_TIMELINE: {
			what = "timeline";
			uint64_t n = get_u(&s), t = 0;
			for (uint64_t i = 0; i < n && !s.bad; i++) {
				uint64_t z = get_u(&s), st = get_u(&s), th = get_u(&s);
				t += (uint64_t)((int64_t)(z >> 1) ^ -(int64_t)(z & 1));
				if (s.bad || st >= p->nstacks || th >= p->nthreads ||
				    ember_profile_add_timed(p, t, (uint32_t)st, (uint32_t)th) != 0)
					s.bad = true;
			}
			break;
		}
		case SEC_END:
			what = "end marker";
			if (get_u(&s) != total_rows)
				s.bad = true;
			seen_end = true;
			break;
		default:
			/* A section from a newer ember of the same format version:
			 * skippable by design. */
			break;
		}
		if (s.bad) {
			r->pos = s.base - r->base + s.pos;
			goto corrupt;
		}
	}
	if (!seen_end) {
		snprintf(err, errlen, "%s: truncated .ember file (no end marker after %zu bytes)", path, r->len);
		goto out;
	}
	rc = 0;
	goto out;
corrupt:
	snprintf(err, errlen, "%s: corrupt .ember file: bad %s near byte %zu of the content", path, what,
		 r->base + r->pos);
	goto out;
oom:
	snprintf(err, errlen, "%s: out of memory", path);
out:
	free(strs);
	free(frame_flags);
	return rc;
}

int ember_profile_load_ember(struct ember_profile *p, const char *path, char *err, size_t errlen)
{
	size_t len;
	bool gz_error;
	uint8_t *data = slurp(path, &len, &gz_error, err, errlen);
	if (!data)
		return EMBER_LOAD_NOINPUT;
	int rc = EMBER_LOAD_BADDATA;
	if (gz_error) {
		/* Even when what came out parses: the CRC or the length did not
		 * match, so nothing in it can be trusted.  err says so. */
	} else if (len < 8 || memcmp(data, MAGIC, 8) != 0) {
		snprintf(err, errlen, "%s: not an .ember profile (no EMBRPROF header)", path);
	} else {
		struct rbuf r = { data, len, 0, 0, false };
		if (parse(p, &r, path, err, errlen) == 0)
			rc = EMBER_LOAD_OK;
	}
	free(data);
	return rc;
}
