/* Perf maps and jitdump files: names for JIT code (jit_map.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "hash.h"
#include "idtab.h"
#include "jit_map.h"
#include "proc.h"
#include "grow.h"
#include "strtab.h"
#include "sorted.h"

#define JITDUMP_MAGIC 0x4a695444u      /* "JiTD" as a native 32-bit word */
#define JITDUMP_HEADER 40
#define JIT_CODE_LOAD 0
#define JIT_CODE_MOVE 1
#define RECORD_MAX (64u << 20)          /* a longer jitdump record is damage */
#define CHUNK (1u << 20)
#define LINE_MAX (EMBER_JIT_NAME_MAX + 64)   /* a perf map line: two hex numbers and a name */

struct jit_file {
	char path[4200];       /* as ember opened it last */
	uint64_t offset;       /* bytes taken so far */
	dev_t dev;
	ino_t ino;
	bool read;             /* opened and read at least once */
	bool broken;           /* a jitdump that is not one: never read again */
	bool refused;          /* refused once (counted once) */
	bool skipping;         /* a perf map: inside a line too long to keep, up to its newline */
	bool capped;           /* read up to EMBER_JIT_FILE_MAX: never read again */
};

struct jit_entry {
	uint64_t start, end;
	const char *name;      /* interned */
	uint64_t seq;          /* order of appearance: the latest entry wins */
};

/* A jitdump's code, by the index its loads and moves share. */
struct jit_code {
	uint64_t index;
	const char *name;
};

struct jit_proc {
	pid_t pid, nspid;      /* nspid: the PID the process sees itself as */
	uid_t uid;             /* its user: whose files are trusted */
	bool known;            /* pid, uid and root were read from /proc while it lived */
	bool own_ns;           /* in ember's mount namespace: paths work as they are */
	int tmp_fd;            /* !own_ns: its /tmp (O_PATH), opened while it lived, or -1: the perf map
	                        * stays reachable after the process, and its mounts, are gone */
	struct jit_file map, dump;
	char *dump_in_proc;    /* the jitdump's path as the process sees it, once known */
	uint64_t read_ns;      /* CLOCK_MONOTONIC of the last read */
	struct jit_entry *e;
	size_t n, cap;
	bool sorted;
	uint64_t max_len, seq;
	struct jit_code *code;
	size_t ncode, code_cap;
	struct ember_idtab by_index;   /* ids into code[] by index */
	bool indexed;          /* by_index initialised */
};

struct ember_jit_map {
	struct jit_proc *procs;
	size_t nprocs, cap;
	struct ember_strtab *names;
	struct ember_jit_map_stats st;
};

struct ember_jit_map *ember_jit_map_new(void)
{
	struct ember_jit_map *jm = calloc(1, sizeof *jm);
	if (jm && !(jm->names = ember_strtab_new())) {
		free(jm);
		return NULL;
	}
	return jm;
}

void ember_jit_map_free(struct ember_jit_map *jm)
{
	if (!jm)
		return;
	for (size_t i = 0; i < jm->nprocs; i++) {
		free(jm->procs[i].e);
		free(jm->procs[i].code);
		if (jm->procs[i].indexed)
			ember_idtab_free(&jm->procs[i].by_index);
		free(jm->procs[i].dump_in_proc);
		if (jm->procs[i].tmp_fd >= 0)
			close(jm->procs[i].tmp_fd);
	}
	free(jm->procs);
	ember_strtab_free(jm->names);
	free(jm);
}

static struct jit_proc *proc_get(struct ember_jit_map *jm, pid_t pid, bool create)
{
	for (size_t i = 0; i < jm->nprocs; i++)
		if (jm->procs[i].pid == pid)
			return &jm->procs[i];
	if (!create)
		return NULL;
	if (EMBER_GROW(jm->procs, jm->cap, jm->nprocs + 1) < 0)
		return NULL;
	struct jit_proc *p = &jm->procs[jm->nprocs++];
	*p = (struct jit_proc){ .pid = pid, .nspid = pid, .uid = geteuid(), .own_ns = true, .tmp_fd = -1 };
	return p;
}

/* While the process lives: its user, the PID it sees (the last NSpid
 * field), and whether it shares ember's mount namespace. */
