/* Reading .ember files (ember_file.h).  The reader checks every length and
 * index against what it has read, so a corrupt or truncated file gives an
 * error with the byte offset, never a crash. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ember_file.h"
#include "profile.h"
#include "profile_internal.h"

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
	size_t cap = 0, n = 0;
	uint8_t *buf = NULL;
	for (;;) {
		if (ember_grow((void **)&buf, &cap, 1, n + (1 << 16)) < 0) {
			free(buf);
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
	bool yes = gz && gzread(gz, magic, 8) == 8 && memcmp(magic, EMBER_FILE_MAGIC, 8) == 0;
	if (gz)
		gzclose(gz);
	return yes;
}

/* What the sections read so far left for the next ones. */
struct reader {
	struct ember_profile *p;
	const char **strs;            /* the string table, interned in p */
	uint64_t nstrs;
	uint8_t *frame_flags;         /* from the flags section, by frame id */
	size_t nframe_flags, frame_flags_cap;
	bool seen_frames, seen_end;
	uint64_t total_rows;
	size_t content_len;           /* bytes of content: bounds a frame id */
};

/* Each section reader takes the section's bytes in s; a malformed section
 * sets s->bad.  They return 0, or -1 on OOM. */

static int read_meta(struct reader *rd, struct rbuf *s)
{
	struct ember_run_meta *m = &rd->p->meta;

	while (s->pos < s->len && !s->bad) {
		size_t kl = 0, vl = 0;
		const char *k = get_str(s, &kl), *v = NULL;
		uint64_t kind = get_u(s), u = 0;
		if (kind == 0)
			u = get_u(s);
		else if (kind == 1)
			v = get_str(s, &vl);
		else
			s->bad = true;
		if (s->bad)
			break;
#define KEY(name) (kl == sizeof(name) - 1 && memcmp(k, name, kl) == 0)
		if (KEY("command") && v)
			m->command = ember_profile_str(rd->p, v, vl);
		else if (KEY("source") && v)
			m->source = ember_profile_str(rd->p, v, vl);
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
	return 0;
}

static int read_strings(struct reader *rd, struct rbuf *s)
{
	rd->nstrs = get_u(s);
	if (s->bad || rd->nstrs > s->len) {
		s->bad = true;
		return 0;
	}
	free(rd->strs);
	rd->strs = calloc(rd->nstrs ? rd->nstrs : 1, sizeof(*rd->strs));
	if (!rd->strs)
		return -1;
	for (uint64_t i = 0; i < rd->nstrs && !s->bad; i++) {
		size_t n;
		const char *str = get_str(s, &n);
		if (str && !(rd->strs[i] = ember_profile_str(rd->p, str, n)))
			return -1;
	}
	return 0;
}

static int read_frame_flags(struct reader *rd, struct rbuf *s)
{
	uint64_t n = get_u(s);

	if (s->bad || rd->seen_frames || rd->frame_flags || n > s->len) {
		s->bad = true;
		return 0;
	}
	for (uint64_t i = 0; i < n && !s->bad; i++) {
		uint64_t id = get_u(s), fl = get_u(s);
		/* ids ascend; a frame id is at most the frames a section can hold */
		if (s->bad || id >= rd->content_len || (rd->nframe_flags && id < rd->nframe_flags)) {
			s->bad = true;
			break;
		}
		if (ember_grow((void **)&rd->frame_flags, &rd->frame_flags_cap, 1, id + 1) < 0)
			return -1;
		memset(rd->frame_flags + rd->nframe_flags, 0, id + 1 - rd->nframe_flags);
		rd->nframe_flags = id + 1;
		rd->frame_flags[id] = (uint8_t)(fl & EMBER_FRAME_FLAGS_KNOWN);   /* unknown bits: dropped */
	}
	return 0;
}

static int read_frames(struct reader *rd, struct rbuf *s)
{
	uint64_t n = get_u(s), nstrs = rd->nstrs;

	rd->seen_frames = true;
	for (uint64_t i = 0; i < n && !s->bad; i++) {
		uint64_t kind = get_u(s), name = get_u(s), file = get_u(s), line = get_u(s);
		uint64_t first = get_u(s), mod = get_u(s), bid = get_u(s), inl = get_u(s);
		if (s->bad || kind >= EMBER_FRAME_KIND_COUNT || name >= nstrs || file >= nstrs ||
		    mod >= nstrs || bid >= nstrs || line > UINT32_MAX || first > UINT32_MAX) {
			s->bad = true;
			break;
		}
		struct ember_frame f = { .kind = (enum ember_frame_kind)kind, .name = rd->strs[name],
					 .file = rd->strs[file], .line = (uint32_t)line,
					 .first_line = (uint32_t)first, .module = rd->strs[mod],
					 .build_id = rd->strs[bid], .inlined = inl != 0,
					 .flags = i < rd->nframe_flags ? rd->frame_flags[i] : 0 };
		/* Ids must come back as written: frames are unique. */
		if (ember_profile_frame(rd->p, &f) != i)
			s->bad = true;
	}
	return 0;
}

static int read_threads(struct reader *rd, struct rbuf *s)
{
	uint64_t n = get_u(s);

	for (uint64_t i = 0; i < n && !s->bad; i++) {
		uint64_t pid = get_u(s), tid = get_u(s), name = get_u(s);
		if (s->bad || name >= rd->nstrs || pid > UINT32_MAX || tid > UINT32_MAX ||
		    ember_profile_thread(rd->p, (uint32_t)pid, (uint32_t)tid, rd->strs[name]) != i)
			s->bad = true;
	}
	return 0;
}

static int read_stacks(struct reader *rd, struct rbuf *s)
{
	struct ember_profile *p = rd->p;
	uint64_t n = get_u(s);
	uint32_t *ids = NULL;
	size_t cap = 0;
	int rc = 0;

	for (uint64_t i = 0; i < n && !s->bad; i++) {
		uint64_t len = get_u(s);
		if (s->bad || len > s->len - s->pos) {
			s->bad = true;
			break;
		}
		if (EMBER_GROW(ids, cap, len + 1) < 0) {
			rc = -1;
			break;
		}
		for (uint64_t k = 0; k < len && !s->bad; k++) {
			uint64_t id = get_u(s);
			if (id >= p->nframes)
				s->bad = true;
			ids[k] = (uint32_t)id;
		}
		if (!s->bad && ember_profile_stack(p, ids, (uint32_t)len) != i)
			s->bad = true;
	}
	free(ids);
	return rc;
}

static int read_rows(struct reader *rd, struct rbuf *s)
{
	struct ember_profile *p = rd->p;
	uint64_t n = get_u(s);

	for (uint64_t i = 0; i < n && !s->bad; i++) {
		uint64_t st = get_u(s), th = get_u(s), c = get_u(s);
		if (s->bad || st >= p->nstacks || th >= p->nthreads ||
		    ember_profile_add(p, (uint32_t)st, (uint32_t)th, c) != 0)
			s->bad = true;
		rd->total_rows += c;
	}
	return 0;
}

static int read_timeline(struct reader *rd, struct rbuf *s)
{
	struct ember_profile *p = rd->p;
	uint64_t n = get_u(s), t = 0;

	for (uint64_t i = 0; i < n && !s->bad; i++) {
		uint64_t z = get_u(s), st = get_u(s), th = get_u(s);
		t += (uint64_t)((int64_t)(z >> 1) ^ -(int64_t)(z & 1));
		if (s->bad || st >= p->nstacks || th >= p->nthreads ||
		    ember_profile_add_timed(p, t, (uint32_t)st, (uint32_t)th) != 0)
			s->bad = true;
	}
	return 0;
}

static int read_end(struct reader *rd, struct rbuf *s)
{
	if (get_u(s) != rd->total_rows)
		s->bad = true;
	rd->seen_end = true;
	return 0;
}

/* The readers by section tag, and what a message calls the section. */
static const struct {
	uint8_t tag;
	const char *what;
	int (*read)(struct reader *rd, struct rbuf *s);
} section_readers[] = {
	{ SEC_META, "metadata", read_meta },
	{ SEC_STRINGS, "string table", read_strings },
	{ SEC_FRAME_FLAGS, "frame flags", read_frame_flags },
	{ SEC_FRAMES, "frame table", read_frames },
	{ SEC_THREADS, "thread table", read_threads },
	{ SEC_STACKS, "stack table", read_stacks },
	{ SEC_ROWS, "sample rows", read_rows },
	{ SEC_TIMELINE, "timeline", read_timeline },
	{ SEC_END, "end marker", read_end },
};

static int parse(struct ember_profile *p, struct rbuf *r, const char *path, char *err, size_t errlen)
{
	struct reader rd = { .p = p, .content_len = r->len };
	int rc = -1;
	const char *what = "header";

	r->pos = 8;
	uint64_t version = get_u(r);
	if (r->bad)
		goto corrupt;
	if (version > EMBER_FILE_VERSION || version == 0) {
		snprintf(err, errlen, "%s: .ember format version %llu is newer than this ember reads (%d): "
			 "upgrade ember", path, (unsigned long long)version, EMBER_FILE_VERSION);
		return -1;
	}
	while (r->pos < r->len && !rd.seen_end) {
		uint8_t tag = r->data[r->pos++];
		uint64_t slen = get_u(r);
		if (r->bad || slen > r->len - r->pos) {
			snprintf(err, errlen, "%s: truncated .ember file: it ends inside a section (%zu bytes of "
				 "content)", path, r->len);
			goto out;
		}
		struct rbuf s = { r->data + r->pos, slen, 0, r->base + r->pos, false };
		r->pos += slen;
		/* A tag no reader knows is a section from a newer ember of the
		 * same format version: skippable by design. */
		for (size_t i = 0; i < sizeof(section_readers) / sizeof(section_readers[0]); i++) {
			if (section_readers[i].tag != tag)
				continue;
			what = section_readers[i].what;
			if (section_readers[i].read(&rd, &s) < 0)
				goto oom;
		}
		if (s.bad) {
			r->pos = s.base - r->base + s.pos;
			goto corrupt;
		}
	}
	if (!rd.seen_end) {
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
	free(rd.strs);
	free(rd.frame_flags);
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
	} else if (len < 8 || memcmp(data, EMBER_FILE_MAGIC, 8) != 0) {
		snprintf(err, errlen, "%s: not an .ember profile (no EMBRPROF header)", path);
	} else {
		struct rbuf r = { data, len, 0, 0, false };
		if (parse(p, &r, path, err, errlen) == 0)
			rc = EMBER_LOAD_OK;
	}
	free(data);
	return rc;
}
