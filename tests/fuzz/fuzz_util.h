/* What the harnesses share: the fuzzer's bytes as a file that the code
 * under test opens by path (the readers take paths), and a failed
 * invariant reported as a crash libFuzzer keeps the input of. */
#ifndef EMBER_FUZZ_UTIL_H
#define EMBER_FUZZ_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* An anonymous in-memory file holding data[0..size), reachable by the path
 * written to path ("/proc/self/fd/N"): no disk, nothing left behind.  Its
 * fd (close it when done), or -1. */
static inline int fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t pathlen)
{
	int fd = memfd_create("ember-fuzz", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	for (size_t off = 0; off < size;) {
		ssize_t n = write(fd, data + off, size - off);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)n;
	}
	snprintf(path, pathlen, "/proc/self/fd/%d", fd);
	return fd;
}

/* A property the code under test promises did not hold: abort, so that
 * libFuzzer saves the input as a crash. */
#define FUZZ_ASSERT(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

#endif
