/* python-stacks against live interpreters.
 *
 *   test_python_stacks stacks PYTHON TESTS_PYTHON_DIR
 *       runs tests/python/target.py under PYTHON and checks every thread's
 *       frames (names, qualnames, lines, files, activation marks, GIL, TID
 *       mapping) over a few hundred reads, and every thread's Python name
 *       (ember_python_thread_name); the same frames read from records laid
 *       out as the in-kernel copier writes them (built here over
 *       process_vm_readv), reordered, and with a cycle; prints the warm read
 *       and name costs.
 *   test_python_stacks churn PYTHON TESTS_PYTHON_DIR
 *       runs tests/python/churn.py (threads and recursion changing all the
 *       time) and reads every thread a few thousand times: no crash, no hang,
 *       every returned frame resolvable, every thread name found well-formed.
 *   test_python_stacks notpython
 *       /bin/sleep -> EMBER_PY_NOT_PYTHON; a dead pid -> EMBER_PY_GONE;
 *       the offset table's entry per patch release (3.7.0-3.7.3 own theirs).
 * Exit 77 (skip) when PYTHON is not installed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "python_stacks.h"
#include "py_read.h"         /* records: read with py_read_thread */
#include "reader.h"
#include "copier_record.h"
#include "copier_user.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static pid_t child;
static char ready_path[256];

static void cleanup(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = 0;
	}
	if (ready_path[0])
		unlink(ready_path);
}

static pid_t launch(const char *python, const char *script, double timeout)
{
	snprintf(ready_path, sizeof ready_path, "/tmp/ember-pytest-%d.ready", (int)getpid());
	unlink(ready_path);
	child = fork();
	if (child == 0) {
		execl(python, python, script, ready_path, (char *)NULL);
		_exit(127);
	}
	for (double end = now_s() + timeout; now_s() < end; usleep(20000)) {
		if (access(ready_path, R_OK) == 0)
			return child;
		if (waitpid(child, NULL, WNOHANG) == child) {
			child = 0;
			return -1;
		}
	}
	return -1;
}

/* ------------------------------------------------------------- ready file */

struct ready {
	char version[32];
	int nthreads, nmarks;
	char tname[16][64];
	uint32_t tid[16];
	char mname[64][64];
	int mline[64];
};

static int read_ready(struct ready *r)
{
	char line[256];
	FILE *f = fopen(ready_path, "r");
	memset(r, 0, sizeof *r);
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		char a[64];
		unsigned v;
		if (sscanf(line, "version %31s", r->version) == 1)
			continue;
		if (sscanf(line, "thread %31s %u", a, &v) == 2 && r->nthreads < 16) {
			snprintf(r->tname[r->nthreads], 64, "%s", a);
			r->tid[r->nthreads++] = v;
		} else if (sscanf(line, "mark %31s %u", a, &v) == 2 && r->nmarks < 64) {
			snprintf(r->mname[r->nmarks], 64, "%s", a);
			r->mline[r->nmarks++] = (int)v;
		}
	}
	fclose(f);
	return 0;
}

static int mark(const struct ready *r, const char *name)
{
	for (int i = 0; i < r->nmarks; i++)
		if (strcmp(r->mname[i], name) == 0)
			return r->mline[i];
	fprintf(stderr, "no mark %s\n", name);
	return -1;
}

static uint32_t tid_of(const struct ready *r, const char *name)
{
	for (int i = 0; i < r->nthreads; i++)
		if (strcmp(r->tname[i], name) == 0)
			return r->tid[i];
	return 0;
}

/* ------------------------------------------------------------ expectations */

struct xf {
	const char *name;      /* co_name */
	const char *qual;      /* co_qualname on 3.11+, the self-guessed class before (NULL: = name) */
	const char *mark;      /* expected line (NULL: any) */
	int act;               /* 1: activation_start must be set; 0: must not (3.11+ only); -1 any */
};
struct xthread {
	const char *thread;
	const char *file;      /* short filename of the first frames */
	struct xf f[24];
	int n;
};

static int major, minor;

