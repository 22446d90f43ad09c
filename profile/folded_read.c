/* Folded stacks from any tool into a profile.  Tolerant where the
 * consumers are (CRLF, tabs, fractional and two-column counts) and loud
 * about it: every accommodation is counted in struct ember_load_warnings,
 * and a file without a single usable line is an error, never an empty
 * profile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "profile.h"
#include "profile_internal.h"

/* Frame text -> frame id, keyed by the bytes of the text (which stay in the
 * file buffer for the whole load), so each distinct text is parsed once. */
struct text_entry {
	const char *text;
	uint32_t len;
	uint32_t frame;
};

struct text_cache {
	struct ember_idtab index;
	struct text_entry *e;
	size_t n, cap;
};

struct text_key {
	const char *s;
	size_t n;
};

static bool text_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct text_entry *e = &((const struct text_cache *)ctx)->e[id];
	const struct text_key *k = key;

	return e->len == k->n && memcmp(e->text, k->s, k->n) == 0;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* "name (file:line)": py-spy's and ember's form of a Python frame. */
static bool parse_python(const char *s, size_t n, size_t *name_len, const char **file, size_t *file_len,
			 uint32_t *line)
{
	if (n < 6 || s[n - 1] != ')')
		return false;
	size_t i = n - 2, digits = 0;
	uint64_t v = 0, mul = 1;
	while (i > 0 && s[i] >= '0' && s[i] <= '9' && digits < 9) {
		v += (uint64_t)(s[i] - '0') * mul;
		mul *= 10;
		i--, digits++;
	}
	if (!digits || s[i] != ':')
		return false;
	size_t colon = i;
	/* The opening " (" before the file: the last one before the colon. */
	size_t open = colon;
	while (open > 1 && !(s[open - 1] == ' ' && s[open] == '('))
		open--;
	if (open <= 1 || s[open] != '(' || colon - open < 2)
		return false;
	*name_len = open - 1;
	*file = s + open + 1;
	*file_len = colon - open - 1;
	*line = (uint32_t)v;
	return true;
}

static uint32_t text_frame(struct ember_profile *p, const char *s, size_t n)
{
	struct ember_frame f = { .kind = EMBER_FRAME_NATIVE, .file = "", .module = "" };
	char *name = NULL, *file = NULL;
	size_t name_len, file_len;
	const char *fptr;
	uint32_t line;

	if (ends_with(s, n, "_[k]")) {
		f.kind = EMBER_FRAME_KERNEL;
		n -= 4;
	} else if (ends_with(s, n, "_[i]")) {
		f.inlined = true;
		n -= 4;
	} else if (ends_with(s, n, "_[j]") || ends_with(s, n, "_[w]")) {
		n -= 4;
	}
	if (f.kind == EMBER_FRAME_NATIVE && parse_python(s, n, &name_len, &fptr, &file_len, &line)) {
		f.kind = EMBER_FRAME_PYTHON;
		f.line = line;
		f.name = name = strndup(s, name_len);
		f.file = file = strndup(fptr, file_len);
	} else {
		if ((n == 11 && memcmp(s, "[truncated]", 11) == 0) ||
		    (n == 27 && memcmp(s, "[python frames uncertain]", 25) == 0))
			f.kind = EMBER_FRAME_SPECIAL;
		f.name = name = strndup(s, n);
	}
	uint32_t id = f.name && f.file ? ember_profile_frame(p, &f) : UINT32_MAX;
	free(name);
	free(file);
	return id;
}

static bool valid_utf8(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		uint32_t cp;
		size_t k = ember_utf8_next(u + i, n - i, &cp);
		if (cp == 0xFFFD && !(k == 3 && u[i] == 0xEF && u[i + 1] == 0xBF && u[i + 2] == 0xBD))
			return false;
		i += k;
	}
	return true;
}

/* Hash of one frame's text.  Runs once per frame occurrence (tens of
 * millions in a big file), so one multiply per word and a single final mix. */
static uint64_t text_hash(const char *s, size_t n)
{
	uint64_t h = EMBER_HASH_GOLDEN ^ n, w;
	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 29;
	}
	if (n) {
		w = 0;
		memcpy(&w, s, n);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	}
	return ember_hash_mix(h);
}

