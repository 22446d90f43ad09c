/* The content of an .ember file (ember_file.h) as its reader parses it:
 * decompressed from the gzip layer a window at a time as it is consumed
 * (or, for a file decompressed by hand, copied), with memory bounded by the
 * window, and every way the layer below can fail kept as a state the reader
 * turns into one line: the gzip layer's damage (zlib's word on it, a CRC or
 * length mismatch), a truncated stream, a read error, a gzip bomb.  Private
 * to profile/ (ember_file_read.c). */
#ifndef EMBER_CONTENT_H
#define EMBER_CONTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "input.h"

enum content_state {
	C_OK,                  /* more content may come */
	C_END,                 /* the content ended cleanly */
	C_TRUNCATED,           /* the compressed data ends early */
	C_GZIP_ERROR,          /* the gzip layer is damaged (ember_content.zmsg) */
	C_READ_ERROR,          /* reading the input failed (its read_errno) */
	C_BOMB,                /* content grows far faster than its compressed bytes */
	C_OOM,
};

struct ember_content {
	struct ember_input *in;
	bool gzip, member_end;
	z_stream z;
	uint8_t *win;          /* content bytes win[wpos..wlen) not yet parsed */
	size_t wpos, wlen;
	uint64_t total;        /* content bytes decompressed so far */
	enum content_state state;
	char zmsg[96];         /* zlib's word on a C_GZIP_ERROR */
};

/* Start on the content of in from its first unread byte: gzip-compressed,
 * or (gzip false) the content itself.  0, or -1 on OOM (nothing to end). */
int ember_content_begin(struct ember_content *c, struct ember_input *in, bool gzip);
void ember_content_end(struct ember_content *c);

/* Offset within the content of the next byte to parse. */
static inline uint64_t ember_content_pos(const struct ember_content *c)
{
	return c->total - (c->wlen - c->wpos);
}

/* The next window of content: true, or false with c->state saying why not
 * (C_END: the content ended cleanly). */
bool ember_content_fill(struct ember_content *c);
/* The next byte, or -1 (c->state says why). */
int ember_content_byte(struct ember_content *c);
/* Up to n bytes of content into dst (skipped when dst is NULL): how many
 * there were. */
uint64_t ember_content_read(struct ember_content *c, uint8_t *dst, uint64_t n);
/* A uvarint of the content: true, or false at its end, on an error, or
 * when it is longer than 64 bits (c->state then C_OK). */
bool ember_content_u(struct ember_content *c, uint64_t *v);
/* After a parse error: read on to the end of the content, so far as a
 * bound, so that damage of the gzip layer (a flipped compressed byte shows
 * only in the CRC at the end) is what the message names. */
void ember_content_drain(struct ember_content *c);

/* One line for content that stopped (c->state not C_OK or C_END): the gzip
 * layer's fault, the input's, or memory.  recognised: the .ember magic was
 * seen.  Returns the load status (enum ember_load_status). */
int ember_content_error(const struct ember_content *c, bool recognised, char *err, size_t errlen);

#endif
