/* Folded stacks from any tool into a profile.  Tolerant where the
 * consumers are (CRLF, tabs, fractional and two-column counts) and loud
 * about it: every accommodation is counted in struct ember_load_warnings,
 * and a file without a single usable line is an error, never an empty
 * profile.  The input is read front to back once (a pipe as a file); memory
 * follows the distinct frames, not the size of the input, and input that
 * cannot be folded stacks fails early (the limits below, docs/cli.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "readers.h"
#include "profile.h"
#include "profile_internal.h"

/* The longest line read: a 2,000,000-frame stack of 32-byte frames.  A
 * longer one (a file of NUL bytes, /dev/zero) is not folded stacks. */
#define FOLDED_MAX_LINE ((size_t)64 << 20)
/* Input whose first 16 MiB hold no line with a count is not folded stacks
 * (a binary file, the wrong file): said then, not at its end. */
#define FOLDED_FIRST_COUNT_WITHIN ((uint64_t)16 << 20)
/* The prefix judged for what the input is: its first 1,000 lines that are
 * neither blank nor comments, or its first 1 MiB, whichever ends first (the
 * whole input when shorter).  Random bytes give a line every 256 bytes, one
 * in a thousand ending in digits, so they are judged within 256 KiB. */
#define FOLDED_PREFIX_LINES 1000
#define FOLDED_PREFIX_BYTES ((uint64_t)1 << 20)
/* Folded stacks are text: more than 1 % of the prefix's bytes (and at
 * least 16) being control characters other than tab, CR and LF is binary
 * data.  Random bytes hold 12 %; a name with a NUL byte here and there
 * passes. */
#define FOLDED_BINARY_PERCENT 1
#define FOLDED_BINARY_MIN 16
/* More than half of the prefix's lines (and at least 10) without a count:
 * not folded stacks.  A file with a few such lines reads with a warning. */
#define FOLDED_UNCOUNTED_MIN 10

/* Frame text -> frame id, keyed by the bytes of the text, so each distinct
 * text is parsed once.  The cache keeps its own copy of each distinct text
 * (the input's bytes are gone once read). */
struct text_entry {
	size_t off;            /* the text: bytes[off .. off + len) */
	uint32_t len;
	uint32_t frame;
};

struct text_cache {
	struct ember_idtab index;
	struct text_entry *e;
	size_t n, cap;
	char *bytes;
	size_t nbytes, bytes_cap;
};

struct text_key {
	const char *s;
	size_t n;
};

static bool text_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct text_cache *c = ctx;
	const struct text_entry *e = &c->e[id];
	const struct text_key *k = key;

	return e->len == k->n && memcmp(c->bytes + e->off, k->s, k->n) == 0;
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

/* s[0..n) with each NUL byte as U+FFFD, NUL-terminated; the frame name
 * is a C string, so a NUL would cut it short.  NULL on OOM. */
static char *without_nul(const char *s, size_t n, size_t *out_len)
{
	size_t nul = 0;
	for (const char *q = s; (q = memchr(q, 0, (size_t)(s + n - q))) != NULL; q++)
		nul++;
	char *t = malloc(n + 2 * nul + 1), *o = t;
	if (!t)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i])
			*o++ = s[i];
		else
			memcpy(o, "\xef\xbf\xbd", 3), o += 3;
	}
	*o = 0;
	*out_len = (size_t)(o - t);
	return t;
}

/* A native name that stands for code without symbols, as ember, perf and
 * others write it: "[unknown]", or "[MODULE+0xHEX]" (whose module is then
 * known too).  Such a frame gets EMBER_FRAME_NO_SYMBOL; *module owns the
 * module's name (NULL when none or on OOM, which only loses the module). */
static void no_symbol_frame(struct ember_frame *f, char **module)
{
	if (strcmp(f->name, "[unknown]") == 0) {
		f->flags |= EMBER_FRAME_NO_SYMBOL;
		return;
	}
	size_t mlen = ember_unsymbolized_module(f->name);
	if (!mlen)
		return;
	f->flags |= EMBER_FRAME_NO_SYMBOL;
	if ((*module = strndup(f->name + 1, mlen)))
		f->module = *module;
}

