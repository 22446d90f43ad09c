/* Reading .ember files (ember_file.h).  The content is decompressed as it
 * is parsed (ember_content.c), a section at a time: memory follows what the
 * sections hold, not what they claim, and content that grows far faster
 * than its compressed bytes is refused early.  Every length and index is
 * checked against what has been read, so a corrupt or truncated file gives
 * an error with the byte offset (or the gzip layer's word on it), never a
 * crash. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ember_content.h"
#include "ember_file.h"
#include "input.h"
#include "profile_internal.h"
#include "readers.h"
#include "varint.h"

struct rbuf {
	const uint8_t *data;
	size_t len, pos;
	size_t base;           /* offset of data within the file's content, for messages */
	bool bad;
};

static uint64_t get_u(struct rbuf *r)
{
	uint64_t v = 0;
	size_t n = r->bad || r->pos >= r->len ? 0 : ember_varint_get(r->data + r->pos, r->len - r->pos, &v);

	if (!n) {
		r->bad = true;
		return 0;
	}
	r->pos += n;
	return v;
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

/* One entry of the flags section: memory follows the section's size, not
 * the largest frame id it names. */
struct frame_flag {
	uint64_t id;
	uint8_t flags;
};

/* An attributed row: how many of its stack's frames are the dispatcher's. */
struct row_depth {
	uint32_t row, depth;
};

/* What the sections read so far left for the next ones. */
struct reader {
	struct ember_profile *p;
	const char **strs;            /* the string table, interned in p */
	uint64_t nstrs;
	struct frame_flag *flags;     /* from the flags section, ids ascending */
	size_t nflags, flags_cap;
	bool seen_frames, seen_end, seen_rows;
	uint64_t total_rows;
	struct frame_flag *row_flags; /* from the row flags section, row indexes ascending */
	size_t nrow_flags, row_flags_cap;
	struct row_depth *depths;     /* from the attributed rows' section, row indexes ascending */
	size_t ndepths, depths_cap;
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
		else if (KEY("wall_clock"))
			m->wall_clock = u != 0;
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

	if (s->bad || rd->seen_frames || n > s->len) {
		s->bad = true;
		return 0;
	}
	for (uint64_t i = 0; i < n && !s->bad; i++) {
		uint64_t id = get_u(s), fl = get_u(s);
		/* ids ascend strictly; a frame id fits the model's 32 bits */
		if (s->bad || id >= UINT32_MAX || (rd->nflags && id <= rd->flags[rd->nflags - 1].id)) {
			s->bad = true;
			break;
		}
		if (EMBER_GROW(rd->flags, rd->flags_cap, rd->nflags + 1) < 0)
			return -1;
		/* unknown bits: dropped */
		rd->flags[rd->nflags++] = (struct frame_flag){ id, (uint8_t)(fl & EMBER_FRAME_FLAGS_KNOWN) };
	}
	return 0;
}

static int read_frames(struct reader *rd, struct rbuf *s)
{
	uint64_t n = get_u(s), nstrs = rd->nstrs;
	size_t fl = 0;

	rd->seen_frames = true;
	for (uint64_t i = 0; i < n && !s->bad; i++) {
		while (fl < rd->nflags && rd->flags[fl].id < i)
			fl++;
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
					 .flags = fl < rd->nflags && rd->flags[fl].id == i ? rd->flags[fl].flags : 0 };
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

static int read_row_flags(struct reader *rd, struct rbuf *s)
{
	uint64_t n = get_u(s);

	if (s->bad || rd->seen_rows || n > s->len) {
		s->bad = true;
		return 0;
	}
	for (uint64_t i = 0; i < n && !s->bad; i++) {
		uint64_t id = get_u(s), fl = get_u(s);
		if (s->bad || id >= UINT32_MAX ||
		    (rd->nrow_flags && id <= rd->row_flags[rd->nrow_flags - 1].id)) {
			s->bad = true;
			break;
		}
		if (EMBER_GROW(rd->row_flags, rd->row_flags_cap, rd->nrow_flags + 1) < 0)
			return -1;
		/* unknown bits: dropped */
		rd->row_flags[rd->nrow_flags++] = (struct frame_flag){ id, (uint8_t)(fl & EMBER_ROW_FLAGS_KNOWN) };
	}
	return 0;
}

static int read_attributed(struct reader *rd, struct rbuf *s)
{
	uint64_t n = get_u(s);

	if (s->bad || rd->seen_rows || n > s->len) {
		s->bad = true;
		return 0;
	}
	for (uint64_t i = 0; i < n && !s->bad; i++) {
		uint64_t id = get_u(s), depth = get_u(s);
		if (s->bad || id >= UINT32_MAX || !depth || depth >= UINT32_MAX ||
		    (rd->ndepths && id <= rd->depths[rd->ndepths - 1].row)) {
			s->bad = true;
			break;
		}
		if (EMBER_GROW(rd->depths, rd->depths_cap, rd->ndepths + 1) < 0)
			return -1;
		rd->depths[rd->ndepths++] = (struct row_depth){ (uint32_t)id, (uint32_t)depth };
	}
	return 0;
}

static int read_rows(struct reader *rd, struct rbuf *s)
{
	struct ember_profile *p = rd->p;
	uint64_t n = get_u(s);
	size_t fl = 0, at = 0;

	rd->seen_rows = true;
	for (uint64_t i = 0; i < n && !s->bad; i++) {
		uint64_t st = get_u(s), th = get_u(s), c = get_u(s);
		while (fl < rd->nrow_flags && rd->row_flags[fl].id < i)
			fl++;
		uint32_t flags = fl < rd->nrow_flags && rd->row_flags[fl].id == i ? rd->row_flags[fl].flags : 0;
		while (at < rd->ndepths && rd->depths[at].row < i)
			at++;
		uint32_t depth = at < rd->ndepths && rd->depths[at].row == i ? rd->depths[at].depth : 0;
		/* The samples of a profile add up to at most EMBER_COUNT_MAX, as
		 * the folded reader requires too: more is a corrupt file. */
		if (s->bad || st >= p->nstacks || th >= p->nthreads || c > EMBER_COUNT_MAX - rd->total_rows ||
		    ember_profile_add_row_depth(p, (uint32_t)st, (uint32_t)th, flags, depth, c) != 0)
			s->bad = true;
		/* one row per (stack, thread, flags, depth), as written */
		if (p->nrows != i + 1)
			s->bad = true;
		rd->total_rows += c;
	}
	return 0;
}

static int read_timeline(struct reader *rd, struct rbuf *s)
{
	struct ember_profile *p = rd->p;
	uint64_t n = get_u(s), t = 0;
	bool backwards = false;

	for (uint64_t i = 0; i < n && !s->bad; i++) {
		uint64_t z = get_u(s), st = get_u(s), th = get_u(s);
		t += (uint64_t)ember_unzigzag(z);
		backwards |= ember_unzigzag(z) < 0;
		if (s->bad || st >= p->nstacks || th >= p->nthreads ||
		    ember_profile_add_timed(p, t, (uint32_t)st, (uint32_t)th) != 0)
			s->bad = true;
	}
	/* The format stores samples in time order; a file that does not is
	 * read all the same, put in the order the model promises. */
	if (backwards && !s->bad)
		ember_profile_sort_timeline(p);
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
	{ SEC_ROW_FLAGS, "row flags", read_row_flags },
	{ SEC_ATTRIBUTED, "attributed rows", read_attributed },
	{ SEC_ROWS, "sample rows", read_rows },
	{ SEC_TIMELINE, "timeline", read_timeline },
	{ SEC_END, "end marker", read_end },
};

/* ---- Sections ---- */

/* A known section's buffer grows by at most this much past the bytes that
 * came, so a length a section only claims allocates nothing. */
#define BODY_STEP ((size_t)1 << 20)

/* How a parse ended. */
enum parse_end { P_OK, P_CORRUPT, P_TRUNCATED, P_CONTENT, P_OOM, P_SECOND };

struct parse {
	struct ember_content c;
	struct reader rd;
	uint8_t *body;         /* the current known section's bytes */
	size_t body_cap;
	uint64_t seen[4];      /* tags met, one bit each */
	char what[64];         /* what a P_CORRUPT message says is wrong */
	uint64_t at;           /* and the content offset it names */
};

static bool is_tag(int t)
{
	return (t >= 'A' && t <= 'Z') || (t >= 'a' && t <= 'z');
}

/* Why the content ran out where a section needed more. */
static enum parse_end short_read(struct parse *ps)
{
	return ps->c.state == C_END ? P_TRUNCATED : P_CONTENT;
}

/* The body of a known section, slen bytes, into ps->body. */
static enum parse_end read_body(struct parse *ps, uint64_t slen)
{
	for (uint64_t got = 0; got < slen;) {
		uint64_t step = slen - got < BODY_STEP ? slen - got : BODY_STEP;
		if (ember_grow((void **)&ps->body, &ps->body_cap, 1, (size_t)(got + step)) < 0)
			return P_OOM;
		uint64_t k = ember_content_read(&ps->c, ps->body + got, step);
		got += k;
		if (k < step)
			return short_read(ps);
	}
	return P_OK;
}

/* One section, its tag already read: its length, then its body, read by
 * its reader (or skipped, when no reader knows the tag). */
static enum parse_end parse_section(struct parse *ps, int tag)
{
	uint64_t slen, at = ember_content_pos(&ps->c) - 1;
	size_t i = 0, nreaders = sizeof(section_readers) / sizeof(section_readers[0]);

	ps->at = at;
	/* Tags are ASCII letters, each used once: the writer's own rule, and
	 * what stops a stream of empty sections from going on forever. */
	if (!is_tag(tag) || (ps->seen[tag / 64] >> (tag % 64) & 1)) {
		snprintf(ps->what, sizeof ps->what, is_tag(tag) ? "a second '%c' section" : "bad section tag 0x%02x",
			 tag);
		return P_CORRUPT;
	}
	ps->seen[tag / 64] |= 1ull << (tag % 64);
	snprintf(ps->what, sizeof ps->what, "bad length of section '%c'", tag);
	if (!ember_content_u(&ps->c, &slen))
		return ps->c.state == C_OK ? P_CORRUPT : short_read(ps);
	while (i < nreaders && section_readers[i].tag != tag)
		i++;
	if (i == nreaders)   /* from a newer ember of the same format version: skippable by design */
		return ember_content_read(&ps->c, NULL, slen) == slen ? P_OK : short_read(ps);
	enum parse_end e = read_body(ps, slen);
	if (e != P_OK)
		return e;
	struct rbuf s = { ps->body, (size_t)slen, 0, (size_t)ember_content_pos(&ps->c) - (size_t)slen, false };
	snprintf(ps->what, sizeof ps->what, "bad %s", section_readers[i].what);
	if (section_readers[i].read(&ps->rd, &s) < 0)
		return P_OOM;
	/* A section is its items and nothing else. */
	if (!s.bad && s.pos != s.len)
		snprintf(ps->what, sizeof ps->what, "%s: bytes after its items", section_readers[i].what);
	ps->at = s.base + s.pos;
	return s.bad || s.pos != s.len ? P_CORRUPT : P_OK;
}

/* Whether what follows the last gzip member, which gzip ignores, is an
 * uncompressed .ember profile (a compressed one then a plain one, cat'd). */
static bool plain_profile_follows(struct ember_content *c)
{
	struct ember_input *in = c->in;
	long long n = c->gzip ? ember_input_fill(in, 8) : -1;

	return n >= 8 && memcmp(in->data + in->pos, EMBER_FILE_MAGIC, 8) == 0;
}

/* Every section up to the end marker, then the end of the content. */
static enum parse_end parse_sections(struct parse *ps)
{
	while (!ps->rd.seen_end) {
		int tag = ember_content_byte(&ps->c);
		if (tag < 0)
			return short_read(ps);
		enum parse_end e = parse_section(ps, tag);
		if (e != P_OK)
			return e;
	}
	snprintf(ps->what, sizeof ps->what, "data after the end marker");
	ps->at = ember_content_pos(&ps->c);
	/* `cat a.ember b.ember` (gzip members or plain content alike)
	 * continues the content with a second header: said as such. */
	uint8_t next[8];
	uint64_t k = ember_content_read(&ps->c, next, sizeof next);
	if (k == sizeof next && memcmp(next, EMBER_FILE_MAGIC, sizeof next) == 0)
		return P_SECOND;
	if (k > 0)
		return P_CORRUPT;
	if (ps->c.state == C_END && plain_profile_follows(&ps->c))
		return P_SECOND;
	return ps->c.state == C_END ? P_OK : P_CONTENT;
}

/* The magic and the version.  recognised: the magic was there. */
static enum parse_end parse_header(struct parse *ps, bool *recognised, uint64_t *version)
{
	uint8_t magic[8];

	*recognised = false;
	if (ember_content_read(&ps->c, magic, 8) < 8)
		return ps->c.state == C_END ? P_CORRUPT : P_CONTENT;
	if (memcmp(magic, EMBER_FILE_MAGIC, 8) != 0)
		return P_CORRUPT;
	*recognised = true;
	snprintf(ps->what, sizeof ps->what, "bad header");
	ps->at = 8;
	if (!ember_content_u(&ps->c, version))
		return ps->c.state == C_OK ? P_CORRUPT : short_read(ps);
	return P_OK;
}

/* The one line for a parse that ended in e. */
static int parse_message(struct parse *ps, enum parse_end e, bool recognised, char *err, size_t errlen)
{
	const char *name = ps->c.in->name;

	if (e == P_CONTENT || (e != P_OOM && ps->c.state != C_OK && ps->c.state != C_END && ps->c.state != C_BOMB))
		return ember_content_error(&ps->c, recognised, err, errlen);
	if (e == P_CORRUPT && !recognised) {
		snprintf(err, errlen, "%s: not an .ember profile (%s)", name,
			 ps->c.gzip ? "gzip-compressed, but not an .ember file: folded stacks are read uncompressed"
				    : "no EMBRPROF header");
		return EMBER_LOAD_BADDATA;
	}
	if (e == P_SECOND) {
		snprintf(err, errlen, "%s: two or more .ember profiles concatenated (another header follows the "
			 "first one's end marker); ember reads one profile per file", name);
		return EMBER_LOAD_BADDATA;
	}
	if (e == P_OOM) {
		snprintf(err, errlen, "%s: out of memory while reading", name);
		return EMBER_LOAD_NOMEM;
	}
	if (e == P_TRUNCATED)
		snprintf(err, errlen, "%s: truncated .ember file (no end marker after %llu bytes of content)", name,
			 (unsigned long long)ps->c.total);
	else
		snprintf(err, errlen, "%s: corrupt .ember file: %s near byte %llu of the content", name, ps->what,
			 (unsigned long long)ps->at);
	return EMBER_LOAD_BADDATA;
}

static enum parse_end parse_all(struct parse *ps, bool *recognised, char *err, size_t errlen)
{
	uint64_t version;
	enum parse_end e = parse_header(ps, recognised, &version);

	if (e != P_OK)
		return e;
	if (version == 0) {
		snprintf(err, errlen, "%s: corrupt .ember file: format version 0 is not one any ember writes (they "
			 "start at 1)", ps->c.in->name);
		return P_OK;
	}
	if (version > EMBER_FILE_VERSION) {
		snprintf(err, errlen, "%s: .ember format version %llu is newer than this ember reads (%d): "
			 "upgrade ember", ps->c.in->name, (unsigned long long)version, EMBER_FILE_VERSION);
		return P_OK;
	}
	return parse_sections(ps);
}

int ember_read_ember(struct ember_profile *p, struct ember_input *in, bool gzip, char *err, size_t errlen)
{
	struct parse ps = { .rd = { .p = p } };
	bool recognised = false;
	int rc = EMBER_LOAD_BADDATA;

	err[0] = 0;
	if (ember_content_begin(&ps.c, in, gzip) < 0) {
		snprintf(err, errlen, "%s: out of memory while reading", in->name);
		return EMBER_LOAD_NOMEM;
	}
	enum parse_end e = parse_all(&ps, &recognised, err, errlen);
	if (e == P_OK && !err[0]) {
		rc = EMBER_LOAD_OK;
	} else if (e != P_OK) {
		/* Content that makes no sense may be the gzip layer's fault:
		 * read on, so that the message names the real cause. */
		if (e == P_CORRUPT || e == P_TRUNCATED)
			ember_content_drain(&ps.c);
		rc = parse_message(&ps, e, recognised, err, errlen);
	} else {
		/* version 0 or a newer one: err says so */
	}
	ember_content_end(&ps.c);
	free(ps.body);
	free(ps.rd.strs);
	free(ps.rd.flags);
	free(ps.rd.row_flags);
	free(ps.rd.depths);
	return rc;
}

/* ---- By path: the file must be an .ember one ---- */

static int open_input(struct ember_input *in, const char *path, int *fd, char *err, size_t errlen)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (ember_input_begin(in, *fd, path, err, errlen) < 0) {
		close(*fd);
		return -1;
	}
	return 0;
}

bool ember_profile_is_ember_file(const char *path)
{
	struct ember_input in;
	char err[256];
	int fd;

	if (open_input(&in, path, &fd, err, sizeof err) < 0)
		return false;
	long long n = ember_input_fill(&in, 8);
	bool yes = n >= 8 && memcmp(in.data + in.pos, EMBER_FILE_MAGIC, 8) == 0;
	if (n >= 2 && ember_input_is_gzip(in.data + in.pos, (size_t)n)) {
		struct ember_content c;
		uint8_t magic[8];
		if (ember_content_begin(&c, &in, true) == 0) {
			yes = ember_content_read(&c, magic, 8) == 8 && memcmp(magic, EMBER_FILE_MAGIC, 8) == 0;
			ember_content_end(&c);
		}
	}
	ember_input_end(&in);
	close(fd);
	return yes;
}

int ember_profile_load_ember(struct ember_profile *p, const char *path, char *err, size_t errlen)
{
	struct ember_input in;
	int fd;

	if (open_input(&in, path, &fd, err, errlen) < 0)
		return EMBER_LOAD_NOINPUT;
	long long n = ember_input_fill(&in, 2);
	int rc;
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(in.read_errno));
		rc = EMBER_LOAD_NOINPUT;
	} else {
		rc = ember_read_ember(p, &in, ember_input_is_gzip(in.data + in.pos, (size_t)n), err, errlen);
	}
	ember_input_end(&in);
	close(fd);
	return rc;
}