static bool frame_ok(struct ember_python *py, const struct ready *r, const struct ember_py_frame *fr,
		     const struct xf *x, char *why, size_t wl)
{
	const struct ember_py_code *c = ember_python_code(py, fr->code);
	if (!c) {
		snprintf(why, wl, "code id %u unknown", fr->code);
		return false;
	}
	const char *q = x->qual ? x->qual : x->name;   /* <= 3.10: guessed from self */
	if (strcmp(c->name, x->name) != 0 || strcmp(c->qualname, q) != 0) {
		snprintf(why, wl, "name %s/%s, want %s/%s", c->name, c->qualname, x->name, q);
		return false;
	}
	if (x->mark && (int)fr->line != mark(r, x->mark)) {
		snprintf(why, wl, "%s line %u, want %d (%s)", x->name, fr->line, mark(r, x->mark), x->mark);
		return false;
	}
	if (x->act == 1 && !fr->activation_start) {
		snprintf(why, wl, "%s: activation_start not set", x->name);
		return false;
	}
	if (x->act == 0 && !fr->activation_start != !(major == 2 || minor <= 10)) {
		snprintf(why, wl, "%s: activation_start %d", x->name, fr->activation_start);
		return false;
	}
	return true;
}

static bool chain_ok(struct ember_python *py, const struct ready *r, const struct xthread *x,
		     const struct ember_py_frame *fr, int n, char *why, size_t wl)
{
	if (n < x->n) {
		snprintf(why, wl, "%d frames, want >= %d", n, x->n);
		return false;
	}
	for (int i = 0; i < x->n; i++)
		if (!frame_ok(py, r, &fr[i], &x->f[i], why, wl))
			return false;
	return true;
}

#define SLEEP { "sleep_forever", NULL, "sleep_forever", -1 }
#define REC { "rec", NULL, "rec_call", -1 }

static const struct xthread expect[] = {
	{ "main", "target.py", { { "c", NULL, "busy", 0 }, { "b", NULL, "b_call", 0 }, { "a", NULL, "a_call", 0 },
			      { "<module>", NULL, "module_call", 1 } }, 4 },
	{ "method", "target.py", { SLEEP, { "rec", NULL, "rec_leaf_call", -1 }, REC, REC, REC, REC,
				{ "forward", "Model.forward", "forward_call", -1 },
				{ "run_method", NULL, "run_method_call", -1 } }, 8 },
	{ "gen", "target.py", { SLEEP, { "gen", NULL, "gen_call", -1 }, { "run_gen", NULL, "run_gen_call", -1 } }, 3 },
	{ "sorted", "target.py", { SLEEP, { "keyfn", NULL, "keyfn_call", 1 }, { "run_sorted", NULL, "sorted_call", -1 } }, 3 },
	{ "map", "target.py", { SLEEP, { "mapfn", NULL, "mapfn_call", 1 }, { "run_map", NULL, "map_call", -1 } }, 3 },
	{ "coro", "target.py", { SLEEP, { "coro_inner", NULL, "coro_inner_call", -1 },
			      { "coro_outer", NULL, "coro_outer_call", -1 }, { "run", NULL, "run_coro_call", -1 },
			      { "run_coro", NULL, NULL, -1 } }, 5 },
	{ "unicode", "target.py", { SLEEP, { "\xf0\xa0\x80\x80_astral", NULL, "astral_call", -1 },
				 { "na\xc3\xafve_\xe5\x87\xbd\xe6\x95\xb0", NULL, "cjk_call", -1 },
				 { "na\xc3\xafve_\xc3\xa9t\xc3\xa9", NULL, "latin_call", -1 },
				 { "run", NULL, "unicode_run_call", -1 }, { "run_unicode", NULL, NULL, -1 } }, 6 },
};
#define NEXPECT (int)(sizeof expect / sizeof expect[0])

/* Python thread names of target.py's threads (see its docstring). */
struct xname {
	const char *thread;
	const char *name;      /* NULL: no name (0) */
	bool prefix;           /* name is a prefix ("Dummy-" + a number) */
};
static const struct xname xnames[] = {
	{ "main", "MainThread", false }, { "method", "method", false }, { "deep", "deep", false },
	{ "gen", "gen", false }, { "sorted", "sorted", false }, { "map", "map", false },
	{ "coro", "coro", false }, { "unicode", "\xc3\xbcn\xc3\xaf-\xe5\x90\x8d\xe5\x89\x8d", false },
	{ "dummy", "Dummy-", true }, { "raw", NULL, false }, { "badname", NULL, false },
};

