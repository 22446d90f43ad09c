/* The bytes of one input file, read exactly once: a regular file is mapped
 * whole; anything else (a pipe, standard input, a FIFO, /dev/fd/N, a
 * device) is read into a window that holds what the reader has not yet
 * consumed.  The format is told from the first bytes already read, so an
 * input is never opened twice.  Private to profile/. */
#ifndef EMBER_PROFILE_INPUT_H
#define EMBER_PROFILE_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"

struct ember_input {
	int fd;
	const char *name;      /* what messages call the input */
	const uint8_t *data;   /* bytes data[pos..len) are read and not yet consumed */
	size_t pos, len;
	uint64_t offset;       /* bytes of the input before data[0] */
	bool mapped;           /* data is the whole file, mapped */
	bool eof;              /* nothing more will come: data[len] is the end */
	int read_errno;        /* set when a read failed */
	uint8_t *buf;          /* the window, when not mapped */
	size_t cap;
};

/* Start reading fd (not closed by ember_input_end), calling it name.
 * 0, or -1 with a message in err. */
int ember_input_begin(struct ember_input *in, int fd, const char *name, char *err, size_t errlen);
void ember_input_end(struct ember_input *in);

/* Make at least want unread bytes available (fewer only at the end of the
 * input or on a read error), moving the unread bytes to the front of the
 * window when it must grow.  Pointers into data are void after a call that
 * read.  Returns the unread bytes available, or -1 on a read error
 * (in->read_errno) or when the window cannot hold want bytes (OOM). */
long long ember_input_fill(struct ember_input *in, size_t want);

/* Bytes of the input consumed so far. */
static inline uint64_t ember_input_consumed(const struct ember_input *in)
{
	return in->offset + in->pos;
}

/* A gzip stream starts with these two bytes (RFC 1952). */
static inline bool ember_input_is_gzip(const uint8_t *d, size_t n)
{
	return n >= 2 && d[0] == 0x1f && d[1] == 0x8b;
}

#endif
