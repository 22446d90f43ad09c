/* Protocol buffers by hand and a gzip stream through zlib, for the pprof
 * writer (pprof.c).  Private to exporters/; static functions because pprof.c
 * is the only user and they are small and hot. */
#ifndef EMBER_PPROF_WIRE_H
#define EMBER_PPROF_WIRE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "grow.h"

/* ---- protobuf encoding ---- */

enum { WT_VARINT = 0, WT_LEN = 2 };

struct pb {
	unsigned char *b;
	size_t len, cap;
	bool oom;
};

static inline bool pb_reserve(struct pb *m, size_t n)
{
	if (m->oom || ember_grow((void **)&m->b, &m->cap, 1, m->len + n) < 0)
		return !(m->oom = true);
	return true;
}

static inline void pb_raw(struct pb *m, const void *s, size_t n)
{
	if (n && pb_reserve(m, n)) {
		memcpy(m->b + m->len, s, n);
		m->len += n;
	}
}

static inline size_t varint_to(unsigned char *buf, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		buf[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	buf[n++] = (unsigned char)v;
	return n;
}

static inline void pb_varint(struct pb *m, uint64_t v)
{
	if (pb_reserve(m, 10))
		m->len += varint_to(m->b + m->len, v);
}

static inline void pb_key(struct pb *m, uint32_t field, uint32_t wire)
{
	pb_varint(m, (uint64_t)field << 3 | wire);
}

/* A scalar field; proto3 leaves zero values out. */
static inline void pb_uint(struct pb *m, uint32_t field, uint64_t v)
{
	if (v) {
		pb_key(m, field, WT_VARINT);
		pb_varint(m, v);
	}
}

static inline void pb_bytes(struct pb *m, uint32_t field, const void *s, size_t n)
{
	pb_key(m, field, WT_LEN);
	pb_varint(m, n);
	pb_raw(m, s, n);
}

static inline void pb_msg(struct pb *m, uint32_t field, const struct pb *sub)
{
	if (sub->oom)
		m->oom = true;
	pb_bytes(m, field, sub->b, sub->len);
}

/* A packed repeated varint field; nothing when n is 0. */
static inline void pb_packed(struct pb *m, uint32_t field, const uint64_t *v, size_t n)
{
	unsigned char tmp[10];
	size_t len = 0;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		len += varint_to(tmp, v[i]);
	pb_key(m, field, WT_LEN);
	pb_varint(m, len);
	if (pb_reserve(m, len))
		for (size_t i = 0; i < n; i++)
			m->len += varint_to(m->b + m->len, v[i]);
}

/* ---- gzip stream ---- */

struct gz {
	z_stream zs;
	FILE *out;
	unsigned char buf[1 << 16];
	int err;               /* errno of the first failure, 0 */
};

static inline void gz_run(struct gz *g, int flush)
{
	int rc;

	do {
		g->zs.next_out = g->buf;
		g->zs.avail_out = sizeof(g->buf);
		rc = deflate(&g->zs, flush);
		if (rc == Z_STREAM_ERROR) {
			g->err = EIO;
			return;
		}
		size_t n = sizeof(g->buf) - g->zs.avail_out;
		errno = 0;
		if (n && fwrite(g->buf, 1, n, g->out) != n && !g->err)
			g->err = errno ? errno : EIO;
	} while (g->zs.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
}

static inline void gz_write(struct gz *g, const void *s, size_t n)
{
	const unsigned char *p = s;

	while (n && !g->err) {
		uInt chunk = n > (1u << 30) ? 1u << 30 : (uInt)n;
		g->zs.next_in = (Bytef *)p;
		g->zs.avail_in = chunk;
		gz_run(g, Z_NO_FLUSH);
		p += chunk;
		n -= chunk;
	}
}

/* One top-level field of the Profile: tag, length, the submessage. */
static inline void gz_field(struct gz *g, uint32_t field, const struct pb *sub)
{
	unsigned char head[20];
	size_t n = varint_to(head, (uint64_t)field << 3 | WT_LEN);

	if (sub->oom) {
		if (!g->err)
			g->err = ENOMEM;
		return;
	}
	n += varint_to(head + n, sub->len);
	gz_write(g, head, n);
	gz_write(g, sub->b, sub->len);
}

static inline void gz_scalar(struct gz *g, uint32_t field, uint64_t v)
{
	unsigned char head[20];
	size_t n;

	if (!v)
		return;
	n = varint_to(head, (uint64_t)field << 3 | WT_VARINT);
	n += varint_to(head + n, v);
	gz_write(g, head, n);
}

#endif