static uint32_t frame_id(struct text_cache *c, struct ember_profile *p, const char *s, size_t n,
			 struct ember_load_warnings *w)
{
	struct text_key k = { s, n };
	uint64_t h = text_hash(s, n);
	uint32_t i = ember_idtab_find(&c->index, h, text_eq, c, &k);
	if (i != UINT32_MAX)
		return c->e[i].frame;
	uint32_t id = text_frame(p, s, n);
	if (id == UINT32_MAX || n > UINT32_MAX || c->n >= UINT32_MAX - 1 ||
	    EMBER_GROW(c->e, c->cap, c->n + 1) < 0 || ember_idtab_insert(&c->index, h, (uint32_t)c->n) < 0)
		return UINT32_MAX;
	/* Checked once per distinct frame, not per line. */
	if (!valid_utf8(s, n))
		w->invalid_utf8++;
	c->e[c->n++] = (struct text_entry){ s, (uint32_t)n, id };
	return id;
}

/* A count token: digits with an optional fraction.  Returns false if s is
 * not one; *frac tells whether there was a non-zero fraction. */
static bool parse_count(const char *s, size_t n, uint64_t *out, bool *frac)
{
	uint64_t v = 0;
	size_t i = 0;
	*frac = false;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (i == 0)
		return false;
	if (i < n && s[i] == '.') {
		bool round_up = i + 1 < n && s[i + 1] >= '5' && s[i + 1] <= '9';
		for (size_t k = i + 1; k < n; k++) {
			if (s[k] < '0' || s[k] > '9')
				return false;
			if (s[k] != '0')
				*frac = true;
		}
		v += round_up;
		i = n;
	}
	if (i != n)
		return false;
	*out = v;
	return true;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Split "stack COUNT" or "stack BASE NEW" at the end of [s, s+n). */
static bool split_line(const char *s, size_t *n, uint64_t counts[2], int *ncounts, bool *frac)
{
	size_t end = *n;
	*ncounts = 0;
	*frac = false;
	for (int k = 0; k < 2; k++) {
		size_t i = end;
		while (i > 0 && !is_space(s[i - 1]))
			i--;
		bool f;
		if (i == 0 || !parse_count(s + i, end - i, &counts[1 - k], &f))
			break;
		*frac |= f;
		(*ncounts)++;
		end = i;
		while (end > 0 && is_space(s[end - 1]))
			end--;
	}
	if (*ncounts == 0 || end == 0)
		return false;
	if (*ncounts == 1)
		counts[0] = counts[1];
	*n = end;
	return true;
}

/* The file's bytes: mapped when it is a regular file (a 100 MB file is
 * parsed in place, never copied), else read until EOF (a pipe, a device).
 * *mapped says which, for folded_unmap.  EMBER_LOAD_OK, or
 * EMBER_LOAD_NOINPUT with a message in err. */
static int folded_map(const char *path, char **buf, size_t *len, bool *mapped, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct stat st;

	*buf = NULL;
	*len = 0;
	*mapped = false;
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return EMBER_LOAD_NOINPUT;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fileno(f), 0);
		if (m != MAP_FAILED) {
			madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
			*buf = m;
			*len = (size_t)st.st_size;
			*mapped = true;
		}
	}
	for (size_t cap = 0; !*mapped;) {
		if (ember_grow((void **)buf, &cap, 1, *len + 65536 + 1) < 0)
			break;
		size_t got = fread(*buf + *len, 1, 65536, f);
		*len += got;
		if (got == 0)
			break;
	}
	bool read_err = ferror(f);
	fclose(f);
	if (!*buf || read_err) {
		free(*buf);
		snprintf(err, errlen, "%s: %s", path, read_err ? "read error" : "out of memory");
		return EMBER_LOAD_NOINPUT;
	}
	return EMBER_LOAD_OK;
}

static void folded_unmap(char *buf, size_t len, bool mapped)
{
	if (mapped)
		munmap(buf, len);
	else
		free(buf);
}

/* The frames of one line: their ids and texts. */
struct line_frames {
	uint32_t *ids;
	struct text_key *text;
	size_t n, ids_cap, text_cap;
};

struct folded_reader {
	struct ember_profile *p;
	struct ember_load_warnings *w;
	int column;
	uint32_t thread;       /* the one pseudo-thread of folded input */
	struct text_cache cache;
	/* The current line's frames and the previous line's: lines of a
	 * folded file share their first frames with the line before more
	 * often than not, and a frame equal to the one at the same depth
	 * there needs no hashing. */
	struct line_frames cur, prev;
	uint64_t total;        /* samples added */
};

/* Frame id of the text s[0..n) at depth k of the current line. */
static uint32_t line_frame(struct folded_reader *r, uint32_t k, const char *s, size_t n)
{
	const struct line_frames *prev = &r->prev;
	struct line_frames *cur = &r->cur;
	uint32_t id;

	if (k < prev->n && prev->text[k].n == n && memcmp(prev->text[k].s, s, n) == 0)
		id = prev->ids[k];
	else
		id = frame_id(&r->cache, r->p, s, n, r->w);
	if (id == UINT32_MAX || EMBER_GROW(cur->ids, cur->ids_cap, (size_t)k + 1) < 0 ||
	    EMBER_GROW(cur->text, cur->text_cap, (size_t)k + 1) < 0)
		return UINT32_MAX;
	cur->ids[k] = id;
	cur->text[k] = (struct text_key){ s, n };
	cur->n = (size_t)k + 1;
	return id;
}

