/* Names for JIT code: the perf map and jitdump files that JIT compilers
 * write for profilers (docs/jit.md has both formats).
 *
 *   perf map   /tmp/perf-PID.map, as the process sees /tmp and its own PID:
 *              text lines "START SIZE NAME" (hex).  oneDNN writes one with
 *              ONEDNN_JIT_PROFILE=2, CPython 3.12+ with -X perf, Node with
 *              --perf-basic-prof, LuaJIT and Java agents too.
 *   jitdump    jit-PID.dump: a binary log of code loads and moves (CPython
 *              3.13 -X perf_jit, Java and V8 agents).  Its writer maps it
 *              executable, which is how the sampler learns its path.
 *
 * A file is read only when it is a regular file owned by the process's user
 * (or root), opened without following a symbolic link and without blocking.
 * Both files are logs that only grow: each read takes what was appended
 * since the last one, so a file can be read while the process runs (new JIT
 * code) and once more at the end.  When several entries cover an address
 * (code freed and replaced), the latest names it.
 *
 * Not thread-safe.  Names are owned by the map and live until it is freed. */
#ifndef EMBER_JIT_MAP_H
#define EMBER_JIT_MAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ember_jit_map;

/* What one process's JIT files may cost, whoever wrote them (the files are
 * the profiled program's, read by a profiler that may run as root):
 *   a name longer than EMBER_JIT_NAME_MAX bytes (in a perf map: a line
 *   longer than that name plus its two numbers) is skipped, in both formats;
 *   a process keeps at most EMBER_JIT_MAX_ENTRIES functions, later ones are
 *   skipped;
 *   a file is read up to EMBER_JIT_FILE_MAX bytes, and no further.
 * Each is counted in the stats (skipped, capped).  Reading is linear in
 * the bytes read, so one read call costs at most a bounded time. */
#define EMBER_JIT_NAME_MAX 4096
#define EMBER_JIT_MAX_ENTRIES (4u << 20)
#define EMBER_JIT_FILE_MAX (256ull << 20)

struct ember_jit_map *ember_jit_map_new(void);
void ember_jit_map_free(struct ember_jit_map *jm);

/* Read what pid's perf map, and its jitdump (jitdump: the path as the
 * process mapped it, or NULL), gained since the last call.  While the
 * process lives its files are reached through /proc/PID/root with the PID
 * it sees itself as; after it exited, as they were then (the perf map of a
 * process in another mount namespace through its /tmp, held open), or in
 * ember's own mount namespace when it was never seen alive. */
void ember_jit_map_read(struct ember_jit_map *jm, pid_t pid, const char *jitdump);

/* ember_jit_map_read again (the jitdump: the one given before), unless
 * pid's files were read less than 10 ms ago: for a lookup that missed while
 * the process runs (new code whose line or record came after the last
 * read).  jitdump NULL in ember_jit_map_read means the one given before. */
void ember_jit_map_refresh(struct ember_jit_map *jm, pid_t pid);

/* The name of the JIT function at addr in process pid, or NULL; *start
 * (when not NULL) is where that function starts. */
const char *ember_jit_map_lookup(struct ember_jit_map *jm, pid_t pid, uint64_t addr, uint64_t *start);

/* Delete pid's perf map file, if ember read it (it is then a regular file
 * of the process's user).  For the files ember made the process write.
 * A process in another mount namespace (a chroot, a container) keeps its
 * /tmp reachable through a descriptor ember opened while it lived, also
 * after it exited.  Returns true when a file was deleted. */
bool ember_jit_map_remove_perf_map(struct ember_jit_map *jm, pid_t pid);

struct ember_jit_map_stats {
	uint32_t files;          /* perf maps and jitdumps read */
	uint64_t entries;        /* JIT functions named */
	uint32_t refused;        /* files not read: not regular, wrong owner, a symlink */
	uint64_t skipped;        /* functions not kept: name too long, or over EMBER_JIT_MAX_ENTRIES */
	uint32_t capped;         /* files read only up to EMBER_JIT_FILE_MAX */
	char refused_path[256];  /* the first of them, as ember tried to open it */
};
void ember_jit_map_get_stats(const struct ember_jit_map *jm, struct ember_jit_map_stats *st);

#endif
