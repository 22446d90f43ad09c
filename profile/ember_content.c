/* The content of an .ember file, decompressed as it is parsed
 * (ember_content.h): a window at a time, with the gzip layer's damage, a
 * truncated stream, a read error and a gzip bomb told apart. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember_content.h"
#include "profile.h"

/* Inflated bytes are handed to the parser through a window of this size. */
#define CONTENT_WINDOW ((size_t)64 << 10)
/* A gzip bomb: content past BOMB_FLOOR bytes that has grown to more than
 * BOMB_RATIO times the compressed bytes it came from.  Junk (zeros after
 * the header, bytes after a section's items or after the end marker) is
 * refused where it starts; this bounds content that parses.  Recordings
 * compress 1.2 to 2 times; only stacks of thousands of frames of one
 * recursive function come near: about 90 times at 1,000 frames deep, 200
 * at 3,000.  deflate's limit is 1032. */
#define BOMB_FLOOR ((uint64_t)64 << 20)
#define BOMB_RATIO 250
/* Content read past a parse error to reach the gzip trailer. */
#define DRAIN_MAX ((uint64_t)64 << 20)

int ember_content_begin(struct ember_content *c, struct ember_input *in, bool gzip)
{
	*c = (struct ember_content){ .in = in, .gzip = gzip, .win = malloc(CONTENT_WINDOW) };
	/* 16 + the largest window: gzip only, its CRC and length checked */
	if (c->win && (!gzip || inflateInit2(&c->z, 16 + MAX_WBITS) == Z_OK))
		return 0;
	free(c->win);
	c->win = NULL;
	return -1;
}

void ember_content_end(struct ember_content *c)
{
	if (c->gzip && c->win)
		inflateEnd(&c->z);
	free(c->win);
	c->win = NULL;
}

void ember_content_drain(struct ember_content *c)
{
	uint64_t stop = c->total + DRAIN_MAX;

	while (c->total < stop && ember_content_fill(c))
		;
}

/* Feed the compressed bytes at hand to zlib: some content, or a state. */
static void content_inflate(struct ember_content *c, size_t avail)
{
	struct ember_input *in = c->in;

	c->z.next_in = (Bytef *)(in->data + in->pos);
	c->z.avail_in = avail > UINT32_MAX ? UINT32_MAX : (uInt)avail;
	c->z.next_out = c->win;
	c->z.avail_out = (uInt)CONTENT_WINDOW;
	uInt before = c->z.avail_in;
	int ret = inflate(&c->z, Z_NO_FLUSH);
	in->pos += before - c->z.avail_in;
	c->wlen = CONTENT_WINDOW - c->z.avail_out;
	if (ret == Z_STREAM_END) {
		c->member_end = true;
	} else if (ret == Z_MEM_ERROR) {
		c->state = C_OOM;
	} else if (ret != Z_OK && ret != Z_BUF_ERROR) {
		const char *m = c->z.msg ? c->z.msg : "invalid data";
		if (!strcmp(m, "incorrect data check"))
			m = "CRC mismatch";
		else if (!strcmp(m, "incorrect length check"))
			m = "length mismatch";
		snprintf(c->zmsg, sizeof c->zmsg, "%s", m);
		c->state = C_GZIP_ERROR;
	}
}

bool ember_content_fill(struct ember_content *c)
{
	struct ember_input *in = c->in;

	c->wpos = c->wlen = 0;
	while (c->state == C_OK && c->wlen == 0) {
		long long avail = ember_input_fill(in, c->member_end ? 2 : 1);
		if (avail < 0) {
			c->state = in->read_errno == ENOMEM ? C_OOM : C_READ_ERROR;
		} else if (!c->gzip) {
			c->wlen = (size_t)avail < CONTENT_WINDOW ? (size_t)avail : CONTENT_WINDOW;
			memcpy(c->win, in->data + in->pos, c->wlen);
			in->pos += c->wlen;
			if (!avail)
				c->state = C_END;
		} else if (c->member_end && !ember_input_is_gzip(in->data + in->pos, (size_t)avail)) {
			/* As gzip reads it: what follows the last member is ignored. */
			c->state = C_END;
		} else if (avail == 0) {
			c->state = C_TRUNCATED;
		} else {
			if (c->member_end && inflateReset(&c->z) == Z_OK)
				c->member_end = false;   /* a further member continues the content */
			content_inflate(c, (size_t)avail);
		}
	}
	c->total += c->wlen;
	if (c->gzip && c->total > BOMB_FLOOR && c->total / BOMB_RATIO > ember_input_consumed(in)) {
		c->state = C_BOMB;
		c->wlen = 0;
	}
	return c->wlen > 0;
}

int ember_content_byte(struct ember_content *c)
{
	if (c->wpos == c->wlen && !ember_content_fill(c))
		return -1;
	return c->win[c->wpos++];
}

uint64_t ember_content_read(struct ember_content *c, uint8_t *dst, uint64_t n)
{
	uint64_t done = 0;

	while (done < n && (c->wpos < c->wlen || ember_content_fill(c))) {
		size_t k = c->wlen - c->wpos;
		if (k > n - done)
			k = (size_t)(n - done);
		if (dst)
			memcpy(dst + done, c->win + c->wpos, k);
		c->wpos += k;
		done += k;
	}
	return done;
}

bool ember_content_u(struct ember_content *c, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		int b = ember_content_byte(c);
		if (b < 0)
			return false;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

int ember_content_error(const struct ember_content *c, bool recognised, char *err, size_t errlen)
{
	const char *name = c->in->name;

	switch (c->state) {
	case C_READ_ERROR:
		snprintf(err, errlen, "%s: %s", name, strerror(c->in->read_errno));
		return EMBER_LOAD_NOINPUT;
	case C_TRUNCATED:
		snprintf(err, errlen, "%s: truncated %s: the compressed data ends early (after %llu bytes)", name,
			 recognised ? ".ember file" : "gzip data", (unsigned long long)ember_input_consumed(c->in));
		break;
	case C_GZIP_ERROR:
		snprintf(err, errlen, recognised ? "%s: corrupt .ember (gzip: %s)" : "%s: corrupt gzip data (%s)", name,
			 c->zmsg);
		break;
	case C_BOMB:
		snprintf(err, errlen, "%s: corrupt .ember: past %llu MiB it decompresses to more than %d times its "
			 "compressed size (a gzip bomb?)", name, (unsigned long long)(BOMB_FLOOR >> 20), BOMB_RATIO);
		break;
	default:
		snprintf(err, errlen, "%s: out of memory while reading", name);
		return EMBER_LOAD_NOMEM;
	}
	return EMBER_LOAD_BADDATA;
}