/* Add one line without its line end: 0 (also for a line skipped and
 * counted in the warnings), -1 on OOM. */
static int folded_line(struct folded_reader *r, const char *line, size_t n)
{
	struct ember_load_warnings *w = r->w;
	uint64_t counts[2];
	int ncounts;
	bool frac;

	while (n && is_space(line[n - 1]))
		n--;
	size_t lead = 0;
	while (lead < n && is_space(line[lead]))
		lead++;
	if (lead == n || line[lead] == '#')
		return 0;   /* blank, or a comment (austin's metadata lines) */
	size_t sn = n;
	if (!split_line(line, &sn, counts, &ncounts, &frac)) {
		if (!w->skipped++)
			w->first_skipped_line = w->lines;
		return 0;
	}
	w->fractional += frac;
	w->two_column += ncounts == 2;
	uint64_t count = counts[r->column ? 1 : 0];
	if (count == 0)
		return 0;
	uint32_t nf = 0;
	for (size_t start = lead; start <= sn;) {
		const char *semi = memchr(line + start, ';', sn - start);
		size_t i = semi ? (size_t)(semi - line) : sn;
		if (line_frame(r, nf++, line + start, i - start) == UINT32_MAX)
			return -1;
		start = i + 1;
	}
	uint32_t stack = ember_profile_stack(r->p, r->cur.ids, nf);
	if (stack == UINT32_MAX || ember_profile_add(r->p, stack, r->thread, count) != 0)
		return -1;
	r->total += count;
	struct line_frames t = r->prev;
	r->prev = r->cur;
	r->cur = t;
	return 0;
}

/* Every line of buf[0..len) into r->p: 0, or -1 on OOM. */
static int folded_lines(struct folded_reader *r, const char *buf, size_t len)
{
	for (size_t pos = 0; pos < len;) {
		const char *line = buf + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;
		pos += n + 1;
		r->w->lines++;
		if (n && line[n - 1] == '\r') {
			r->w->crlf++;
			n--;
		}
		if (folded_line(r, line, n) < 0)
			return -1;
	}
	return 0;
}

static int load_folded(struct ember_profile *p, const char *path, int column,
		       struct ember_load_warnings *w, char *err, size_t errlen)
{
	struct ember_load_warnings local;
	struct folded_reader r = { .p = p, .w = w ? w : &local, .column = column };
	char *buf;
	size_t len;
	bool mapped;
	int rc;

	w = r.w;
	memset(w, 0, sizeof(*w));
	if ((rc = folded_map(path, &buf, &len, &mapped, err, errlen)) != EMBER_LOAD_OK)
		return rc;
	r.thread = ember_profile_thread(p, 0, 0, "");
	rc = r.thread == UINT32_MAX || ember_idtab_init(&r.cache.index) < 0 ? -1 : folded_lines(&r, buf, len);
	free(r.cur.ids);
	free(r.cur.text);
	free(r.prev.ids);
	free(r.prev.text);
	free(r.cache.e);
	ember_idtab_free(&r.cache.index);
	folded_unmap(buf, len, mapped);
	if (rc != 0) {
		snprintf(err, errlen, "%s: out of memory", path);
		return EMBER_LOAD_BADDATA;
	}
	if (r.total == 0) {
		if (w->lines == 0 || (w->lines == 1 && len == 0))
			snprintf(err, errlen, "%s: empty file, no samples", path);
		else if (w->skipped)
			snprintf(err, errlen, "%s:%llu: not folded stacks (\"frame;frame COUNT\" expected); "
				 "no line had a sample count", path, (unsigned long long)w->first_skipped_line);
		else
			snprintf(err, errlen, "%s: no samples (every count is 0)", path);
		return EMBER_LOAD_BADDATA;
	}
	p->meta.samples = r.total;
	p->meta.source = ember_profile_cstr(p, "folded");
	return EMBER_LOAD_OK;
}

int ember_profile_load(struct ember_profile *p, const char *path, int column,
		       struct ember_load_warnings *w, char *err, size_t errlen)
{
	if (ember_profile_is_ember_file(path))
		return ember_profile_load_ember(p, path, err, errlen);
	return load_folded(p, path, column, w, err, errlen);
}
