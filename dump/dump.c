/* ember dump (dump.h): each thread stopped in turn for its registers,
 * stack and Python frames; then unwound, symbolized and merged while
 * everything runs again. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_internal.h"
#include "dump_stop.h"
#include "grow.h"
#include "proc.h"
#include "process_model.h"
#include "python_stacks.h"
#include "session.h"
#include "strtab.h"
#include "unwinder.h"

/* Locals of every Python frame just read, while the thread is stopped. */
static void read_locals(struct dumper *dp)
{
	struct work *w = dp->w;
	struct ember_py_local tmp[MAX_LOCALS];
	for (int i = 0; i < w->npy; i++) {
		int n = ember_python_frame_locals(dp->py, (uint32_t)i, &w->py[i], tmp, MAX_LOCALS);
		if (n <= 0 || !(w->locals[i] = calloc((size_t)n, sizeof *w->locals[i])))
			continue;
		for (int k = 0; k < n; k++)
			w->locals[i][k] = (struct ember_dump_local){ dump_keep(dp, tmp[k].name), dump_keep(dp, tmp[k].value) };
		w->nlocals[i] = (uint32_t)n;
	}
}

static void while_stopped(void *arg, uint32_t tid)
{
	struct dumper *dp = arg;
	struct work *w = dp->w;
	if (!dp->py)
		return;
	w->npy = ember_python_read_thread(dp->py, tid, w->py, MAX_PY, &w->pyflags);
	if (w->npy < 0)
		w->npy = 0;
	if (dp->locals)
		read_locals(dp);
}

static int open_python(struct dumper *dp, char *msg, size_t msglen)
{
	struct ember_python_opts po = EMBER_PYTHON_OPTS_DEFAULT;
	po.verify = false;          /* the thread is stopped while it is read */
	po.no_debug_info = true;    /* frames read while stopped need no check against the stack */
	char why[256] = "";
	int rc = ember_python_open(&dp->py, dp->pid, &po, why, sizeof why);
	struct ember_dump *pub = &dp->d->pub;
	if (rc == EMBER_PY_OK) {
		char v[64];
		snprintf(v, sizeof v, "CPython %s", ember_python_version(dp->py));
		pub->python = dump_keep(dp, v);
		why[0] = 0;
		dp->locals = dp->o->locals && ember_python_locals_supported(dp->py, why, sizeof why);
		pub->locals_note = dump_keep(dp, dp->o->locals ? why : "");
		return EMBER_DUMP_OK;
	}
	dp->py = NULL;
	if (rc == EMBER_PY_GONE || rc == EMBER_PY_NO_ACCESS) {
		snprintf(msg, msglen, "%s", why);
		return rc == EMBER_PY_GONE ? EMBER_DUMP_GONE : EMBER_DUMP_NO_ACCESS;
	}
	pub->python_note = dump_keep(dp, rc == EMBER_PY_NOT_PYTHON ? "" : why);
	pub->locals_note = dump_keep(dp, dp->o->locals ? "not a Python process ember can read" : "");
	return EMBER_DUMP_OK;
}

