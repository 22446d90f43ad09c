/* What fuzz.perf_map and fuzz.jitdump share: symbolizer/jit_map.c on the
 * input as a perf map or as a jitdump, read whole by one map and in two
 * pieces (the file growing between reads, as a running JIT writes it) by
 * another; both must name every address alike.  The reader opens files
 * with O_NOFOLLOW and by owner, so the input is a real file in /tmp (a
 * memfd's /proc/self/fd path is a link), under a pid no process can have. */
#ifndef EMBER_FUZZ_JIT_H
#define EMBER_FUZZ_JIT_H

#include "fuzz_util.h"   /* first: it defines _GNU_SOURCE */

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>

#include "jit_map.h"

/* PIDs over the kernel's PID_MAX_LIMIT: one for each harness, as the
 * reader looks for a perf map of the jitdump harness's pid too, and the
 * two may run side by side (ctest -j) */
#define FUZZ_PERF_MAP_PID 4999999
#define FUZZ_JITDUMP_PID 4999998

static inline void fuzz_jit_write(const char *path, const uint8_t *data, size_t size, bool append)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0600);
	FUZZ_ASSERT(fd >= 0);
	for (size_t off = 0; off < size;) {
		ssize_t n = write(fd, data + off, size - off);
		FUZZ_ASSERT(n > 0);
		off += (size_t)n;
	}
	close(fd);
}

/* The addresses looked up: every 8 bytes of the input as a number, and
 * each just past it, so that a start read from the input is hit. */
static inline void fuzz_jit_compare(struct ember_jit_map *a, struct ember_jit_map *b, pid_t pid,
				    const uint8_t *data, size_t size)
{
	for (size_t off = 0; off + 8 <= size && off < 64 * 8; off += 8) {
		uint64_t addr;
		memcpy(&addr, data + off, 8);
		for (uint64_t at = addr; at <= addr + 1 && at >= addr; at++) {
			uint64_t sa = 0, sb = 0;
			const char *na = ember_jit_map_lookup(a, pid, at, &sa);
			const char *nb = ember_jit_map_lookup(b, pid, at, &sb);
			FUZZ_ASSERT((na == NULL) == (nb == NULL));
			if (na) {
				FUZZ_ASSERT(strcmp(na, nb) == 0 && sa == sb && sa <= at);
				FUZZ_ASSERT(strlen(na) <= EMBER_JIT_NAME_MAX);
			}
		}
	}
	struct ember_jit_map_stats sa, sb;
	ember_jit_map_get_stats(a, &sa);
	ember_jit_map_get_stats(b, &sb);
	FUZZ_ASSERT(sa.entries == sb.entries && sa.skipped == sb.skipped);
}

/* The input as the file at path, for process pid: jitdump is the path to
 * give the reader for a jitdump, NULL for a perf map (read from
 * /tmp/perf-PID.map). The
 * first byte says where the file is cut for the reader that reads it in
 * two pieces. */
static inline void fuzz_jit_run(pid_t pid, const char *path, const char *jitdump, const uint8_t *data,
				size_t size)
{
	if (!size)
		return;
	size_t cut = size > 1 ? (size_t)data[0] * (size - 1) / 255 : 0;
	data++, size--;
	if (cut > size)
		cut = size;
	struct ember_jit_map *whole = ember_jit_map_new(), *pieces = ember_jit_map_new();
	FUZZ_ASSERT(whole && pieces);
	fuzz_jit_write(path, data, size, false);
	ember_jit_map_read(whole, pid, jitdump);
	fuzz_jit_write(path, data, cut, false);
	ember_jit_map_read(pieces, pid, jitdump);
	fuzz_jit_write(path, data + cut, size - cut, true);
	ember_jit_map_read(pieces, pid, jitdump);
	fuzz_jit_compare(whole, pieces, pid, data, size);
	ember_jit_map_free(whole);
	ember_jit_map_free(pieces);
	unlink(path);
}

#endif
