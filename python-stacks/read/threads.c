/* The thread table: the interpreters' thread states, each mapped to its OS
 * thread id (3.11+: native_thread_id; before: the TID inside glibc's
 * struct pthread at an offset calibrated against /proc/PID/task), and the
 * ids ember's samples carry when the target runs in a pid namespace of its
 * own.  Rebuilt by a scan; a thread keeps its prefetch plan across scans
 * while its state stays. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "grow.h"
#include "proc.h"
#include "py_read.h"

#define MAX_INTERPS 64
#define MAX_TSTATES 4096
#define PTHREAD_SCAN 2048              /* bytes of struct pthread searched for the TID */
#define CALIB_STRUCTS 16               /* struct pthreads compared */
#define TID_BATCH 256                  /* TIDs read per process_vm_readv */

void py_threads_init(struct ember_python *py)
{
	py->th->pthread_tid_off = -1;
	py->th->own_pid = (uint32_t)py->pid;
}

void py_threads_free(struct ember_python *py)
{
	for (size_t i = 0; i < py->th->n; i++)
		free(py->th->v[i].plan);
	free(py->th->v);
	py->th->v = NULL;
	py->th->n = py->th->cap = 0;
}

/* ------------------------------------------------------------- OS ids */

struct found {
	uint64_t tstate, interp, pthread;
	uint32_t tid;
};

/* The id a thread has in its own (innermost) pid namespace: the last
 * number of the NSpid line of its status; id itself when there is none
 * (kernels before 4.1) or it cannot be read. */
static uint32_t own_ns_id(uint32_t id)
{
	char line[256], *p = line, *end;
	uint32_t own = id;
	if (!ember_proc_status((pid_t)id, "NSpid", line, sizeof line))
		return id;
	for (unsigned long v; (v = strtoul(p, &end, 10)), end != p; p = end)
		own = (uint32_t)v;
	return own;
}

/* tids: the process's threads as ember sees them (its samples' ids); own
 * (may be NULL): the same threads' ids in the target's pid namespace, which
 * CPython records (native_thread_id, glibc's struct pthread) -- different
 * when the target runs in a container of its own. */
struct task_list {
	uint32_t *tids, *own;
	int n, max;
};

static bool add_task(void *arg, uint32_t tid)
{
	struct task_list *l = arg;
	if (l->n >= l->max)
		return false;
	l->tids[l->n] = tid;
	if (l->own)
		l->own[l->n] = own_ns_id(tid);
	l->n++;
	return true;
}

static int list_tasks(pid_t pid, uint32_t *tids, uint32_t *own, int max)
{
	struct task_list l = { tids, own, 0, max };
	int rc = ember_proc_tasks(pid, add_task, &l);
	return rc < 0 ? rc : l.n;
}