static double median_us(double *v, int n)
{
	for (int i = 0; i < n; i++)
		for (int k = i + 1; k < n; k++)
			if (v[k] < v[i]) {
				double x = v[i];
				v[i] = v[k];
				v[k] = x;
			}
	return v[n / 2];
}

static void check_names(struct ember_python *py, const struct ready *r)
{
	char buf[128];
	for (size_t i = 0; i < sizeof xnames / sizeof xnames[0]; i++) {
		const struct xname *x = &xnames[i];
		uint32_t tid = tid_of(r, x->thread);
		if (!tid)
			continue;
		int n = ember_python_thread_name(py, tid, buf, sizeof buf);
		bool ok = x->name ? n == (int)strlen(buf) &&
				    (x->prefix ? strncmp(buf, x->name, strlen(x->name)) == 0 : strcmp(buf, x->name) == 0)
				  : n == 0 && !buf[0];
		printf("thread %-8s python name \"%s\" (%d)%s\n", x->thread, buf, n, ok ? "" : "  WRONG");
		CHECK(ok);
	}
	/* cut to the buffer at a character boundary: "\xc3\xbcn\xc3\xaf-" is 6 bytes */
	uint32_t uni = tid_of(r, "unicode");
	if (uni) {
		CHECK(ember_python_thread_name(py, uni, buf, 8) == 6 && strcmp(buf, "\xc3\xbcn\xc3\xaf-") == 0);
		CHECK(ember_python_thread_name(py, uni, buf, 6) == 5 && strcmp(buf, "\xc3\xbcn\xc3\xaf") == 0);
	}
	CHECK(ember_python_thread_name(py, 1, buf, sizeof buf) == 0 && !buf[0]);   /* not a thread of it */
	CHECK(ember_python_thread_name(py, tid_of(r, "main"), buf, 1) == 0 && !buf[0]);

	/* warm cost of one name (the cli reads one per thread and second) */
	uint32_t deep = tid_of(r, "deep");
	double batch[15];
	struct ember_python_stats s0, s1;
	ember_python_stats(py, &s0);
	for (int b = 0; b < 15; b++) {
		double t0 = now_s();
		for (int i = 0; i < 50; i++)
			ember_python_thread_name(py, deep, buf, sizeof buf);
		batch[b] = (now_s() - t0) / 50 * 1e6;
	}
	ember_python_stats(py, &s1);
	double best = batch[0];
	for (int b = 1; b < 15; b++)
		best = batch[b] < best ? batch[b] : best;
	printf("name cost (%s): best %.1f us/name, median %.1f us/name, %.1f syscalls/name\n", r->version, best,
	       median_us(batch, 15), (double)(s1.syscalls - s0.syscalls) / 750);
}

/* ------------------------------------------------- frames copied at a sample */

static bool peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len;
}

enum rec_layout {
	REC_AS_COPIER,     /* copier.bpf.c's layout */
	REC_CODES_LAST,    /* every code header after all frames: nothing at the cursor */
	REC_CYCLE,         /* the third frame links back to the first (garbage) */
};

/* The record the in-kernel copier (copier.bpf.c) would write for
 * thread t now, built the same way over process_vm_readv, in one of the
 * layouts above.  Returns false when a read failed. */