static void learn_process(struct jit_proc *p)
{
	char path[64], nspid[256], ns[64], self_ns[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d", p->pid);
	if (p->known || stat(path, &st) != 0)
		return;
	p->uid = st.st_uid;
	if (ember_proc_status(p->pid, "NSpid", nspid, sizeof nspid)) {
		const char *last = strrchr(nspid, '\t');
		last = last ? last + 1 : nspid;
		if (atoi(last) > 0)
			p->nspid = atoi(last);
	}
	ssize_t a = ember_proc_link(p->pid, "ns/mnt", ns, sizeof ns), b = ember_proc_link(0, "ns/mnt", self_ns, sizeof self_ns);
	p->own_ns = a <= 0 || b <= 0 || strcmp(ns, self_ns) == 0;
	if (!p->own_ns) {
		snprintf(path, sizeof path, "/proc/%d/root/tmp", p->pid);
		p->tmp_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	p->known = true;
}

/* Where p's perf map (jf: p->map) is reached: through its /tmp when that is
 * held open (*name: the file's name in it), else by jf->path (AT_FDCWD). */
static int file_dir(const struct jit_proc *p, const struct jit_file *jf, const char **name)
{
	if (jf == &p->map && p->tmp_fd >= 0) {
		*name = strrchr(jf->path, '/') + 1;
		return p->tmp_fd;
	}
	*name = jf->path;
	return AT_FDCWD;
}

/* Open a file of p's as ember reaches it, if it may be trusted; -1 when it
 * is missing or refused (counted). */
static int open_trusted(struct ember_jit_map *jm, struct jit_proc *p, struct jit_file *jf, const char *in_proc)
{
	if (p->own_ns || !p->known)
		snprintf(jf->path, sizeof jf->path, "%s", in_proc);
	else
		snprintf(jf->path, sizeof jf->path, "/proc/%d/root%s", p->pid, in_proc);
	const char *name;
	int dir = file_dir(p, jf, &name);
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	bool refused = fd < 0 && errno == ELOOP;
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_uid != p->uid && st.st_uid != 0))) {
		close(fd);
		fd = -1;
		refused = true;
	}
	if (refused) {
		if (!jf->refused && !jm->st.refused++)
			snprintf(jm->st.refused_path, sizeof jm->st.refused_path, "%.255s", jf->path);
		jf->refused = true;
		return -1;
	}
	if (fd < 0)
		return -1;
	if (jf->read && (st.st_dev != jf->dev || st.st_ino != jf->ino || (uint64_t)st.st_size < jf->offset))
		jf->offset = 0;    /* another file by that name, or it was cut: from the start */
	if (!jf->read)
		jm->st.files++;
	jf->dev = st.st_dev;
	jf->ino = st.st_ino;
	jf->read = true;
	return fd;
}

/* Name [start, start + len) in p; the interned name, NULL when it is not
 * kept (empty, a name over EMBER_JIT_NAME_MAX or the process at
 * EMBER_JIT_MAX_ENTRIES: counted as skipped; or out of memory). */
static const char *add_entry(struct ember_jit_map *jm, struct jit_proc *p, uint64_t start, uint64_t len,
			     const char *name, size_t name_len)
{
	if (!len || start + len < start)
		return NULL;
	if (name_len > EMBER_JIT_NAME_MAX || p->n >= EMBER_JIT_MAX_ENTRIES) {
		jm->st.skipped++;
		return NULL;
	}
	const char *s = ember_strtab_intern(jm->names, name, name_len);
	if (!s || EMBER_GROW(p->e, p->cap, p->n + 1) < 0)
		return NULL;
	p->e[p->n++] = (struct jit_entry){ .start = start, .end = start + len, .name = s, .seq = p->seq++ };
	if (len > p->max_len)
		p->max_len = len;
	p->sorted = false;
	jm->st.entries++;
	return s;
}

/* Read fd from jf->offset to its end, handing complete pieces to take:
 * take(buf, n) returns how many bytes it consumed (the rest waits for the
 * next read), or -1 when the file is no longer to be trusted. */
typedef long (*take_fn)(struct ember_jit_map *jm, struct jit_proc *p, const char *buf, size_t n);