static int cmp_tid(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

struct tid_list {
	uint32_t *tids;
	size_t n, cap;
};

static bool add_tid(void *arg, uint32_t tid)
{
	struct tid_list *l = arg;
	if (EMBER_GROW(l->tids, l->cap, l->n + 1) != 0)
		return false;   /* (out of memory: the threads listed so far) */
	l->tids[l->n++] = tid;
	return true;
}

/* The thread ids of pid, sorted (the main thread first); NULL when none. */
static uint32_t *list_tids(pid_t pid, size_t *n)
{
	struct tid_list l = { 0 };
	ember_proc_tasks(pid, add_tid, &l);
	if (l.n)
		qsort(l.tids, l.n, sizeof *l.tids, cmp_tid);
	*n = l.n;
	return l.tids;
}

static const char not_permitted[] = "not permitted to trace it";

static void take_thread(struct dumper *dp, uint32_t tid, struct ember_dump_thread *t)
{
	struct thread_proc pr;
	dump_thread_proc(dp->pid, tid, &pr);
	char pyname[128] = "";
	if (dp->py && ember_python_thread_name(dp->py, tid, pyname, sizeof pyname) <= 0)
		pyname[0] = 0;
	*t = (struct ember_dump_thread){
		.tid = tid, .comm = dump_keep(dp, pr.comm), .name = dump_keep(dp, pyname[0] ? pyname : pr.comm),
		.state = pr.state, .state_text = pr.state_text, .syscall = pr.syscall,
		.syscall_name = pr.syscall_name, .wchan = dump_keep(dp, pr.wchan),
	};
	struct work *w = dp->w;
	memset(w->locals, 0, sizeof w->locals);
	memset(w->nlocals, 0, sizeof w->nlocals);
	w->npy = 0;
	w->pyflags = 0;
	/* A first read before the stop: what it finds (the thread list, code
	 * objects, names) is cached, so the read while stopped is short. */
	if (dp->py)
		ember_python_read_thread(dp->py, tid, w->py, MAX_PY, NULL);
	int rc = dump_stop_thread(dp->pid, tid, &dp->regs, while_stopped, dp, dp->o->stopped_sleep_ms);
	t->pause_ns = dp->regs.pause_ns;
	t->stop_wait_ns = dp->regs.stop_wait_ns;
	if (rc != 0) {
		t->error = rc == -ESRCH ? "ended" : rc == -ETIMEDOUT ? "did not stop within a second" :
			   rc == -EPERM ? not_permitted : dump_keep(dp, strerror(-rc));
		for (int i = 0; i < w->npy; i++)
			free(w->locals[i]);
		return;
	}
	t->stopped = true;
	t->python = w->npy > 0;
	t->gil_known = (w->pyflags & EMBER_PY_GIL_KNOWN) != 0;
	t->holds_gil = (w->pyflags & EMBER_PY_HOLDS_GIL) != 0;
	struct unwind_input in = { .regs = dp->regs.regs, .stack = dp->regs.stack, .stack_len = dp->regs.stack_len,
				   .stack_reserved = DUMP_STACK_MAX };
	w->uflags = 0;
	w->nnat = unwind_sample(&dp->uw, dp->proc, &in, w->nat, EMBER_MAX_FRAMES, &w->uflags, NULL);
	t->nframes = dump_resolve(dp, w, t);
}

/* The process model of pid and the resolver of its stacks: every module
 * mapped now. */
static int setup_native(struct dumper *dp)
{
	if (process_model_init(&dp->pm) != 0)
		return -1;
	dp->native_ready = true;
	unwinder_init(&dp->uw);
	dp->proc = process_get(&dp->pm, dp->pid, true);
	if (!dp->proc || process_load_proc_maps(&dp->pm, dp->proc, true) != 0 || ember_profile_init(&dp->frames) != 0)
		return -1;
	dp->frames_ready = true;
	/* Python frames as co_filename has them */
	struct ember_resolver_opts ro = { .merge.native_unfiltered = dp->o->native_unfiltered, .full_filenames = true };
	if (!(dp->rv = ember_resolver_new(&dp->frames, &ro)))
		return -1;
	for (size_t m = 0; m < dp->pm.nmods; m++) {
		const struct module *mod = dp->pm.mods[m];
		struct ember_module_info mi = {
			.path = mod->path, .open_path = mod->open_path, .root = mod->root,
			.build_id = mod->map_build_id_len ? mod->map_build_id : NULL,
			.build_id_len = mod->map_build_id_len, .jit_pid = (uint32_t)mod->jit_pid,
		};
		if (ember_resolver_add_module(dp->rv, mod->id, &mi, NULL) != 0)
			return -1;
	}
	return 0;
}

static void describe_process(struct dumper *dp)
{
	char buf[4096];
	ssize_t n = ember_proc_read(dp->pid, "cmdline", buf, sizeof buf);
	for (ssize_t i = 0; i + 1 < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	dp->d->pub.cmdline = dump_keep(dp, n > 0 ? buf : "");
	dp->d->pub.exe = dump_keep(dp, ember_proc_exe(dp->pid, buf, sizeof buf) > 0 ? buf : "");
}

/* Why no thread of pid could be stopped: a process has one tracer at a
 * time, so one already traced (strace, gdb) refuses ptrace even to root;
 * else ember lacks the privilege. */
static void refused_message(pid_t pid, const uint32_t *tids, size_t n, char *msg, size_t msglen)
{
	pid_t tracer = 0;
	for (size_t i = 0; i < n && !tracer; i++)
		tracer = ember_proc_tracer((pid_t)tids[i]);
	if (!tracer) {
		snprintf(msg, msglen, "pid %d: not permitted to trace it (ptrace: root or CAP_SYS_PTRACE)", (int)pid);
		return;
	}
	char comm[64];
	if (ember_proc_read(tracer, "comm", comm, sizeof comm) <= 0)
		snprintf(comm, sizeof comm, "?");
	comm[strcspn(comm, "\n")] = 0;
	snprintf(msg, msglen, "pid %d: already being traced by pid %d (%s): a process has one tracer at a time; "
		 "detach it and run ember dump again", (int)pid, (int)tracer, comm);
}

static int take_all(struct dumper *dp, char *msg, size_t msglen)
{
	size_t n;
	uint32_t *tids = list_tids(dp->pid, &n);
	if (!tids || !n) {
		free(tids);
		snprintf(msg, msglen, "pid %d: no such process", (int)dp->pid);
		return EMBER_DUMP_GONE;
	}
	struct dump_owned *d = dp->d;
	int rc = EMBER_DUMP_OK;
	size_t refused = 0;
	if (EMBER_GROW(d->threads, d->cap, n) != 0)
		rc = EMBER_DUMP_ERROR;
	for (size_t i = 0; rc == EMBER_DUMP_OK && i < n; i++) {
		struct ember_dump_thread *t = &d->threads[d->pub.nthreads++];
		take_thread(dp, tids[i], t);
		d->pub.pause_total_ns += t->pause_ns;
		if (t->pause_ns > d->pub.pause_max_ns)
			d->pub.pause_max_ns = t->pause_ns;
		if (t->stop_wait_ns > d->pub.stop_wait_max_ns)
			d->pub.stop_wait_max_ns = t->stop_wait_ns;
		refused += t->error == not_permitted;
	}
	if (rc == EMBER_DUMP_OK && refused == n) {
		refused_message(dp->pid, tids, n, msg, msglen);
		rc = EMBER_DUMP_NO_ACCESS;
	}
	free(tids);
	d->pub.threads = d->threads;
	if (rc == EMBER_DUMP_OK && ember_proc_gone(dp->pid)) {
		snprintf(msg, msglen, "pid %d: ended during the dump", (int)dp->pid);
		rc = EMBER_DUMP_GONE;
	}
	return rc;
}

static void dumper_free(struct dumper *dp)
{
	if (dp->py)
		ember_python_close(dp->py);
	ember_resolver_free(dp->rv);
	if (dp->frames_ready)
		ember_profile_free(&dp->frames);
	if (dp->native_ready) {
		unwinder_free(&dp->uw);
		process_model_free(&dp->pm);
	}
	free(dp->regs.stack);
	free(dp->w);
}

int ember_dump_take(pid_t pid, const struct ember_dump_opts *opts, struct ember_dump **out, char *msg, size_t msglen)
{
	static const struct ember_dump_opts none;
	struct dumper dp = { .pid = pid, .o = opts ? opts : &none };
	*out = NULL;
	msg[0] = 0;
	if (pid <= 0 || ember_proc_gone(pid)) {
		snprintf(msg, msglen, "pid %d: no such process", (int)pid);
		return EMBER_DUMP_GONE;
	}
	if (ember_proc_kthread(pid)) {
		snprintf(msg, msglen, "pid %d: a kernel thread, which has no user-space stack to dump", (int)pid);
		return EMBER_DUMP_GONE;
	}
	dp.d = calloc(1, sizeof *dp.d);
	dp.w = calloc(1, sizeof *dp.w);
	dp.regs.stack = malloc(DUMP_STACK_MAX);
	int rc = EMBER_DUMP_ERROR;
	if (dp.d && dp.w && dp.regs.stack && (dp.d->st = ember_strtab_new())) {
		dp.d->pub.pid = pid;
		dp.d->pub.python = dp.d->pub.python_note = dp.d->pub.locals_note = "";
		describe_process(&dp);
		rc = open_python(&dp, msg, msglen);
		if (rc == EMBER_DUMP_OK && setup_native(&dp) != 0) {
			snprintf(msg, msglen, "pid %d: cannot read its memory map", (int)pid);
			rc = ember_proc_gone(pid) ? EMBER_DUMP_GONE : EMBER_DUMP_ERROR;
		}
		if (rc == EMBER_DUMP_OK)
			rc = take_all(&dp, msg, msglen);
	} else {
		snprintf(msg, msglen, "out of memory");
	}
	dumper_free(&dp);
	if (rc == EMBER_DUMP_OK)
		*out = &dp.d->pub;
	else if (dp.d)
		ember_dump_free(&dp.d->pub);
	return rc;
}

void ember_dump_free(struct ember_dump *pub)
{
	if (!pub)
		return;
	struct dump_owned *d = (struct dump_owned *)pub;
	for (uint32_t i = 0; i < pub->nthreads; i++) {
		for (uint32_t k = 0; k < d->threads[i].nframes; k++)
			free((void *)d->threads[i].frames[k].locals);
		free((void *)d->threads[i].frames);
	}
	free(d->threads);
	ember_strtab_free(d->st);
	free(d);
}