static bool in_set(const uint32_t *v, int n, uint32_t x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* The offset in bufs[0..nb) (struct pthreads) of an int32 slot that holds
 * a live TID (tasks) of this process in most structs, all distinct, and
 * the PID in the main thread's: -1 if none; *ncand the number of such
 * slots. */
static int tid_slot(const struct ember_python *py, uint8_t (*bufs)[PTHREAD_SCAN], int nb, const uint32_t *tasks,
		    int nt, int *ncand)
{
	int best = -1;
	*ncand = 0;
	for (int off = 0; off + 4 <= PTHREAD_SCAN; off += 4) {
		uint32_t seen[CALIB_STRUCTS];
		int live = 0;
		bool has_pid = false, dup = false;
		for (int k = 0; k < nb; k++) {
			uint32_t v;
			memcpy(&v, bufs[k] + off, 4);
			seen[k] = v;
			dup |= v && in_set(seen, k, v);
			if (v && in_set(tasks, nt, v))
				live++;
			has_pid |= v == py->th->own_pid;
		}
		/* The main thread's struct must hold the PID, and most of the
		 * others live TIDs: with threads coming and going, some structs
		 * in the list belong to threads that just exited (or are reused),
		 * so "every one" would reject the real slot under churn. */
		if (!has_pid || dup || live * 2 < nb)
			continue;
		(*ncand)++;
		if (best < 0 || off == EMBER_GLIBC_TID_OFF)
			best = off;
	}
	return best;
}

/* Find the offset of the TID inside struct pthread (ids of the target's
 * own pid namespace: tasks). */
static void calibrate_tid(struct ember_python *py, const struct found *f, int nf, const uint32_t *tasks, int nt)
{
	uint8_t (*bufs)[PTHREAD_SCAN] = malloc(CALIB_STRUCTS * PTHREAD_SCAN);
	int nb = 0, ncand;
	/* From the tail: new thread states go to the head of the list, so the
	 * main thread's (whose struct must hold the PID) is last, and with more
	 * than 16 threads it would otherwise never be looked at. */
	for (int i = nf - 1; bufs && nt > 0 && i >= 0 && nb < CALIB_STRUCTS; i--)
		if (rm_ptr_ok(f[i].pthread, 8) && rm_read(py->pid, f[i].pthread, bufs[nb], PTHREAD_SCAN, NULL, &py->syscalls))
			nb++;
	int best = nb ? tid_slot(py, bufs, nb, tasks, nt, &ncand) : -1;
	if (best >= 0) {
		py->th->pthread_tid_off = best;
		py->th->tid_calibrated = nb >= 2 || ncand == 1;
	}
	free(bufs);
}

/* <= 3.10: each thread state's TID, from its struct pthread. */
static void tids_from_pthread(struct ember_python *py, struct found *f, int nf, const uint32_t *own, int nt)
{
	if (!py->th->tid_calibrated)
		calibrate_tid(py, f, nf, own, nt);
	if (py->th->pthread_tid_off < 0)
		return;
	struct rm_req req[TID_BATCH];
	uint32_t tids[TID_BATCH];
	for (int base = 0; base < nf; base += TID_BATCH) {
		int m = nf - base < TID_BATCH ? nf - base : TID_BATCH;
		for (int i = 0; i < m; i++) {
			tids[i] = 0;
			req[i] = (struct rm_req){ f[base + i].pthread + py->th->pthread_tid_off, &tids[i], 4, false };
		}
		rm_readv(py->pid, req, m, NULL, &py->syscalls);
		for (int i = 0; i < m; i++)
			f[base + i].tid = req[i].ok ? tids[i] : 0;
	}
}

/* ------------------------------------------------------------- the scan */

/* Every interpreter's thread states into f (at most MAX_TSTATES): their
 * count, or -errno when the interpreter list cannot be read. */
static int read_tstates(struct ember_python *py, struct found *f)
{
	const struct py_offsets *o = &py->rt.off;
	uint8_t ts[1024];
	uint64_t interp = 0;
	int nf = 0, err = 0;
	if (!rm_read(py->pid, py->rt.interp_head_addr, &interp, 8, &err, &py->syscalls))
		return err == ESRCH ? -ESRCH : -EFAULT;
	for (int ni = 0; interp && ni < MAX_INTERPS; ni++) {
		if (!rm_ptr_ok(interp, 8))
			break;
		uint64_t tsa = 0, next = 0;
		if (!rm_read(py->pid, interp + o->is_tstate_head, &tsa, 8, NULL, &py->syscalls) ||
		    !rm_read(py->pid, interp + o->is_next, &next, 8, NULL, &py->syscalls))
			break;
		for (int k = 0; tsa && k < MAX_TSTATES && nf < MAX_TSTATES; k++) {
			if (!rm_ptr_ok(tsa, 8) || py->rt.ts_len > sizeof ts ||
			    !rm_read(py->pid, tsa, ts, py->rt.ts_len, NULL, &py->syscalls))
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
	return nf;
}

static struct py_thread *thread_slot(struct ember_python *py, uint32_t tid)
{
	struct py_threads *th = py->th;
	for (size_t i = 0; i < th->n; i++)
		if (th->v[i].tid == tid)
			return &th->v[i];
	if (EMBER_GROW(th->v, th->cap, th->n + 1) != 0)
		return NULL;
	struct py_thread *t = &th->v[th->n++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	return t;
}

/* The table from the thread states found (tids: ember's ids, own: the
 * target namespace's, nt of them), keeping the prefetch plans of threads
 * whose state stayed. */
static void rebuild(struct ember_python *py, const struct found *f, int nf, const uint32_t *tasks, const uint32_t *own,
		    int nt)
{
	struct py_threads *th = py->th;
	for (size_t i = 0; i < th->n; i++)
		th->v[i].interp = 0;   /* mark */
	for (int i = 0; i < nf; i++) {
		if (!f[i].tid)
			continue;
		uint32_t own_tid = f[i].tid, tid = own_tid;
		for (int k = 0; k < nt; k++)
			if (own[k] == own_tid) {
				tid = tasks[k];
				break;
			}
		struct py_thread *t = thread_slot(py, tid);
		if (!t)
			break;
		t->own_tid = own_tid;
		if (t->tstate != f[i].tstate)
			snap_plan_reset(t->plan);
		t->tstate = f[i].tstate;
		t->interp = f[i].interp;
		t->pthread = f[i].pthread;
	}
	size_t w = 0;
	for (size_t i = 0; i < th->n; i++) {
		if (th->v[i].interp)
			th->v[w++] = th->v[i];
		else
			free(th->v[i].plan);
	}
	th->n = w;
	th->last_hit = 0;
}

int py_scan_threads(struct ember_python *py)
{
	struct py_threads *th = py->th;
	struct found *f = malloc(MAX_TSTATES * sizeof *f);
	if (!f)
		return -ENOMEM;
	th->scans++;
	th->last_scan_ns = ember_now_ns();
	int nf = read_tstates(py, f);
	if (nf < 0) {
		free(f);
		return nf;
	}
	/* Ids as ember sees them, and as the target's namespace does: the same
	 * unless it runs in a pid namespace of its own (a process never
	 * changes namespace, so the main thread's NSpid is read once; the
	 * others' only then -- a scan runs at every miss, at most every 20 ms). */
	if (!th->own_pid_known) {
		th->own_pid = own_ns_id((uint32_t)py->pid);
		th->own_pid_known = true;
	}
	bool other_ns = th->own_pid != (uint32_t)py->pid;
	uint32_t *tasks = malloc(2 * MAX_TSTATES * sizeof *tasks), *own = tasks ? tasks + MAX_TSTATES : NULL;
	int nt = tasks ? list_tasks(py->pid, tasks, other_ns ? own : NULL, MAX_TSTATES) : 0;
	if (nt > 0 && !other_ns)
		memcpy(own, tasks, (size_t)nt * sizeof *own);
	if (py->rt.off.ts_native_thread_id < 0 && nf)
		tids_from_pthread(py, f, nf, own, nt);
	rebuild(py, f, nf, tasks, own, nt);
	free(tasks);
	free(f);
	return nf;
}

struct py_thread *py_thread_find(struct ember_python *py, uint32_t tid)
{
	struct py_threads *th = py->th;
	if (th->last_hit < th->n && th->v[th->last_hit].tid == tid)
		return &th->v[th->last_hit];
	for (size_t i = 0; i < th->n; i++)
		if (th->v[i].tid == tid) {
			th->last_hit = i;
			return &th->v[i];
		}
	return NULL;
}