static uint32_t text_frame(struct ember_profile *p, const char *s, size_t n)
{
	struct ember_frame f = { .kind = EMBER_FRAME_NATIVE, .file = "", .module = "" };
	char *name = NULL, *file = NULL, *clean = NULL, *module = NULL;
	size_t name_len, file_len;
	const char *fptr;
	uint32_t line;

	if (memchr(s, 0, n)) {
		if (!(clean = without_nul(s, n, &n)))
			return UINT32_MAX;
		s = clean;
	}
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
		if (ember_mark_name(s, n))
			f.kind = EMBER_FRAME_SPECIAL;
		f.name = name = strndup(s, n);
		if (f.kind == EMBER_FRAME_NATIVE && name)
			no_symbol_frame(&f, &module);
	}
	uint32_t id = f.name && f.file ? ember_profile_frame(p, &f) : UINT32_MAX;
	free(module);
	free(name);
	free(file);
	free(clean);
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

/* The cache entry of the frame text s[0..n), added if new; UINT32_MAX on
 * OOM. */
static uint32_t frame_entry(struct text_cache *c, struct ember_profile *p, const char *s, size_t n,
			    struct ember_load_warnings *w)
{
	struct text_key k = { s, n };
	uint64_t h = text_hash(s, n);
	uint32_t i = ember_idtab_find(&c->index, h, text_eq, c, &k);
	if (i != UINT32_MAX)
		return i;
	uint32_t id = text_frame(p, s, n);
	if (id == UINT32_MAX || n > UINT32_MAX || c->n >= UINT32_MAX - 1 ||
	    EMBER_GROW(c->e, c->cap, c->n + 1) < 0 || EMBER_GROW(c->bytes, c->bytes_cap, c->nbytes + n + 1) < 0 ||
	    ember_idtab_insert(&c->index, h, (uint32_t)c->n) < 0)
		return UINT32_MAX;
	/* Checked once per distinct frame, not per line. */
	if (!valid_utf8(s, n))
		w->invalid_utf8++;
	if (memchr(s, 0, n))
		w->nul_names++;
	memcpy(c->bytes + c->nbytes, s, n);
	c->e[c->n] = (struct text_entry){ c->nbytes, (uint32_t)n, id };
	c->nbytes += n;
	return (uint32_t)c->n++;
}

/* A count token: digits with an optional fraction.  1 with the count in
 * *out (*frac: there was a non-zero fraction), 0 when s is not a count, -1
 * when it is one larger than UINT64_MAX. */
static int parse_count(const char *s, size_t n, uint64_t *out, bool *frac)
{
	uint64_t v = 0;
	size_t i = 0;
	bool over = false;
	*frac = false;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		over |= v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10);
		v = v * 10 + d;
	}
	if (i == 0)
		return 0;
	if (i < n && s[i] == '.') {
		bool round_up = i + 1 < n && s[i + 1] >= '5' && s[i + 1] <= '9';
		for (size_t k = i + 1; k < n; k++) {
			if (s[k] < '0' || s[k] > '9')
				return 0;
			if (s[k] != '0')
				*frac = true;
		}
		over |= round_up && v == UINT64_MAX;
		v += round_up;
		i = n;
	}
	if (i != n)
		return 0;
	*out = v;
	return over ? -1 : 1;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Split "stack COUNT" or "stack BASE NEW" at the end of [s, s+n): 1, 0
 * when the line has no count, -1 when its last count is too large.  A
 * token before the count that is not a count (nor a fitting one) is part
 * of the stack. */
static int split_line(const char *s, size_t *n, uint64_t counts[2], int *ncounts, bool *frac)
{
	size_t end = *n;
	*ncounts = 0;
	*frac = false;
	for (int k = 0; k < 2; k++) {
		size_t i = end;
		while (i > 0 && !is_space(s[i - 1]))
			i--;
		bool f;
		int got = i == 0 ? 0 : parse_count(s + i, end - i, &counts[1 - k], &f);
		if (got < 0 && k == 0)
			return -1;
		if (got <= 0)
			break;
		*frac |= f;
		(*ncounts)++;
		end = i;
		while (end > 0 && is_space(s[end - 1]))
			end--;
	}
	if (*ncounts == 0 || end == 0)
		return 0;
	if (*ncounts == 1)
		counts[0] = counts[1];
	*n = end;
	return 1;
}

/* The frames of one line: their ids and their cache entries. */
struct line_frames {
	uint32_t *ids;
	uint32_t *ent;
	size_t n, ids_cap, ent_cap;
};