static bool copy_like_bpf(pid_t pid, const struct ember_copier_thread *t, uint32_t tid, enum rec_layout how,
			  struct ember_copier_record *r)
{
	static uint8_t codes[EMBER_COPIER_MAX_FRAMES * (8 + EMBER_COPIER_CODE_BYTES + 8)];
	size_t off = 0, coff = 0;
	uint64_t f = 0, last_code = 0, first = 0;
	memset(r, 0, offsetof(struct ember_copier_record, data));
	r->pid = t->pid;
	r->tid = tid;
	r->tstate = t->tstate;
	r->frame_len = t->frame_len;
	r->code_len = t->code_len;
	r->ts_len = t->ts_len;
	if (!peek(pid, t->tstate, r->data, t->ts_len) || !peek(pid, t->tstate + t->top_off, &f, 8))
		return false;
	if (t->cf_off >= 0 && f && !peek(pid, f + t->cf_off, &f, 8))
		return false;
	r->top = f;
	off = t->ts_len;
	while (f && r->nframes < EMBER_COPIER_MAX_FRAMES) {
		uint8_t *slot = r->data + off;
		memcpy(slot, &f, 8);
		if (!peek(pid, f, slot + 8, t->frame_len))
			return false;
		off += 8 + t->frame_len;
		r->nframes++;
		first = first ? first : f;
		uint64_t code;
		memcpy(&code, slot + 8 + t->code_off, 8);
		memcpy(&f, slot + 8 + t->back_off, 8);
		if (how == REC_CYCLE && r->nframes == 3) {
			f = first;
			memcpy(slot + 8 + t->back_off, &f, 8);
		}
		if (!code || code == last_code || (code & 7))
			continue;
		uint8_t *c = how == REC_CODES_LAST ? codes + coff : r->data + off;
		uint64_t tagged = code | EMBER_COPIER_CODE_TAG;
		memcpy(c, &tagged, 8);
		if (!peek(pid, code, c + 8, t->code_len))
			continue;
		uint64_t name, name_hash = 0;   /* (after the header: its name's hash) */
		memcpy(&name, c + 8 + t->key_off[0], 8);
		if (t->name_hash_off && !peek(pid, name + t->name_hash_off, &name_hash, 8))
			name_hash = 0;
		memcpy(c + 8 + t->code_len, &name_hash, 8);
		if (how == REC_CODES_LAST)
			coff += 8 + t->code_len + 8;
		else
			off += 8 + t->code_len + 8;
		r->ncodes++;
		last_code = code;
	}
	if (f && r->nframes == EMBER_COPIER_MAX_FRAMES)
		r->flags |= EMBER_COPIER_MORE;
	memcpy(r->data + off, codes, coff);
	return true;
}

/* Each sleeping thread read from a record of its frames: the same frames
 * as a live read, with no system call (no GIL check, as `ember record`),
 * whatever the entries' order; a record whose chain loops is refused as
 * torn, not followed, and the frames are read live instead. */
static void check_records(pid_t pid, const struct ready *r)
{
	static struct ember_copier_record rec;
	struct ember_py_frame fr[256];
	char why[256], msg[256];
	struct ember_python *py = NULL;
	struct ember_python_opts o = EMBER_PYTHON_OPTS_DEFAULT;
	uint32_t tids[64];
	o.no_gil_check = true;
	CHECK(ember_python_open(&py, pid, &o, msg, sizeof msg) == EMBER_PY_OK);
	if (!py || py_list_threads(py, tids, 64) < 1)
		return;
	for (int e = 1; e < NEXPECT; e++) {
		uint32_t tid = tid_of(r, expect[e].thread);
		struct py_thread *t = tid ? py_thread_find(py, tid) : NULL;
		struct ember_copier_thread entry;
		if (!t)
			continue;
		CHECK(py_copier_thread_entry(py, t, &entry));
		for (int how = REC_AS_COPIER; how <= REC_CYCLE; how++) {
			bool ok = false;
			int n = 0;
			uint32_t fl = 0;
			struct ember_python_stats s0, s1;
			for (int pass = 0; pass < 2; pass++) {   /* the second: everything cached */
				CHECK(copy_like_bpf(pid, &entry, tid, (enum rec_layout)how, &rec));
				ember_python_stats(py, &s0);
				n = py_read_thread(py, tid, &rec, 0, fr, 256, &fl);
				ember_python_stats(py, &s1);
			}
			ok = chain_ok(py, r, &expect[e], fr, n, why, sizeof why);
			if (how == REC_CYCLE) {
				if (ok && (fl & (EMBER_PY_AT_SAMPLE | EMBER_PY_TORN))) {
					ok = false;
					snprintf(why, sizeof why, "flags %#x", fl);
				}
			} else {
				if (ok && (!(fl & EMBER_PY_AT_SAMPLE) || (fl & (EMBER_PY_TORN | EMBER_PY_UNREADABLE)))) {
					ok = false;
					snprintf(why, sizeof why, "flags %#x", fl);
				}
				/* <= 3.10 guesses a method's class from its first argument
				 * (threading.py's run(self) in every thread), which no
				 * record holds: one batched read */
				uint64_t allowed = major == 2 || minor <= 10 ? 1 : 0;
				if (ok && s1.syscalls - s0.syscalls > allowed) {
					ok = false;
					snprintf(why, sizeof why, "%llu system calls",
						 (unsigned long long)(s1.syscalls - s0.syscalls));
				}
			}
			static const char *const layout[] = { "as copied", "codes last", "with a cycle" };
			printf("thread %-8s record %-12s %s%s\n", expect[e].thread, layout[how], ok ? "ok" : "WRONG: ",
			       ok ? "" : why);
			CHECK(ok);
		}
	}
	ember_python_close(py);
}

