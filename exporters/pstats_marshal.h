/* The subset of Python's marshal format the pstats writer (pstats.c) uses:
 * ints ('i', or 'l' past int32), binary floats ('g') and tuple headers,
 * little-endian whatever the host (docs/consumers.md §3.2).  Private to
 * exporters/; static functions because pstats.c is the only user. */
#ifndef EMBER_PSTATS_MARSHAL_H
#define EMBER_PSTATS_MARSHAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static inline void marshal_le32(unsigned char *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

/* 'i' int32, or 'l' (base 2^15 digits) above INT32_MAX, into b (16 bytes);
 * returns the length. */
static inline size_t marshal_int(unsigned char *b, uint64_t v)
{
	if (v <= INT32_MAX) {
		b[0] = 'i';
		marshal_le32(b + 1, (uint32_t)v);
		return 5;
	}
	uint32_t nd = 0;
	size_t at = 5;
	b[0] = 'l';
	for (; v; v >>= 15, nd++) {
		b[at++] = (unsigned char)(v & 0xff);
		b[at++] = (unsigned char)((v >> 8) & 0x7f);
	}
	marshal_le32(b + 1, nd);
	return at;
}

/* 'g': an IEEE-754 double, into b (9 bytes); returns the length. */
static inline size_t marshal_float(unsigned char *b, double d)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof(bits));
	b[0] = 'g';
	for (int i = 0; i < 8; i++)
		b[1 + i] = (unsigned char)(bits >> (8 * i));
	return 9;
}

/* Write (cc, nc, tt, ct) -- or for callers (nc, cc, tt, ct), the same numbers
 * since cc = nc -- as a tuple of n items whose first four these are (the
 * caller writes the rest). */
static inline void marshal_counts(FILE *out, uint32_t n, uint64_t calls, double tt, double ct)
{
	unsigned char b[64];
	size_t at = 5;

	b[0] = '(';
	marshal_le32(b + 1, n);
	at += marshal_int(b + at, calls);
	at += marshal_int(b + at, calls);
	at += marshal_float(b + at, tt);
	at += marshal_float(b + at, ct);
	fwrite_unlocked(b, 1, at, out);
}

#endif