/* Why reading stopped before the end. */
enum folded_fail {
	F_NONE, F_OOM, F_COUNT_TOO_LARGE, F_TOTAL_TOO_LARGE, F_LINE_TOO_LONG, F_NO_COUNT_EARLY, F_READ,
	F_BINARY, F_MOSTLY_UNCOUNTED,
};

/* What the prefix (FOLDED_PREFIX_*) held, until it is judged. */
struct folded_prefix {
	uint64_t bytes, control;   /* its bytes, and those that are control characters */
	uint64_t lines, uncounted; /* its lines that are not blank nor comments, and those without a count */
	bool judged;
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
	bool counted;          /* a line with a count was seen */
	enum folded_fail fail;
	bool long_line_nul;    /* F_LINE_TOO_LONG: the line held NUL bytes */
	struct folded_prefix prefix;
};

/* Frame id of the text s[0..n) at depth k of the current line. */
static uint32_t line_frame(struct folded_reader *r, uint32_t k, const char *s, size_t n)
{
	const struct line_frames *prev = &r->prev;
	struct line_frames *cur = &r->cur;
	struct text_cache *c = &r->cache;
	uint32_t ent;

	if (k < prev->n && c->e[prev->ent[k]].len == n && memcmp(c->bytes + c->e[prev->ent[k]].off, s, n) == 0)
		ent = prev->ent[k];
	else if ((ent = frame_entry(c, r->p, s, n, r->w)) == UINT32_MAX)
		return UINT32_MAX;
	if (EMBER_GROW(cur->ids, cur->ids_cap, (size_t)k + 1) < 0 || EMBER_GROW(cur->ent, cur->ent_cap, (size_t)k + 1) < 0)
		return UINT32_MAX;
	cur->ids[k] = c->e[ent].frame;
	cur->ent[k] = ent;
	cur->n = (size_t)k + 1;
	return cur->ids[k];
}

/* The count of a line that has one; false (with r->fail, or a skipped
 * line counted) when it has none to add. */
static bool line_count(struct folded_reader *r, const char *line, size_t *sn, uint64_t *count)
{
	struct ember_load_warnings *w = r->w;
	uint64_t counts[2];
	int ncounts;
	bool frac;

	int got = split_line(line, sn, counts, &ncounts, &frac);
	if (got < 0) {
		r->fail = F_COUNT_TOO_LARGE;
		return false;
	}
	if (got == 0) {
		if (!w->skipped++)
			w->first_skipped_line = w->lines;
		return false;
	}
	r->counted = true;
	w->fractional += frac;
	w->two_column += ncounts == 2;
	*count = counts[r->column ? 1 : 0];
	/* The model's counts add up to at most EMBER_COUNT_MAX: one count or
	 * a total past that cannot be held, and is refused rather than cut. */
	if (*count > EMBER_COUNT_MAX) {
		r->fail = F_COUNT_TOO_LARGE;
		return false;
	}
	if (*count > EMBER_COUNT_MAX - r->total) {
		r->fail = F_TOTAL_TOO_LARGE;
		return false;
	}
	return *count != 0;
}

/* What folded_line made of a line. */
enum line_kind { L_BLANK, L_UNCOUNTED, L_COUNTED };

/* Add one line without its line end: its enum line_kind (a line without a
 * count is skipped and counted in the warnings), -1 when reading must stop
 * (r->fail). */
static int folded_line(struct folded_reader *r, const char *line, size_t n)
{
	uint64_t count;

	while (n && is_space(line[n - 1]))
		n--;
	size_t lead = 0;
	while (lead < n && is_space(line[lead]))
		lead++;
	if (lead == n || line[lead] == '#')
		return L_BLANK;   /* blank, or a comment (austin's metadata lines) */
	size_t sn = n;
	uint64_t skipped = r->w->skipped;
	if (!line_count(r, line, &sn, &count))
		return r->fail ? -1 : r->w->skipped != skipped ? L_UNCOUNTED : L_COUNTED;
	uint32_t nf = 0;
	for (size_t start = lead; start <= sn;) {
		const char *semi = memchr(line + start, ';', sn - start);
		size_t i = semi ? (size_t)(semi - line) : sn;
		if (line_frame(r, nf++, line + start, i - start) == UINT32_MAX)
			goto oom;
		start = i + 1;
	}
	uint32_t stack = ember_profile_stack(r->p, r->cur.ids, nf);
	if (stack == UINT32_MAX || ember_profile_add(r->p, stack, r->thread, count) != 0)
		goto oom;
	r->total += count;
	struct line_frames t = r->prev;
	r->prev = r->cur;
	r->cur = t;
	return L_COUNTED;
oom:
	r->fail = F_OOM;
	return -1;
}

