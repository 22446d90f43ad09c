/* Thread states: walking interpreters -> thread states, mapping each to its
 * OS thread id (3.11+: native_thread_id; before: the TID inside glibc's
 * struct pthread at an offset calibrated against /proc/PID/task), and
 * ember_python_read_thread / _read_sample (the snapshot each read goes
 * through: snapshot.c). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "py_internal.h"
#include "copier.h"

#define MAX_INTERPS 64
#define MAX_TSTATES 4096
#define SCAN_INTERVAL_NS 20000000ull   /* rescan at most every 20 ms on a miss */
#define DWARF_AFTER_READS 200           /* opts.defer_debug_info: reads without a copy
                                        * before the eval loop's DWARF is loaded */
#define TID_RECHECK_NS 1000000000ull   /* <= 3.10, frames copied at the sample: check the TID in
                                        * struct pthread at most this often (a live read, 10-35 us
                                        * after ember slept: at 100 ms, most of the mean read at
                                        * 99 Hz; the copy is found by the sampled TID, and a thread
                                        * state taken over by another thread shows in its copied
                                        * thread_id at every read) */
#define PTHREAD_SCAN 2048              /* bytes of struct pthread searched for the TID */
#define GLIBC_TID_OFF 0x2d0            /* glibc 2.36 x86-64, preferred on ties */

uint64_t py_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ------------------------------------------------------------- thread map */

struct found {
	uint64_t tstate, interp, pthread;
	uint32_t tid;
};

/* The id a thread has in its own (innermost) pid namespace: the last
 * number of the NSpid line of its status; id itself when there is none
 * (kernels before 4.1) or it cannot be read. */
static uint32_t own_ns_id(pid_t pid, uint32_t id)
{
	char path[96], line[256];
	snprintf(path, sizeof path, "/proc/%d/task/%u/status", (int)pid, id);
	FILE *f = fopen(path, "re");
	uint32_t own = id;
	if (!f)
		return id;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "NSpid:", 6) == 0) {
			char *p = line + 6, *end;
			for (unsigned long v; (v = strtoul(p, &end, 10)), end != p; p = end)
				own = (uint32_t)v;
			break;
		}
	fclose(f);
	return own;
}

/* tids: the process's threads as ember sees them (its samples' ids); own
 * (may be NULL): the same threads' ids in the target's pid namespace, which
 * CPython records (native_thread_id, glibc's struct pthread) -- different
 * when the target runs in a container of its own. */
static int list_tasks(pid_t pid, uint32_t *tids, uint32_t *own, int max)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < max)
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9') {
			tids[n] = (uint32_t)strtoul(de->d_name, NULL, 10);
			if (own)
				own[n] = own_ns_id(pid, tids[n]);
			n++;
		}
	closedir(d);
	return n;
}