static void read_from(struct ember_jit_map *jm, struct jit_proc *p, struct jit_file *jf, int fd, take_fn take)
{
	char *buf = NULL;
	size_t have = 0, cap = 0;
	for (;;) {
		/* take() leaves at most one piece unconsumed (a line under
		 * LINE_MAX, a record under RECORD_MAX): buf stays that plus a
		 * chunk, and each byte is looked at a bounded number of times. */
		if (ember_grow((void **)&buf, &cap, 1, have + CHUNK) < 0)
			break;
		uint64_t at = jf->offset + have;
		if (at >= EMBER_JIT_FILE_MAX) {
			jf->capped = true;
			jm->st.capped++;
			break;
		}
		size_t want = cap - have;
		if (want > EMBER_JIT_FILE_MAX - at)
			want = (size_t)(EMBER_JIT_FILE_MAX - at);
		ssize_t got = pread(fd, buf + have, want, (off_t)at);
		if (got <= 0)
			break;
		have += (size_t)got;
		long used = take(jm, p, buf, have);
		if (used < 0) {
			jf->broken = true;
			break;
		}
		memmove(buf, buf + used, have - (size_t)used);
		have -= (size_t)used;
		jf->offset += (uint64_t)used;
	}
	free(buf);
}

/* Perf map lines: "START SIZE NAME", hex numbers, the name to the end. */
static long take_perf_map(struct ember_jit_map *jm, struct jit_proc *p, const char *buf, size_t n)
{
	size_t done = 0;
	for (;;) {
		const char *nl = memchr(buf + done, '\n', n - done);
		if (!nl) {
			if (n - done < LINE_MAX)
				return (long)done;   /* the rest of the line comes with the next read */
			/* A line that long is not kept: passed over up to its newline. */
			if (!p->map.skipping)
				jm->st.skipped++;
			p->map.skipping = true;
			return (long)n;
		}
		char line[LINE_MAX];
		size_t len = (size_t)(nl - (buf + done));
		if (p->map.skipping) {
			p->map.skipping = false;
		} else if (len >= sizeof line) {
			jm->st.skipped++;
		} else {
			memcpy(line, buf + done, len);
			line[len] = 0;
			unsigned long long start, size;
			int at = 0;
			if (sscanf(line, "%llx %llx %n", &start, &size, &at) == 2 && at > 0 && line[at])
				add_entry(jm, p, start, size, line + at, len - (size_t)at);
		}
		done = (size_t)(nl - buf) + 1;
	}
}

static bool code_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct jit_code *)ctx)[id].index == *(const uint64_t *)key;
}

/* The name of the code a jitdump loaded under index, NULL if none. */
static const char *code_name(const struct jit_proc *p, uint64_t index)
{
	if (!p->indexed)
		return NULL;
	uint32_t id = ember_idtab_find(&p->by_index, ember_hash_pair(index, 0), code_eq, p->code, &index);
	return id == UINT32_MAX ? NULL : p->code[id].name;
}

/* Remember that index names name (its latest load): a move says which code
 * it moves by index, so that a move costs one lookup, not a search. */
static void note_code(struct jit_proc *p, uint64_t index, const char *name)
{
	if (!p->indexed && ember_idtab_init(&p->by_index) != 0)
		return;
	p->indexed = true;
	uint64_t h = ember_hash_pair(index, 0);
	uint32_t id = ember_idtab_find(&p->by_index, h, code_eq, p->code, &index);
	if (id != UINT32_MAX) {
		p->code[id].name = name;
		return;
	}
	if (EMBER_GROW(p->code, p->code_cap, p->ncode + 1) < 0 ||
	    ember_idtab_insert(&p->by_index, h, (uint32_t)p->ncode) != 0)
		return;
	p->code[p->ncode++] = (struct jit_code){ .index = index, .name = name };
}

