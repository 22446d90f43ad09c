/* LEB128 varints (7 bits a byte, low group first, high bit = more) and
 * the zigzag mapping of signed to unsigned (0, -1, 1, -2 ... to 0, 1, 2,
 * 3 ...), as the .ember format and record/'s timeline store integers.
 * Header-only: both sit in per-item loops. */
#ifndef EMBER_COMMON_VARINT_H
#define EMBER_COMMON_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define EMBER_VARINT_MAX 10   /* bytes of the largest 64-bit value */

/* Write v to out (room for EMBER_VARINT_MAX bytes); returns the length. */
static inline size_t ember_varint_put(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

/* Read one varint of at most len bytes from p into *v; returns the bytes
 * it took, or 0 when p ends inside it or it runs past 64 bits. */
static inline size_t ember_varint_get(const uint8_t *p, size_t len, uint64_t *v)
{
	uint64_t x = 0;

	for (size_t i = 0; i < len && i < EMBER_VARINT_MAX; i++) {
		x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			*v = x;
			return i + 1;
		}
	}
	return 0;
}

static inline uint64_t ember_zigzag(int64_t d)
{
	return ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
}

static inline int64_t ember_unzigzag(uint64_t z)
{
	return (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
}

#endif