static bool in_set(const uint32_t *v, int n, uint32_t x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static void calibrate_with(struct ember_python *py, struct found *f, int nf, uint8_t (*bufs)[PTHREAD_SCAN],
			   const uint32_t *tasks, int nt, int nb);

/* Find the offset of the TID inside struct pthread: an int32 slot that holds
 * a live TID of this process in every thread's struct, all distinct, and the
 * PID in the main thread's (ids of the target's own pid namespace). */
static void calibrate_tid(struct ember_python *py, struct found *f, int nf, const uint32_t *own, int nt)
{
	uint8_t (*bufs)[PTHREAD_SCAN] = malloc(16 * PTHREAD_SCAN);
	if (bufs && nt > 0)
		calibrate_with(py, f, nf, bufs, own, nt, 0);
	free(bufs);
}

static void calibrate_with(struct ember_python *py, struct found *f, int nf, uint8_t (*bufs)[PTHREAD_SCAN],
			   const uint32_t *tasks, int nt, int nb)
{
	/* From the tail: new thread states go to the head of the list, so the
	 * main thread's (whose struct must hold the PID) is last, and with more
	 * than 16 threads it would otherwise never be looked at. */
	for (int i = nf - 1; i >= 0 && nb < 16; i--)
		if (rm_ptr_ok(f[i].pthread, 8) &&
		    rm_read(py->pid, f[i].pthread, bufs[nb], PTHREAD_SCAN, NULL, &py->st.syscalls))
			nb++;
	if (!nb)
		return;
	int best = -1, ncand = 0;
	for (int off = 0; off + 4 <= PTHREAD_SCAN; off += 4) {
		uint32_t seen[16];
		int live = 0;
		bool has_pid = false, dup = false;
		for (int k = 0; k < nb; k++) {
			uint32_t v;
			memcpy(&v, bufs[k] + off, 4);
			seen[k] = v;
			dup |= v && in_set(seen, k, v);
			if (v && in_set(tasks, nt, v))
				live++;
			has_pid |= v == py->own_pid;
		}
		/* The main thread's struct must hold the PID, and most of the
		 * others live TIDs: with threads coming and going, some structs
		 * in the list belong to threads that just exited (or are reused),
		 * so "every one" would reject the real slot under churn. */
		if (!has_pid || dup || live * 2 < nb)
			continue;
		ncand++;
		if (best < 0 || off == GLIBC_TID_OFF)
			best = off;
	}
	if (best >= 0) {
		py->pthread_tid_off = best;
		py->tid_calibrated = nb >= 2 || ncand == 1;
	}
}

static struct py_thread *thread_slot(struct ember_python *py, uint32_t tid, bool create)
{
	for (size_t i = 0; i < py->nthreads; i++)
		if (py->threads[i].tid == tid)
			return &py->threads[i];
	if (!create)
		return NULL;
	if (py->nthreads == py->threads_cap) {
		size_t nc = py->threads_cap ? py->threads_cap * 2 : 32;
		struct py_thread *v = realloc(py->threads, nc * sizeof *v);
		if (!v)
			return NULL;
		py->threads = v;
		py->threads_cap = nc;
	}
	struct py_thread *t = &py->threads[py->nthreads++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	return t;
}

int py_scan_threads(struct ember_python *py)
{
	const struct py_offsets *o = &py->off;
	uint8_t ts[1024];
	int nf = 0, err = 0;
	uint64_t interp = 0;
	struct found *f = malloc(MAX_TSTATES * sizeof *f);

	if (!f)
		return -ENOMEM;

	py->st.thread_scans++;
	py->last_scan_ns = py_now_ns();
	if (!rm_read(py->pid, py->interp_head_addr, &interp, 8, &err, &py->st.syscalls)) {
		free(f);
		return err == ESRCH ? -ESRCH : -EFAULT;
	}
	for (int ni = 0; interp && ni < MAX_INTERPS; ni++) {
		if (!rm_ptr_ok(interp, 8))
			break;
		uint64_t tsa = 0, next = 0;
		if (!rm_read(py->pid, interp + o->is_tstate_head, &tsa, 8, NULL, &py->st.syscalls) ||
		    !rm_read(py->pid, interp + o->is_next, &next, 8, NULL, &py->st.syscalls))
			break;
		for (int k = 0; tsa && k < MAX_TSTATES && nf < MAX_TSTATES; k++) {
			if (!rm_ptr_ok(tsa, 8) || py->ts_len > sizeof ts ||
			    !rm_read(py->pid, tsa, ts, py->ts_len, NULL, &py->st.syscalls))
				break;
			if (rd64(ts, o->ts_interp) != interp)
				break;   /* torn list */
			f[nf].tstate = tsa;
			f[nf].interp = interp;
			f[nf].pthread = rd64(ts, o->ts_thread_id);
			f[nf].tid = o->ts_native_thread_id >= 0 ? (uint32_t)rd64(ts, o->ts_native_thread_id) : 0;
			nf++;
			uint64_t nx = rd64(ts, o->ts_next);
			if (nx == tsa)
				break;
			tsa = nx;
		}
		interp = next;
	}
	/* Ids as ember sees them, and as the target's namespace does: the same
	 * unless it runs in a pid namespace of its own (a process never
	 * changes namespace, so the main thread's NSpid is read once; the
	 * others' only then -- a scan runs at every miss, at most every 20 ms). */
	if (!py->own_pid_known) {
		py->own_pid = own_ns_id(py->pid, (uint32_t)py->pid);
		py->own_pid_known = true;
	}
	bool other_ns = py->own_pid != (uint32_t)py->pid;
	uint32_t *tasks = malloc(2 * MAX_TSTATES * sizeof *tasks), *own = tasks ? tasks + MAX_TSTATES : NULL;
	int nt = tasks ? list_tasks(py->pid, tasks, other_ns ? own : NULL, MAX_TSTATES) : 0;
	if (nt > 0 && !other_ns)
		memcpy(own, tasks, (size_t)nt * sizeof *own);
	if (o->ts_native_thread_id < 0 && nf) {
		if (!py->tid_calibrated)
			calibrate_tid(py, f, nf, own, nt);
		if (py->pthread_tid_off >= 0) {
			struct rm_req req[256];
			uint32_t tids[256];
			for (int base = 0; base < nf; base += 256) {
				int m = nf - base < 256 ? nf - base : 256;
				for (int i = 0; i < m; i++) {
					tids[i] = 0;
					req[i] = (struct rm_req){ f[base + i].pthread + py->pthread_tid_off, &tids[i], 4, false };
				}
				rm_readv(py->pid, req, m, NULL, &py->st.syscalls);
				for (int i = 0; i < m; i++)
					f[base + i].tid = req[i].ok ? tids[i] : 0;
			}
		}
	}
	/* Rebuild the thread table, keeping prefetch lists of unchanged threads. */
	for (size_t i = 0; i < py->nthreads; i++)
		py->threads[i].interp = 0;   /* mark */
	for (int i = 0; i < nf; i++) {
		if (!f[i].tid)
			continue;
		uint32_t own_tid = f[i].tid, tid = own_tid;
		for (int k = 0; k < nt; k++)
			if (own[k] == own_tid) {
				tid = tasks[k];
				break;
			}
		struct py_thread *t = thread_slot(py, tid, true);
		if (!t)
			break;
		t->own_tid = own_tid;
		if (t->tstate != f[i].tstate && t->plan)
			t->plan->npref = t->plan->nranges = 0;
		t->tstate = f[i].tstate;
		t->interp = f[i].interp;
		t->pthread = f[i].pthread;
	}
	size_t w = 0;
	for (size_t i = 0; i < py->nthreads; i++) {
		if (py->threads[i].interp) {
			py->threads[w++] = py->threads[i];
		} else {
			free(py->threads[i].plan);
		}
	}
	py->nthreads = w;
	py->last_hit = 0;
	/* Every thread found, not only the sampled one: its next sample is then
	 * copied at the sample too. */
	for (size_t i = 0; i < py->nthreads; i++)
		py_copier_register(py, &py->threads[i]);
	free(tasks);
	free(f);
	return nf;
}

struct py_thread *py_thread_find(struct ember_python *py, uint32_t tid)
{
	if (py->last_hit < py->nthreads && py->threads[py->last_hit].tid == tid)
		return &py->threads[py->last_hit];
	for (size_t i = 0; i < py->nthreads; i++)
		if (py->threads[i].tid == tid) {
			py->last_hit = i;
			return &py->threads[i];
		}
	return NULL;
}

int ember_python_threads(struct ember_python *py, uint32_t *tids, int max)
{
	int rc = py_scan_threads(py);
	if (rc < 0)
		return rc;
	int n = 0;
	for (size_t i = 0; i < py->nthreads && n < max; i++)
		tids[n++] = py->threads[i].tid;
	return n;
}

/* ------------------------------------------------------------ read a thread */

static int read_once(struct ember_python *py, struct py_thread *t, const struct ember_copier_record *rec,
		     struct ember_py_frame *out, int max, uint32_t *flags, bool *stale)
{
	const struct py_offsets *o = &py->off;
	*stale = false;
	py->seeded = false;
	snap_begin(py, t);
	/* Frames copied at the sample: their bytes, their code objects' headers
	 * and the thread state's, in place of what is read now. */
	bool seed = rec && rec->tstate == t->tstate && rec->frame_len == py->fr_len && rec->code_len == py->co_len;
	if (seed) {
		snap_use_record(py->snap, rec, py->ts_len);
		py->seeded = true;
		py->seed_top = rec->top;
		py->objs = rec;
	}
	const uint8_t *ts = snap_get(py, t->tstate, py->ts_len);
	if (!ts) {
		*stale = !py->snap->gone;
		return py->snap->gone ? -ESRCH : 0;
	}
	/* Is this still the same thread's state? */
	if (rd64(ts, o->ts_interp) != t->interp || rd64(ts, o->ts_thread_id) != t->pthread) {
		*stale = true;
		return 0;
	}
	if (o->ts_native_thread_id >= 0) {
		if ((uint32_t)rd64(ts, o->ts_native_thread_id) != t->own_tid) {
			*stale = true;
			return 0;
		}
	} else if (py->pthread_tid_off >= 0 && (!py->seeded || py->read_ns - t->tid_checked_ns > TID_RECHECK_NS)) {
		/* glibc reuses a dead thread's struct pthread, and CPython may then
		 * reuse its thread state: the TID tells.  A copy made at the sample
		 * was found by the sampled TID, so it is checked only now and then. */
		const uint8_t *p = snap_get(py, t->pthread + py->pthread_tid_off, 4);
		if (p && (uint32_t)rd32(p, 0) == t->own_tid)
			t->tid_checked_ns = py->read_ns;
		else if (!(seed && py->snap->gone)) {   /* (exited since the sample: nothing to check) */
			*stale = true;
			return 0;
		}
	}
	int n = py_walk(py, t, ts, out, max, flags);
	py->seeded = false;
	/* The process exited after the sample, before ember drained it (the
	 * last tens of milliseconds of every run): frames copied at the
	 * sample still stand, named from the code cache; a live read has
	 * nothing to read. */
	if (py->snap->gone && !seed)
		return -ESRCH;
	snap_end(py, t);
	return n;
}

#define TORN_RETRIES 2

int py_read_thread(struct ember_python *py, uint32_t tid, const struct ember_copier_record *rec, uint64_t at_ns,
		   struct ember_py_frame *out, int max, uint32_t *flags)
{
	uint32_t fl = 0;
	int n = 0;

	py->st.reads++;
	/* When code objects were last validated (code_recheck_ms, evidence
	 * lookups) and the TID checked: a record's bytes are of the sample's
	 * instant (and no clock read is needed); a live read's are of now. */
	py->read_ns = rec && at_ns ? at_ns : py_now_ns();
	py->nfr_addrs = 0;
	if (flags)
		*flags = 0;
	if (py->dwarf_job)
		py_eval_dwarf_adopt(py);
	/* A torn read (a call or return happened while it ran) is retried: the
	 * retry's prefetch already has the new objects, so it is quick.  Frames
	 * copied at the sample are used by the first attempt only: torn there
	 * means the thread was between two states at the sample itself. */
	for (int torn_retry = 0; torn_retry < TORN_RETRIES + 1; torn_retry++) {
	for (int attempt = 0; attempt < 2; attempt++) {
		struct py_thread *t = py_thread_find(py, tid);
		if (!t) {
			if (attempt == 0 && py_now_ns() - py->last_scan_ns < SCAN_INTERVAL_NS)
				return 0;
			if (attempt == 1)
				return 0;
			int rc = py_scan_threads(py);
			if (rc == -ESRCH)
				return rc;
			t = py_thread_find(py, tid);
			if (!t)
				return 0;
		}
		bool stale;
		fl = 0;
		n = read_once(py, t, torn_retry == 0 ? rec : NULL, out, max, &fl, &stale);
		py->objs = NULL;   /* on every way out of read_once: the record is not ember's to keep */
		if (n < 0)
			return n;
		if (!stale) {
			if (rec && torn_retry == 0 && rec->tstate == t->tstate && rec->frame_len == py->fr_len &&
			    rec->code_len == py->co_len)
				fl |= EMBER_PY_AT_SAMPLE;
			py_copier_register(py, t);
			break;
		}
		/* thread state freed/reused: rescan once, immediately */
		t->tstate = 0;
		int rc = py_scan_threads(py);
		if (rc == -ESRCH)
			return rc;
		n = 0;
	}
	if (!(fl & EMBER_PY_TORN))
		break;
	py->st.torn_retries++;
	}
	if (fl & EMBER_PY_TORN)
		py->st.torn++;
	if (fl & EMBER_PY_UNREADABLE)
		py->st.unreadable++;
	if (fl & EMBER_PY_AT_SAMPLE)
		py->st.at_sample++;
	else if (py->dwarf_deferred && n > 0 && ++py->reads_without_copy >= DWARF_AFTER_READS && !py->dwarf_job) {
		/* Frames keep coming without a copy (BPF not attached, ember
		 * behind): the check against the sample needs the DWARF now. */
		py->dwarf_deferred = false;
		py_eval_dwarf_start(py, py->dwarf_path, py->dwarf_bias, false);
	}
	if (flags)
		*flags = fl;
	return n;
}

int ember_python_read_thread(struct ember_python *py, uint32_t tid, struct ember_py_frame *out, int max,
			     uint32_t *flags)
{
	return py_read_thread(py, tid, NULL, 0, out, max, flags);
}

int ember_python_read_sample(struct ember_python *py, uint32_t tid, uint64_t time_ns, struct ember_py_frame *out,
			     int max, uint32_t *flags)
{
	struct py_copier_read rd = { .tid = tid, .time_ns = time_ns, .out = out, .max = max, .flags = flags };
	/* With the frames copied at the sample if its record is found. */
	int n = py_copier_read(py, &rd) ? rd.n : py_read_thread(py, tid, NULL, time_ns, out, max, flags);
	/* No copy of a Python thread's frames: say whether the copier could
	 * have made one.  Until ember registers a thread its records hold no
	 * frames (its first samples; many when ember is late).  (Threads
	 * without a Python state, BLAS workers, are never registered.) */
	if (flags && py->copier && !(*flags & EMBER_PY_AT_SAMPLE)) {
		const struct py_thread *t = py_thread_find(py, tid);
		if (t && t->tstate && (!t->copier_tstate || t->copier_since_ns > time_ns))
			*flags |= EMBER_PY_BEFORE_COPIER;
	}
	return n;
}