/* Jitdump: a header, then records (id, total size, timestamp, body). */
static long take_jitdump(struct ember_jit_map *jm, struct jit_proc *p, const char *buf, size_t n)
{
	size_t done = 0;
	uint32_t u32[2];
	if (p->dump.offset == 0) {
		if (n < JITDUMP_HEADER)
			return 0;
		memcpy(u32, buf, 8);
		uint32_t hsize;
		memcpy(&hsize, buf + 8, 4);
		if (u32[0] != JITDUMP_MAGIC || u32[1] != 1 || hsize < JITDUMP_HEADER || hsize > 4096)
			return -1;   /* not a jitdump, another byte order, or a version ember does not read */
		if (n < hsize)
			return 0;
		done = hsize;
	}
	while (n - done >= 16) {
		const char *r = buf + done;
		memcpy(u32, r, 8);              /* id, total_size */
		if (u32[1] < 16 || u32[1] > RECORD_MAX)
			return -1;
		if (n - done < u32[1])
			break;
		uint64_t w[5];
		const char *body = r + 16;
		size_t blen = u32[1] - 16;
		if (u32[0] == JIT_CODE_LOAD && blen > 40) {
			memcpy(w, body + 8, 32);        /* vma, code_addr, code_size, code_index */
			const char *name = body + 40;
			size_t nlen = strnlen(name, blen - 40);
			if (nlen < blen - 40 && (name = add_entry(jm, p, w[1], w[2], name, nlen)))
				note_code(p, w[3], name);
		} else if (u32[0] == JIT_CODE_MOVE && blen >= 48) {
			memcpy(w, body + 8, 40);        /* vma, old, new, code_size, code_index */
			const char *name = code_name(p, w[4]);
			if (name)
				add_entry(jm, p, w[2], w[3], name, strlen(name));
		}
		done += u32[1];
	}
	return (long)done;
}

void ember_jit_map_read(struct ember_jit_map *jm, pid_t pid, const char *jitdump)
{
	struct jit_proc *p = proc_get(jm, pid, true);
	if (!p)
		return;
	p->read_ns = ember_now_ns();
	learn_process(p);
	if (jitdump && (!p->dump_in_proc || strcmp(p->dump_in_proc, jitdump) != 0)) {
		free(p->dump_in_proc);
		p->dump_in_proc = strdup(jitdump);
	}
	jitdump = p->dump_in_proc;
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", p->nspid);
	int fd = p->map.capped ? -1 : open_trusted(jm, p, &p->map, path);
	if (fd >= 0) {
		read_from(jm, p, &p->map, fd, take_perf_map);
		close(fd);
	}
	if (jitdump && !p->dump.broken && !p->dump.capped && (fd = open_trusted(jm, p, &p->dump, jitdump)) >= 0) {
		read_from(jm, p, &p->dump, fd, take_jitdump);
		close(fd);
	}
}

void ember_jit_map_refresh(struct ember_jit_map *jm, pid_t pid)
{
	struct jit_proc *p = proc_get(jm, pid, false);
	if (!p || ember_now_ns() - p->read_ns >= 10 * 1000000ull)
		ember_jit_map_read(jm, pid, NULL);   /* (and the jitdump it was given before) */
}

static int cmp_entry(const void *x, const void *y)
{
	const struct jit_entry *a = x, *b = y;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

const char *ember_jit_map_lookup(struct ember_jit_map *jm, pid_t pid, uint64_t addr, uint64_t *start)
{
	struct jit_proc *p = jm ? proc_get(jm, pid, false) : NULL;
	if (!p || !p->n)
		return NULL;
	if (!p->sorted) {
		qsort(p->e, p->n, sizeof *p->e, cmp_entry);
		p->sorted = true;
	}
	/* The last entry starting at or below addr, then back over every one
	 * that can still reach addr; the latest covering entry wins. */
	size_t lo = ember_upper_bound(p->e, p->n, sizeof *p->e, 8, addr);
	const struct jit_entry *best = NULL;
	for (size_t i = lo; i-- > 0 && addr - p->e[i].start < p->max_len;)
		if (addr < p->e[i].end && (!best || p->e[i].seq > best->seq))
			best = &p->e[i];
	if (best && start)
		*start = best->start;
	return best ? best->name : NULL;
}

bool ember_jit_map_remove_perf_map(struct ember_jit_map *jm, pid_t pid)
{
	struct jit_proc *p = jm ? proc_get(jm, pid, false) : NULL;
	if (!p || !p->map.read)
		return false;
	struct stat st;
	const char *name;
	int dir = file_dir(p, &p->map, &name);
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_dev != p->map.dev ||
	    st.st_ino != p->map.ino)
		return false;
	return unlinkat(dir, name, 0) == 0;
}

void ember_jit_map_get_stats(const struct ember_jit_map *jm, struct ember_jit_map_stats *st)
{
	*st = jm->st;
}