/* Where the line at s[0..room) ends: its length, and in *eol the bytes of
 * its line end (LF, CR LF, or a lone CR as classic Mac OS wrote), 0 when
 * none is within scan bytes.  -1 when s ends in a CR and more input may
 * follow: whether an LF comes next is not known yet. */
static long long line_end(const char *s, size_t room, size_t scan, bool at_end, size_t *eol)
{
	const char *nl = memchr(s, '\n', scan);
	size_t n = nl ? (size_t)(nl - s) : scan;
	const char *cr = memchr(s, '\r', n);

	*eol = nl ? 1 : 0;
	if (!cr)
		return nl ? (long long)n : (long long)room;
	n = (size_t)(cr - s);
	if (n + 1 == room && !at_end)
		return -1;
	*eol = cr + 1 == nl ? 2 : 1;
	return (long long)n;
}

/* Count a line of the prefix; once the prefix is complete (or at the end
 * of the input), judge it: 0, or -1 with r->fail when it is not folded
 * stacks. */
static int judge_prefix(struct folded_reader *r, const char *line, size_t n, size_t eol, int kind, bool last)
{
	struct folded_prefix *f = &r->prefix;

	if (f->judged)
		return 0;
	f->bytes += n + eol;
	for (size_t i = 0; i < n; i++)
		f->control += ((unsigned char)line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7f;
	f->lines += kind != L_BLANK;
	f->uncounted += kind == L_UNCOUNTED;
	if (f->lines < FOLDED_PREFIX_LINES && f->bytes < FOLDED_PREFIX_BYTES && !last)
		return 0;
	f->judged = true;
	if (f->control >= FOLDED_BINARY_MIN && f->control * 100 > f->bytes * FOLDED_BINARY_PERCENT)
		r->fail = F_BINARY;
	else if (f->uncounted >= FOLDED_UNCOUNTED_MIN && 2 * f->uncounted > f->lines)
		r->fail = F_MOSTLY_UNCOUNTED;
	return r->fail ? -1 : 0;
}

/* The whole lines of buf[0..len) (and at the end of the input, a last
 * line without its line end) into r->p; base: the input offset of buf.
 * *used gets the bytes read.  0, or -1 when reading must stop (r->fail). */
static int folded_lines(struct folded_reader *r, const char *buf, size_t len, bool at_end, uint64_t base,
			size_t *used)
{
	size_t pos = 0, eol;

	while (pos < len) {
		const char *line = buf + pos;
		size_t room = len - pos, scan = room <= FOLDED_MAX_LINE ? room : FOLDED_MAX_LINE + 1;
		long long end = line_end(line, room, scan, at_end, &eol);
		if (end < 0)
			break;   /* a CR last: an LF may follow */
		size_t n = (size_t)end;
		if (n > FOLDED_MAX_LINE) {
			r->w->lines++;
			r->long_line_nul = memchr(line, 0, FOLDED_MAX_LINE) != NULL;
			r->fail = F_LINE_TOO_LONG;
			return -1;
		}
		if (!eol && !at_end)
			break;   /* the rest of this line is still to come */
		pos += n + (eol ? eol : 1);
		r->w->lines++;
		r->w->crlf += eol == 2;
		r->w->cr_only += eol == 1 && line[n] == '\r';
		int kind = folded_line(r, line, n);
		if (kind < 0 || judge_prefix(r, line, n, eol, kind, false) < 0)
			return -1;
		if (!r->counted && base + pos > FOLDED_FIRST_COUNT_WITHIN) {
			r->fail = F_NO_COUNT_EARLY;
			return -1;
		}
	}
	*used = pos < len ? pos : len;
	return 0;
}

/* Every line of the input: 0, or -1 (r->fail). */
static int folded_input(struct folded_reader *r, struct ember_input *in)
{
	for (;;) {
		size_t used;
		if (folded_lines(r, (const char *)in->data + in->pos, in->len - in->pos, in->eof,
				 ember_input_consumed(in), &used) < 0)
			return -1;
		in->pos += used;
		if (in->eof)
			return judge_prefix(r, "", 0, 0, L_BLANK, true);
		/* A partial line is left: read at least as much again, so a
		 * long line is scanned a few times, not once per read. */
		size_t partial = in->len - in->pos;
		size_t want = partial < FOLDED_MAX_LINE / 2 ? 2 * partial + 1 : FOLDED_MAX_LINE + 1;
		if (ember_input_fill(in, want) < 0) {
			r->fail = in->read_errno == ENOMEM ? F_OOM : F_READ;
			return -1;
		}
	}
}

/* The one line for a read that stopped early. */
static int folded_failure(const struct folded_reader *r, const struct ember_input *in, char *err, size_t errlen)
{
	const char *name = in->name;
	unsigned long long line = (unsigned long long)r->w->lines;

	switch (r->fail) {
	case F_READ:
		snprintf(err, errlen, "%s: %s", name, strerror(in->read_errno));
		return EMBER_LOAD_NOINPUT;
	case F_COUNT_TOO_LARGE:
		snprintf(err, errlen, "%s:%llu: sample count larger than %llu, the most ember counts", name, line,
			 (unsigned long long)EMBER_COUNT_MAX);
		break;
	case F_TOTAL_TOO_LARGE:
		snprintf(err, errlen, "%s:%llu: the sample counts add up to more than %llu, the most a profile "
			 "holds", name, line, (unsigned long long)EMBER_COUNT_MAX);
		break;
	case F_LINE_TOO_LONG:
		snprintf(err, errlen, "%s:%llu: not folded stacks: a line longer than %zu MiB%s", name, line,
			 FOLDED_MAX_LINE >> 20, r->long_line_nul ? " with NUL bytes (binary data)" : "");
		break;
	case F_NO_COUNT_EARLY:
		snprintf(err, errlen, "%s:%llu: not folded stacks (\"frame;frame COUNT\" expected); no line in the "
			 "first %llu MiB had a sample count", name, (unsigned long long)r->w->first_skipped_line,
			 (unsigned long long)(FOLDED_FIRST_COUNT_WITHIN >> 20));
		break;
	case F_BINARY:
		snprintf(err, errlen, "%s: not folded stacks: binary data (%llu of its first %llu bytes are control "
			 "characters)", name, (unsigned long long)r->prefix.control,
			 (unsigned long long)r->prefix.bytes);
		break;
	case F_MOSTLY_UNCOUNTED:
		snprintf(err, errlen, "%s:%llu: not folded stacks (\"frame;frame COUNT\" expected): %llu of its "
			 "first %llu lines have no sample count", name, (unsigned long long)r->w->first_skipped_line,
			 (unsigned long long)r->prefix.uncounted, (unsigned long long)r->prefix.lines);
		break;
	default:
		snprintf(err, errlen, "%s:%llu: out of memory while reading", name, line);
		return EMBER_LOAD_NOMEM;
	}
	return EMBER_LOAD_BADDATA;
}

int ember_read_folded(struct ember_profile *p, struct ember_input *in, int column,
		      struct ember_load_warnings *w, char *err, size_t errlen)
{
	struct ember_load_warnings local;
	struct folded_reader r = { .p = p, .w = w ? w : &local, .column = column };
	int rc;

	w = r.w;
	memset(w, 0, sizeof(*w));
	r.thread = ember_profile_thread(p, 0, 0, "");
	if (r.thread == UINT32_MAX || ember_idtab_init(&r.cache.index) < 0)
		r.fail = F_OOM;
	else
		folded_input(&r, in);
	free(r.cur.ids);
	free(r.cur.ent);
	free(r.prev.ids);
	free(r.prev.ent);
	free(r.cache.e);
	free(r.cache.bytes);
	ember_idtab_free(&r.cache.index);
	if (r.fail)
		return folded_failure(&r, in, err, errlen);
	rc = EMBER_LOAD_BADDATA;
	if (ember_input_consumed(in) == 0)
		snprintf(err, errlen, "%s: empty file, no samples", in->name);
	else if (r.total == 0 && w->skipped && !r.counted)
		snprintf(err, errlen, "%s:%llu: not folded stacks (\"frame;frame COUNT\" expected); "
			 "no line had a sample count", in->name, (unsigned long long)w->first_skipped_line);
	else if (r.total == 0)
		snprintf(err, errlen, "%s: no samples (every count is 0)", in->name);
	else
		rc = EMBER_LOAD_OK;
	if (rc == EMBER_LOAD_OK) {
		p->meta.samples = r.total;
		p->meta.source = ember_profile_cstr(p, "folded");
	}
	return rc;
}
