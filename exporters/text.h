/* Growing text buffers, and the one sanitising several writers share
 * (pstats keys, pprof strings): valid UTF-8 with control characters as
 * spaces.  Private to exporters/. */
#ifndef EMBER_EXPORTERS_TEXT_H
#define EMBER_EXPORTERS_TEXT_H

#include <stddef.h>
#include <string.h>

/* A growing NUL-terminated text (s is NULL until something is put). */
struct text_buf {
	char *s;
	size_t len, cap;
};

/* Append s[0..n) to b: 0, or -1 on OOM. */
int tb_put(struct text_buf *b, const void *s, size_t n);
#define tb_puts(b, s) tb_put((b), (s), strlen(s))

/* Append s[0..n) as valid UTF-8 (an ill-formed sequence as U+FFFD) with C0,
 * DEL and C1 controls as ' ', so that text reports keep one line per entry.
 * 0, or -1 on OOM. */
int tb_put_clean(struct text_buf *b, const char *s, size_t n);

#endif
