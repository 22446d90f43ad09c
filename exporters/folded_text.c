/* The text of a frame as folded stacks print it (folded_text.h): what
 * flamegraph.pl, inferno, speedscope and gprof2dot all read alike.
 * docs/consumers.md §1 has what each of them accepts; the sanitising here
 * follows its §1.5. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded_text.h"
#include "utf8.h"

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

int folded_frame_text(struct text_buf *b, const struct ember_frame *f)
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

int folded_thread_text(struct text_buf *b, const struct ember_thread *t)
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
	if (folded_frame_text(&b, f) < 0) {
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
