/* Seeds for fuzz.py_remote from a live interpreter: start PYTHON on a
 * small program (without site, four frames deep in a loop without calls;
 * threading imported, for the thread's name), stop it, open it with the real
 * reader, and record every read of the target's memory that a thread scan and
 * one read of each thread (with --names: their names instead) make; write them
 * in fuzz_py_remote.h's format.  Not a test: run by hand when the reader
 * learns a new version (docs/fuzzing.md).
 *
 *   fuzz_py_seed [--names] PYTHON OUT
 *
 * The reads are recorded by wrapping rm_read/rm_readv at link time
 * (-Wl,--wrap). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_py_remote.h"
#include "py_read.h"
#include "reader.h"

#define MAX_READS 4096

/* sys.modules and threading's globals cut down to what a thread's name is
 * found through, so that the seed stays small. */
static const char program[] =
	"import sys, threading\n"
	"keep = dict((k, sys.modules[k]) for k in ('sys', 'threading', '__main__'))\n"
	"sys.modules.clear()\n"
	"sys.modules.update(keep)\n"
	"active = threading._active\n"
	"threading.__dict__.clear()\n"
	"threading.__dict__['_active'] = active\n"
	"def leaf(n):\n"
	"    s = 0\n"
	"    while True:\n"
	"        s = (s + n) % 7\n"
	"def middle(): leaf(3)\n"
	"def top(): middle()\n"
	"top()\n";

struct read_rec {
	uint64_t addr;
	uint32_t len;
	uint8_t *bytes;
};

/* The reads while recording is on (this tool's state: the wrapped
 * functions have no argument to carry it). */
static struct {
	bool on;
	struct read_rec r[MAX_READS];
	size_t n;
} rec;

bool __real_rm_read(pid_t pid, uint64_t addr, void *buf, size_t len, int *err, uint64_t *syscalls);
size_t __real_rm_readv(pid_t pid, struct rm_req *reqs, size_t n, int *err, uint64_t *syscalls);
bool __wrap_rm_read(pid_t pid, uint64_t addr, void *buf, size_t len, int *err, uint64_t *syscalls);
size_t __wrap_rm_readv(pid_t pid, struct rm_req *reqs, size_t n, int *err, uint64_t *syscalls);

static void keep(uint64_t addr, const void *buf, size_t len)
{
	if (!rec.on || !len || rec.n == MAX_READS)
		return;
	struct read_rec *r = &rec.r[rec.n];
	if (!(r->bytes = malloc(len)))
		return;
	memcpy(r->bytes, buf, len);
	r->addr = addr;
	r->len = (uint32_t)len;
	rec.n++;
}

bool __wrap_rm_read(pid_t pid, uint64_t addr, void *buf, size_t len, int *err, uint64_t *syscalls)
{
	bool ok = __real_rm_read(pid, addr, buf, len, err, syscalls);
	if (ok)
		keep(addr, buf, len);
	return ok;
}

size_t __wrap_rm_readv(pid_t pid, struct rm_req *reqs, size_t n, int *err, uint64_t *syscalls)
{
	size_t good = __real_rm_readv(pid, reqs, n, err, syscalls);
	for (size_t i = 0; i < n; i++)
		if (reqs[i].ok)
			keep(reqs[i].addr, reqs[i].buf, reqs[i].len);
	return good;
}

static void put(FILE *f, const void *p, size_t n)
{
	fwrite(p, 1, n, f);
}

/* Whether read i is covered by a later one (its bytes would never be seen). */
static bool shadowed(size_t i)
{
	for (size_t k = i + 1; k < rec.n; k++)
		if (rec.r[k].addr <= rec.r[i].addr && rec.r[i].addr + rec.r[i].len <= rec.r[k].addr + rec.r[k].len)
			return true;
	return false;
}

static int write_seed(const struct ember_python *py, const char *out, uint8_t flags)
{
	const struct py_runtime *rt = &py->rt;
	const struct py_offsets *o = py_offsets_for(rt->major, rt->minor, rt->micro);
	FILE *f = fopen(out, "wb");
	if (!o || !f)
		return 1;
	uint8_t head[8] = { (uint8_t)(o - py_offsets_table), flags };
	uint16_t tid_off = py->th->pthread_tid_off >= 0 ? (uint16_t)py->th->pthread_tid_off : 0;
	memcpy(head + 2, &tid_off, 2);
	put(f, head, 8);
	uint64_t words[8] = { rt->runtime, rt->interp_head_addr, rt->gil_tstate_addr, rt->t_code,
			      rt->t_frame, rt->t_str, rt->t_bytes, rt->t_py2unicode };
	put(f, words, sizeof words);
	size_t bytes = PY_FUZZ_HEADER;
	for (size_t i = 0; i < rec.n; i++) {
		if (shadowed(i))
			continue;
		put(f, &rec.r[i].addr, 8);
		put(f, &rec.r[i].len, 4);
		put(f, rec.r[i].bytes, rec.r[i].len);
		bytes += PY_FUZZ_REGION_HEAD + rec.r[i].len;
	}
	fclose(f);
	printf("%s: CPython %s, %zu reads, %zu bytes\n", out, rt->version, rec.n, bytes);
	return 0;
}

static int capture(pid_t pid, const char *out, bool names)
{
	struct ember_python_opts opts = EMBER_PYTHON_OPTS_DEFAULT;
	opts.no_debug_info = true;
	struct ember_python *py;
	char msg[256];
	if (ember_python_open(&py, pid, &opts, msg, sizeof msg) != EMBER_PY_OK) {
		fprintf(stderr, "open: %s\n", msg);
		return 1;
	}
	rec.on = true;
	/* 3.13: what the harness's runtime reads its offsets from. */
	uint8_t dbg[600];
	if (py->rt.major == 3 && py->rt.minor >= 13)
		__wrap_rm_read(pid, py->rt.runtime, dbg, sizeof dbg, NULL, NULL);
	uint32_t tids[8];
	int nt = py_list_threads(py, tids, 8);
	/* The frames, or (to stay small) the names. */
	for (int i = 0; !names && i < nt; i++) {
		struct ember_py_frame fr[64];
		uint32_t flags;
		int n = ember_python_read_thread(py, tids[i], fr, 64, &flags);
		printf("thread %u: %d frames, flags %#x\n", tids[i], n, flags);
	}
	for (int i = 0; names && i < nt; i++) {
		char name[64];
		ember_python_thread_name(py, tids[i], name, sizeof name);
		printf("thread %u: %s\n", tids[i], name);
	}
	rec.on = false;
	int rc = write_seed(py, out, names ? PY_FUZZ_THREAD_NAMES : 0);
	ember_python_close(py);
	return rc;
}

int main(int argc, char **argv)
{
	bool names = argc > 1 && !strcmp(argv[1], "--names");
	if (argc != 3 + names) {
		fprintf(stderr, "usage: %s [--names] PYTHON OUT\n", argv[0]);
		return 2;
	}
	pid_t pid = fork();
	if (pid == 0) {
		execl(argv[1 + names], argv[1 + names], "-S", "-c", program, (char *)NULL);
		_exit(127);
	}
	struct timespec ts = { 0, 500 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	kill(pid, SIGSTOP);
	int rc = capture(pid, argv[2 + names], names);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return rc;
}