static int test_stacks(const char *python, const char *dir)
{
	char script[512];
	struct ready r;
	snprintf(script, sizeof script, "%s/target.py", dir);
	pid_t pid = launch(python, script, 30);
	CHECK(pid > 0);
	if (pid <= 0 || read_ready(&r) < 0)
		return check_report();
	sscanf(r.version, "%d.%d", &major, &minor);

	struct ember_python *py = NULL;
	char msg[512];
	struct ember_python_opts opts = EMBER_PYTHON_OPTS_DEFAULT;
	int rc = ember_python_open(&py, pid, &opts, msg, sizeof msg);
	CHECK(rc == EMBER_PY_OK);
	if (rc != EMBER_PY_OK) {
		fprintf(stderr, "open: %s\n", msg);
		return check_report();
	}
	printf("%s\n", ember_python_describe(py));
	CHECK_STR(ember_python_version(py), r.version);

	/* every thread of the script is a Python thread with the right TID */
	uint32_t tids[64];
	int nt = py_list_threads(py, tids, 64);
	CHECK(nt == r.nthreads);
	for (int i = 0; i < r.nthreads; i++) {
		bool found = false;
		for (int k = 0; k < nt; k++)
			found |= tids[k] == r.tid[i];
		if (!found)
			fprintf(stderr, "thread %s (tid %u) not mapped\n", r.tname[i], r.tid[i]);
		CHECK(found);
	}
	check_names(py, &r);

	struct ember_py_frame fr[256];
	uint32_t fl;
	char why[256];
	/* settle: the sleeping threads reach their final stacks */
	for (double end = now_s() + 5; now_s() < end; usleep(10000)) {
		bool all = true;
		for (int e = 1; e < NEXPECT; e++) {
			uint32_t tid = tid_of(&r, expect[e].thread);
			if (!tid)
				continue;
			int n = ember_python_read_thread(py, tid, fr, 256, &fl);
			all &= chain_ok(py, &r, &expect[e], fr, n, why, sizeof why);
		}
		if (all)
			break;
	}

	const int rounds = 300;
	int good[NEXPECT] = { 0 }, reads[NEXPECT] = { 0 }, gil[NEXPECT] = { 0 }, gil_known = 0;
	for (int round = 0; round < rounds; round++) {
		for (int e = 0; e < NEXPECT; e++) {
			uint32_t tid = tid_of(&r, expect[e].thread);
			if (!tid)
				continue;
			int n = ember_python_read_thread(py, tid, fr, 256, &fl);
			reads[e]++;
			bool ok = chain_ok(py, &r, &expect[e], fr, n, why, sizeof why);
			good[e] += ok;
			gil[e] += !!(fl & EMBER_PY_HOLDS_GIL);
			gil_known += !!(fl & EMBER_PY_GIL_KNOWN);
			if (!ok && reads[e] - good[e] <= 3)
				fprintf(stderr, "thread %s read %d: %s (flags %#x)\n", expect[e].thread, round, why, fl);
			if (round == 0 && n > 0) {
				const struct ember_py_code *c = ember_python_code(py, fr[0].code);
				const struct ember_py_code *b = ember_python_code(py, fr[n - 1].code);
				if (e == 6) {   /* non-ASCII file name, short and absolute */
					const struct ember_py_code *u = ember_python_code(py, fr[1].code);
					CHECK_STR(u->short_filename, "\xc3\xbc" "n\xc3\xaf" "code_\xf0\x9f\x98\x80.py");
					CHECK(strstr(u->filename, "/tests/python/\xc3\xbc" "n\xc3\xaf" "code_") != NULL);
				}
				CHECK_STR(c->short_filename, expect[e].file);
				CHECK(c->filename[0] == '/');
				if (e > 0)
					CHECK_STR(b->short_filename, "threading.py");
				if (e > 0 && (n < 2 || !fr[n - 1].activation_start))
					fprintf(stderr, "thread %s: bottom frame without activation_start\n", expect[e].thread);
				if (e > 0)
					CHECK(fr[n - 1].activation_start);
			}
		}
		usleep(1000);
	}
	for (int e = 0; e < NEXPECT; e++) {
		if (!reads[e])
			continue;
		double pct = 100.0 * good[e] / reads[e];
		printf("thread %-8s %3d/%3d reads exact (%.0f%%), holds GIL in %d\n", expect[e].thread, good[e],
		       reads[e], pct, gil[e]);
		CHECK(pct >= (e == 0 ? 90.0 : 99.0));
		if (gil_known) {
			if (e == 0)
				CHECK(gil[e] * 2 >= reads[e]);
			else
				CHECK(gil[e] * 20 <= reads[e]);
		}
	}
	CHECK(gil_known > 0);
	check_records(pid, &r);

	/* warm read cost of the 21-frame "deep" thread (and the busy one) */
	uint32_t deep = tid_of(&r, "deep");
	for (int v = 2; v >= 0; v--) {
		struct ember_python *q = NULL;
		struct ember_python_opts o = EMBER_PYTHON_OPTS_DEFAULT;
		o.verify = v >= 1;
		o.code_recheck_ms = v == 0 ? 100 : 0;
		if (ember_python_open(&q, pid, &o, msg, sizeof msg) != EMBER_PY_OK)
			continue;
		int n = 0;
		for (int i = 0; i < 100; i++)
			n = ember_python_read_thread(q, deep, fr, 256, &fl);
		/* this machine may be shared and noisy: report the best and the
		 * median of 25 batches of 400 reads (no timing assertion) */
		struct ember_python_stats s0, s1;
		double batch[25];
		ember_python_stats(q, &s0);
		for (int b = 0; b < 25; b++) {
			double t0 = now_s();
			for (int i = 0; i < 400; i++)
				ember_python_read_thread(q, deep, fr, 256, &fl);
			batch[b] = (now_s() - t0) / 400 * 1e6;
		}
		ember_python_stats(q, &s1);
		for (int i = 0; i < 25; i++)   /* sort */
			for (int k = i + 1; k < 25; k++)
				if (batch[k] < batch[i]) {
					double x = batch[i];
					batch[i] = batch[k];
					batch[k] = x;
				}
		printf("read cost (%s): %d-frame stack, warm: best %.2f us/read, median %.2f us/read, "
		       "%.2f syscalls/read, verify=%d code_recheck_ms=%u\n", r.version, n, batch[0], batch[12],
		       (double)(s1.syscalls - s0.syscalls) / 10000, o.verify, o.code_recheck_ms);
		CHECK(n >= 20);
		/* The deep thread's stack is steady: each read is its one batched
		 * prefetch, and verify adds no re-read to a single-call snapshot. */
		CHECK((double)(s1.syscalls - s0.syscalls) / 10000 <= 1.1);
		ember_python_close(q);
	}
	struct ember_python_stats st;
	ember_python_stats(py, &st);
	printf("stats: %llu reads, %llu syscalls, %llu prefetch hits, %llu single reads, %llu codes, %llu torn\n",
	       (unsigned long long)st.reads, (unsigned long long)st.syscalls, (unsigned long long)st.prefetch_hits,
	       (unsigned long long)st.single_reads, (unsigned long long)st.codes, (unsigned long long)st.torn);
	ember_python_close(py);
	cleanup();
	return check_report();
}

