/* UTF-8 decoding, as the writers need it: every input byte accounted for,
 * ill-formed sequences read as U+FFFD.  Header-only. */
#ifndef EMBER_COMMON_UTF8_H
#define EMBER_COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decode one UTF-8 character of s[0..n), n >= 1.  An ill-formed sequence
 * yields U+FFFD for its longest valid prefix (at least one byte), as
 * Unicode recommends, so no input byte is lost or read past n. */
static inline size_t ember_utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t len, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, *cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, *cp = c & 0x0f, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, *cp = c & 0x07, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else {
		*cp = 0xfffd;
		return 1;
	}
	for (i = 1; i < len; i++) {
		if (i >= n || s[i] < lo || s[i] > hi) {
			*cp = 0xfffd;
			return i;
		}
		*cp = *cp << 6 | (s[i] & 0x3f);
		lo = 0x80, hi = 0xbf;
	}
	return len;
}

#endif