static int list_tasks(pid_t pid, uint32_t *t, int max)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
	DIR *d = opendir(p);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)) && n < max)
		if (de->d_name[0] != '.')
			t[n++] = (uint32_t)atoi(de->d_name);
	if (d)
		closedir(d);
	return n;
}

static int test_churn(const char *python, const char *dir)
{
	char script[512], msg[512];
	snprintf(script, sizeof script, "%s/churn.py", dir);
	pid_t pid = launch(python, script, 30);
	CHECK(pid > 0);
	if (pid <= 0)
		return check_report();
	struct ember_python *py = NULL;
	int rc = ember_python_open(&py, pid, NULL, msg, sizeof msg);
	CHECK(rc == EMBER_PY_OK);
	if (rc) {
		fprintf(stderr, "open: %s\n", msg);
		return check_report();
	}
	static struct ember_py_frame fr[4096];
	long reads = 0, frames = 0, nonempty = 0, torn = 0, unreadable = 0, trunc = 0, bad = 0;
	long name_reads = 0, named = 0, bad_names = 0;
	int maxn = 0;
	double t0 = now_s();
	/* At least a second of churn, however fast reads that find nothing
	 * return: a reader that fails at first must get the chance to recover. */
	while ((reads < 6000 || now_s() - t0 < 1.0) && now_s() - t0 < 20) {
		uint32_t tids[256];
		int nt = list_tasks(pid, tids, 256);
		for (int i = 0; i < nt; i++) {
			uint32_t fl;
			int n = ember_python_read_thread(py, tids[i], fr, reads & 1 ? 4096 : 64, &fl);
			reads++;
			if (n < 0)
				continue;
			frames += n;
			nonempty += n > 0;
			maxn = n > maxn ? n : maxn;
			torn += !!(fl & EMBER_PY_TORN);
			unreadable += !!(fl & EMBER_PY_UNREADABLE);
			trunc += !!(fl & EMBER_PY_TRUNCATED);
			for (int k = 0; k < n; k++) {
				const struct ember_py_code *c = ember_python_code(py, fr[k].code);
				if (!c || !c->name || !c->filename || !c->short_filename)
					bad++;
			}
			if (reads % 16 == 0) {   /* names of threads coming and going */
				char name[64];
				int len = ember_python_thread_name(py, tids[i], name, sizeof name);
				name_reads++;
				named += len > 0;
				if (len > 0 && strcmp(name, "MainThread") != 0 && strncmp(name, "Thread-", 7) != 0) {
					if (bad_names++ < 3)
						fprintf(stderr, "unexpected thread name \"%s\"\n", name);
				}
			}
		}
	}
	printf("churn (%s): %ld reads in %.1f s, %ld with frames (deepest %d), %ld frames; torn %ld, unreadable %ld, "
	       "truncated %ld\n", ember_python_version(py), reads, now_s() - t0, nonempty, maxn, frames, torn,
	       unreadable, trunc);
	printf("churn names: %ld reads, %ld named, %ld unexpected\n", name_reads, named, bad_names);
	CHECK(reads >= 1000);
	CHECK(nonempty > reads / 10);
	CHECK(bad == 0);
	CHECK(named > 0 && bad_names == 0);
	ember_python_close(py);
	cleanup();
	return check_report();
}

static int test_notpython(void)
{
	char msg[512];
	struct ember_python *py = NULL;
	child = fork();
	if (child == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	usleep(100000);
	int rc = ember_python_open(&py, child, NULL, msg, sizeof msg);
	printf("/bin/sleep: %d: %s\n", rc, msg);
	CHECK(rc == EMBER_PY_NOT_PYTHON);
	CHECK(py == NULL);
	CHECK(strstr(msg, "no CPython") != NULL);
	cleanup();
	rc = ember_python_open(&py, 0x3ffffff0, NULL, msg, sizeof msg);
	printf("dead pid: %d: %s\n", rc, msg);
	CHECK(rc == EMBER_PY_GONE);
	/* 3.7.0-3.7.3 keep the GIL holder elsewhere than later 3.7 releases;
	 * an unknown patch release gets the entry for all of them */
	const struct py_offsets *early = py_offsets_for(3, 7, 3), *late = py_offsets_for(3, 7, 4);
	CHECK(early && late && early != late && early->rt_tstate_current == 1392);
	CHECK(late && late->rt_tstate_current != 1392 && py_offsets_for(3, 7, -1) == late);
	CHECK(late && early && late->rt_interp_head == early->rt_interp_head);
	CHECK(py_offsets_for(3, 11, 7) && py_offsets_for(3, 11, 7) == py_offsets_for(3, 11, -1));
	CHECK(!py_offsets_for(3, 5, 0));
	return check_report();
}

int main(int argc, char **argv)
{
	atexit(cleanup);
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 2 && strcmp(argv[1], "notpython") == 0)
		return test_notpython();
	if (argc != 4) {
		fprintf(stderr, "usage: %s stacks|churn PYTHON TESTS_PYTHON_DIR | notpython\n", argv[0]);
		return 2;
	}
	if (access(argv[2], X_OK) != 0) {
		printf("SKIP: %s not installed\n", argv[2]);
		return 77;
	}
	alarm(120);   /* a hang is a failure */
	if (strcmp(argv[1], "stacks") == 0)
		return test_stacks(argv[2], argv[3]);
	if (strcmp(argv[1], "churn") == 0)
		return test_churn(argv[2], argv[3]);
	return 2;
}
