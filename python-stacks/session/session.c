/* The session: one reader per target process, its retries while the
 * process is not Python yet, the read of each sample's Python frames, and
 * the Python names of its threads (session.h has the contract). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "grow.h"
#include "hash.h"
#include "idtab.h"
#include "proc.h"
#include "py_runtime.h"
#include "session.h"

/* Where the two sides of the probe layout meet: the reader takes the
 * sampler's probes as its evidence, index for index. */
_Static_assert(EMBER_PY_EVIDENCE_REGS == EMBER_PROBE_REGS, "the reader's registers are the sampler's");
_Static_assert(EMBER_PY_EVIDENCE_MAX >= EMBER_PROBE_CANDIDATES, "every probe candidate fits the evidence");

#define NAME_REFRESH_NS 1000000000ull   /* re-read a thread's Python name at most this often */
#define NAME_RETRY_NS 100000000ull      /* first retry while none is known, doubling up to 1 s */
#define NAME_RETRIES 3                  /* ... this many times (0.1, 0.2, 0.4 s), then 1 s */
#define NAME_MAX_BYTES 128
#define OPEN_WAIT_NS 5000000ull         /* first wait before trying a process again */
#define OPEN_WAIT_MAX_NS 500000000ull   /* ... doubling up to this */
#define OPEN_FAST_TRIES 20              /* a runtime found but not ready: tries at the first wait */

/* One thread's Python name. */
struct py_tname {
	uint32_t tid;
	uint32_t misses;              /* reads in a row that found no name */
	uint64_t next_ns;             /* sample time from which it is read again */
	char *name;                   /* NULL: no name found yet */
};

struct py_proc {
	uint32_t pid;
	struct py_tname *names;       /* indexed by the ids of by_tid */
	size_t nnames, names_cap;
	struct ember_idtab by_tid;
	struct ember_python *py;      /* NULL: not Python (yet), or refused */
	uint64_t next_try_ns;
	uint32_t open_tries;          /* failed ember_python_open calls in a row */
	uint32_t tried_gen;           /* the sample's code_gen at the last try */
	uint32_t tries_total;         /* failed ember_python_open calls in all */
	uint64_t samples, unread;     /* its samples; those before the runtime was found */
	uint64_t in_eval, eval_unread;/* samples in its eval loop; those whose read found no frames */
	char failed[256];             /* why the last failed try failed */
	int status;                   /* last ember_python_open result */
	char msg[256];
	char cmdline[256];
};

/* A copier_later load, on its thread: it writes copier, status and msg,
 * then done; the session reads them after done (and the join). */
struct copier_load {
	pthread_t thread;
	struct ember_py_copier_opts opts;
	struct ember_py_copier *copier;
	int status;
	char msg[256];
	uint64_t cpu_ns;              /* the thread's CPU time: the kernel's check, mostly */
	atomic_bool done;
};

struct ember_py_session {
	struct ember_py_session_opts opts;
	struct ember_py_copier *copier; /* NULL when off, refused, or not loaded yet */
	char copier_msg[256];         /* why it is not used ("" when it is, or was not asked for) */
	enum ember_py_copier_state copier_state;
	struct copier_load *load;     /* while EMBER_PY_COPIER_LOADING */
	uint64_t load_start_ns, load_wait_ns, load_cpu_ns;
	struct py_proc **procs;       /* stable pointers: the probe hook keeps the last one */
	size_t nprocs, cap;
	struct ember_idtab by_pid;
	uint64_t setup_ns;
	struct py_proc *last;         /* ember_py_session_is_eval's last process */
	struct ember_py_evidence ev[EMBER_MAX_PROBES];   /* ember_py_session_check */
};

static void *copier_load_run(void *arg)
{
	struct copier_load *l = arg;
	struct timespec t0, t1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	l->status = ember_py_copier_open(&l->copier, &l->opts, l->msg, sizeof l->msg);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	l->cpu_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
	atomic_store(&l->done, true);
	return NULL;
}

/* copier_later: load the copier on its own thread, from now. */
static void copier_load_start(struct ember_py_session *s)
{
	struct copier_load *l = calloc(1, sizeof *l);
	if (!l) {
		snprintf(s->copier_msg, sizeof s->copier_msg, "cannot load the BPF frame copier: out of memory");
		s->copier_state = EMBER_PY_COPIER_OFF;
		return;
	}
	l->opts = s->opts.copier_opts;
	atomic_init(&l->done, false);
	int rc = pthread_create(&l->thread, NULL, copier_load_run, l);
	if (rc != 0) {
		snprintf(s->copier_msg, sizeof s->copier_msg, "cannot load the BPF frame copier: %s", strerror(rc));
		s->copier_state = EMBER_PY_COPIER_OFF;
		free(l);
		return;
	}
	s->load = l;
	s->load_start_ns = ember_now_ns();
	s->copier_state = EMBER_PY_COPIER_LOADING;
}

/* The load's result, after its thread has ended (waits for it). */
static void copier_load_finish(struct ember_py_session *s)
{
	struct copier_load *l = s->load;
	pthread_join(l->thread, NULL);
	s->load = NULL;
	s->load_wait_ns = ember_now_ns() - s->load_start_ns;
	s->load_cpu_ns = l->cpu_ns;
	if (l->status == EMBER_PY_OK && l->copier) {
		s->copier = l->copier;
		s->copier_state = EMBER_PY_COPIER_ON;
		/* Processes found before: their threads are told to the copier
		 * from their next read on. */
		for (size_t i = 0; i < s->nprocs; i++)
			if (s->procs[i]->py)
				ember_python_set_copier(s->procs[i]->py, s->copier);
	} else {
		snprintf(s->copier_msg, sizeof s->copier_msg, "%s", l->msg);
		s->copier_state = EMBER_PY_COPIER_OFF;
	}
	free(l);
}

struct ember_py_session *ember_py_session_new(const struct ember_py_session_opts *o)
{
	struct ember_py_session *s = calloc(1, sizeof *s);
	if (!s || ember_idtab_init(&s->by_pid) != 0) {
		free(s);
		return NULL;
	}
	s->opts = *o;
	if (!o->copier)
		s->copier_state = EMBER_PY_COPIER_OFF;
	else if (o->copier_later && o->copier_on_python)
		s->copier_state = EMBER_PY_COPIER_LATER;
	else if (o->copier_later)
		copier_load_start(s);
	else if (ember_py_copier_open(&s->copier, &o->copier_opts, s->copier_msg, sizeof s->copier_msg) == EMBER_PY_OK)
		s->copier_state = EMBER_PY_COPIER_ON;
	else
		s->copier = NULL;
	return s;
}

bool ember_py_session_copier_poll(struct ember_py_session *s)
{
	if (s->copier_state != EMBER_PY_COPIER_LOADING || !atomic_load(&s->load->done))
		return false;
	copier_load_finish(s);
	return s->copier_state == EMBER_PY_COPIER_ON;
}

enum ember_py_copier_state ember_py_session_copier_state(const struct ember_py_session *s)
{
	return s->copier_state;
}

uint64_t ember_py_session_copier_wait_ns(const struct ember_py_session *s)
{
	return s->load_wait_ns;
}

uint64_t ember_py_session_copier_load_cpu_ns(const struct ember_py_session *s)
{
	return s->load_cpu_ns;
}

void ember_py_session_free(struct ember_py_session *s)
{
	if (!s)
		return;
	if (s->load)
		copier_load_finish(s);   /* (the kernel's check ends in at most about a second) */
	for (size_t i = 0; i < s->nprocs; i++) {
		struct py_proc *p = s->procs[i];
		if (p->py)
			ember_python_close(p->py);
		for (size_t k = 0; k < p->nnames; k++)
			free(p->names[k].name);
		free(p->names);
		ember_idtab_free(&p->by_tid);
		free(p);
	}
	free(s->procs);
	ember_idtab_free(&s->by_pid);
	ember_py_copier_close(s->copier);
	free(s);
}

int ember_py_session_copier_fd(const struct ember_py_session *s)
{
	return s->copier ? ember_py_copier_prog_fd(s->copier) : 0;
}

int ember_py_session_wake_fd(const struct ember_py_session *s)
{
	return s->copier && !s->opts.no_copy_use ? ember_py_copier_wake_fd(s->copier) : -1;
}

const char *ember_py_session_copier_note(const struct ember_py_session *s)
{
	return s->copier_msg;
}

bool ember_py_session_copier_unrolled(const struct ember_py_session *s)
{
	return ember_py_copier_unrolled(s->copier);
}

const char *ember_py_session_switch_note(const struct ember_py_session *s)
{
	return ember_py_copier_switch_note(s->copier);
}

void ember_py_session_copier_stats(const struct ember_py_session *s, struct ember_py_copier_stats *out)
{
	ember_py_copier_stats(s->copier, out);
}

void ember_py_session_consume(struct ember_py_session *s)
{
	ember_py_copier_consume(s->copier);
}

uint64_t ember_py_session_setup_ns(const struct ember_py_session *s)
{
	return s->setup_ns;
}

/* The command line while the process is alive, NULs as spaces, for labels. */
static void read_cmdline(uint32_t pid, char *out, size_t size)
{
	ssize_t n = ember_proc_read((pid_t)pid, "cmdline", out, size);
	if (n <= 0) {
		out[0] = 0;
		return;
	}
	while (n > 0 && out[n - 1] == 0)
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == 0)
			out[i] = ' ';
	out[n] = 0;
}

static bool proc_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ember_py_session *s = ctx;
	return s->procs[id]->pid == *(const uint32_t *)key;
}

static struct py_proc *find_proc(const struct ember_py_session *s, uint32_t pid)
{
	uint32_t id = ember_idtab_find(&s->by_pid, ember_hash_mix(pid), proc_eq, s, &pid);
	return id == UINT32_MAX ? NULL : s->procs[id];
}

static struct py_proc *get_proc(struct ember_py_session *s, uint32_t pid)
{
	struct py_proc *p = find_proc(s, pid);
	if (p)
		return p;
	if (EMBER_GROW(s->procs, s->cap, s->nprocs + 1) != 0 || !(p = calloc(1, sizeof *p)))
		return NULL;
	if (ember_idtab_init(&p->by_tid) != 0 ||
	    ember_idtab_insert(&s->by_pid, ember_hash_mix(pid), (uint32_t)s->nprocs) != 0) {
		ember_idtab_free(&p->by_tid);
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->status = -1;
	s->procs[s->nprocs++] = p;
	return p;
}

static bool name_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct py_proc *p = ctx;
	return p->names[id].tid == *(const uint32_t *)key;
}

static struct py_tname *find_name(const struct py_proc *p, uint32_t tid)
{
	uint32_t id = ember_idtab_find(&p->by_tid, ember_hash_mix(tid), name_eq, p, &tid);
	return id == UINT32_MAX ? NULL : &p->names[id];
}

/* The name entry of tid, added if new; NULL on OOM. */
static struct py_tname *name_entry(struct py_proc *p, uint32_t tid)
{
	struct py_tname *e = find_name(p, tid);
	if (e)
		return e;
	if (EMBER_GROW(p->names, p->names_cap, p->nnames + 1) != 0 ||
	    ember_idtab_insert(&p->by_tid, ember_hash_mix(tid), (uint32_t)p->nnames) != 0)
		return NULL;
	e = &p->names[p->nnames++];
	*e = (struct py_tname){ .tid = tid };
	return e;
}

/* Read the Python name of a thread that has Python frames: the first time
 * it is seen, then when the last read is a second old (a thread may be
 * renamed). While none is known (threading not imported yet, the thread
 * not registered yet) the retries start sooner and back off to the same
 * second, so short runs get names too and nameless threads cost little.
 * A read that finds nothing keeps the name known before. Cost per sample
 * otherwise: one hash lookup. */
static void refresh_name(struct py_proc *p, uint32_t tid, uint64_t now_ns)
{
	struct py_tname *e = name_entry(p, tid);
	if (!e || now_ns < e->next_ns)
		return;
	char buf[NAME_MAX_BYTES];
	int n = ember_python_thread_name(p->py, tid, buf, sizeof buf);
	e->misses = n > 0 ? 0 : e->misses + 1;
	uint64_t wait = NAME_REFRESH_NS;
	if (!e->name && e->misses && e->misses <= NAME_RETRIES)
		wait = NAME_RETRY_NS << (e->misses - 1);
	e->next_ns = now_ns + wait;
	if (n <= 0 || (e->name && strcmp(e->name, buf) == 0))
		return;
	char *copy = strdup(buf);
	if (copy) {
		free(e->name);
		e->name = copy;
	}
}

/* When to try a process that is not Python (yet) again. It may exec an
 * interpreter later (then, or when it maps libpython, the sample's code
 * generation changes and it is tried at once), else soon at first, then
 * every 0.5 s. A runtime found but not ready (its version not in memory
 * yet: it is starting) every 5 ms for 0.1 s: each try missed loses the
 * frames of the samples in between for good. */
static uint64_t open_wait_ns(const struct py_proc *p)
{
	uint32_t shift = p->open_tries < 7 ? p->open_tries : 7;
	if (p->status != EMBER_PY_NOT_PYTHON && p->open_tries < OPEN_FAST_TRIES)
		shift = 0;
	uint64_t wait = OPEN_WAIT_NS << shift;
	return wait < OPEN_WAIT_MAX_NS ? wait : OPEN_WAIT_MAX_NS;
}

/* Open p's reader when it is due; whether p has one now. */
static bool open_reader(struct ember_py_session *s, struct py_proc *p, const struct ember_sample *smp)
{
	uint64_t t = ember_now_ns();
	if (p->open_tries && smp->code_gen != p->tried_gen)
		p->open_tries = 0;
	else if (t < p->next_try_ns || p->status == EMBER_PY_UNSUPPORTED || p->status == EMBER_PY_GONE)
		return false;
	p->tried_gen = smp->code_gen;
	if (!p->cmdline[0])
		read_cmdline(smp->pid, p->cmdline, sizeof p->cmdline);
	struct ember_python_opts o = EMBER_PYTHON_OPTS_DEFAULT;
	/* One remote range fewer per read: the GIL only when asked for. Code
	 * objects stay re-validated at every read (code_recheck_ms 0): a
	 * module's code is freed after its import and the next module's often
	 * lands at the same address within milliseconds. */
	o.no_gil_check = !s->opts.gil;
	o.no_debug_info = s->opts.no_debug_info;
	/* Frames copied at the sample need no DWARF: read it only if reads
	 * keep coming without a copy. */
	o.defer_debug_info = s->copier != NULL;
	p->status = ember_python_open(&p->py, (pid_t)smp->pid, &o, p->msg, sizeof p->msg);
	if (p->status != EMBER_PY_OK) {
		p->py = NULL;
		p->next_try_ns = t + open_wait_ns(p);
		p->open_tries++;
		p->tries_total++;
		snprintf(p->failed, sizeof p->failed, "%s", p->msg);
		s->setup_ns += ember_now_ns() - t;
		return false;
	}
	if (s->opts.start_stall_ms > 0) {
		poll(NULL, 0, s->opts.start_stall_ms);
		s->opts.start_stall_ms = 0;
	}
	read_cmdline(smp->pid, p->cmdline, sizeof p->cmdline);
	ember_python_set_copier(p->py, s->copier);
	if (s->copier_state == EMBER_PY_COPIER_LATER)
		copier_load_start(s);
	s->setup_ns += ember_now_ns() - t;
	return true;
}

int ember_py_session_read(struct ember_py_session *s, const struct ember_sample *smp, struct ember_py_frame *out,
			  int max, uint32_t *flags, uint32_t *peer)
{
	*flags = 0;
	*peer = 0;
	struct py_proc *p = get_proc(s, smp->pid);
	if (!p)
		return 0;
	p->samples++;
	if (!p->py && !open_reader(s, p, smp)) {
		p->unread++;
		return 0;
	}
	int n = s->opts.no_copy_use ? ember_python_read_thread(p->py, smp->tid, out, max, flags)
				    : ember_python_read_sample(p->py, smp->tid, smp->time_ns, out, max, flags, peer);
	return n < 0 ? 0 : n;
}

void ember_py_session_set_peer(struct ember_py_session *s, uint32_t pid, uint32_t tid, uint32_t peer)
{
	struct py_proc *p = find_proc(s, pid);
	if (p && p->py)
		ember_python_set_peer(p->py, tid, peer);
}

int ember_py_session_read_peer(struct ember_py_session *s, uint32_t pid, uint32_t peer, struct ember_py_frame *out,
			       int max, uint32_t *flags)
{
	*flags = 0;
	struct py_proc *p = find_proc(s, pid);
	int n = p && p->py ? ember_python_read_thread(p->py, peer, out, max, flags) : 0;
	if (n <= 0 || (*flags & (EMBER_PY_TORN | EMBER_PY_UNREADABLE))) {
		*flags = 0;
		return 0;
	}
	*flags |= EMBER_PY_PEER;
	return n;
}

void ember_py_session_names(struct ember_py_session *s, const struct ember_sample *smp)
{
	struct py_proc *p = find_proc(s, smp->pid);
	if (p && p->py)
		refresh_name(p, smp->tid, smp->time_ns);
}

const char *ember_py_session_thread_name(const struct ember_py_session *s, uint32_t pid, uint32_t tid)
{
	const struct py_proc *p = find_proc(s, pid);
	const struct py_tname *e = p ? find_name(p, tid) : NULL;
	return e ? e->name : NULL;
}

bool ember_py_session_is_eval(void *session, uint32_t pid, uint64_t pc)
{
	struct ember_py_session *s = session;
	if (!s->last || s->last->pid != pid)
		s->last = find_proc(s, pid);
	return s->last && s->last->py && ember_python_is_eval(s->last->py, pc);
}

int ember_py_session_check(struct ember_py_session *s, const struct ember_sample *smp, uint64_t read_lag_ns,
			   struct ember_py_frame *frames, int n, int max, uint32_t *flags)
{
	struct py_proc *p = find_proc(s, smp->pid);
	if (!p || !p->py || !smp->nprobes)
		return n;
	uint32_t nev = 0;
	for (uint32_t i = smp->nprobes; i-- > 0;) {       /* root first */
		const struct ember_frame_probe *pr = &smp->probes[i];
		s->ev[nev++] = (struct ember_py_evidence){ .pc = pr->pc, .leaf = pr->leaf, .vals = pr->cand,
							   .n = pr->ncand };
	}
	int got = ember_python_reconcile(p->py, s->ev, nev, (smp->flags & EMBER_SAMPLE_TRUNCATED) != 0, read_lag_ns,
					 frames, n, max, flags);
	/* The eval loop ran, yet the interpreter's state gave no frames. */
	p->in_eval++;
	p->eval_unread += got <= 0 || (*flags & EMBER_PY_UNREADABLE);
	return got;
}

void ember_py_session_totals(const struct ember_py_session *s, uint64_t *checked, uint64_t *corrected)
{
	*checked = *corrected = 0;
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i]->py) {
			struct ember_python_stats st;
			ember_python_stats(s->procs[i]->py, &st);
			*checked += st.checked;
			*corrected += st.corrected;
		}
}

const struct ember_python *ember_py_session_reader(const struct ember_py_session *s, uint32_t pid)
{
	const struct py_proc *p = find_proc(s, pid);
	return p ? p->py : NULL;
}

const char *ember_py_session_cmdline(const struct ember_py_session *s, uint32_t pid)
{
	const struct py_proc *p = find_proc(s, pid);
	return p ? p->cmdline : "";
}

void ember_py_session_report(const struct ember_py_session *s, FILE *out)
{
	uint64_t gone = 0, gone_samples = 0;
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct py_proc *p = s->procs[i];
		if (!p->py && p->status == EMBER_PY_GONE) {
			/* Short-lived children: one line for all of them, below. */
			gone++;
			gone_samples += p->samples;
		} else if (p->py) {
			fprintf(out, "ember: pid %u: Python %s (%s)\n", p->pid, ember_python_version(p->py),
				ember_python_describe(p->py));
			/* Frames of samples before the runtime was found are lost:
			 * say so when it is more than the dynamic loader's few. */
			if (p->unread * 100 > p->samples)
				fprintf(out, "ember: pid %u: %" PRIu64 " of %" PRIu64 " samples before its runtime was "
					"found (%u tries; the last failed: %s) have no Python frames\n", p->pid,
					p->unread, p->samples, p->tries_total + 1, p->failed);
			/* Most reads failing where the eval loop ran: not a thread
			 * caught starting, but state that cannot be read (garbage,
			 * a layout not the version's). */
			if (p->eval_unread * 2 > p->in_eval)
				fprintf(out, "ember: pid %u: its Python interpreter state could not be read (%" PRIu64 " of "
					"%" PRIu64 " samples in the eval loop found no Python frames): those keep their native "
					"frames, marked [python frames uncertain]\n", p->pid, p->eval_unread, p->in_eval);
		} else if (p->status == EMBER_PY_UNSUPPORTED || p->status == EMBER_PY_NO_ACCESS ||
			   p->status == EMBER_PY_ERROR) {
			/* The reader's messages may name the pid already. */
			char pid_prefix[32];
			int n = snprintf(pid_prefix, sizeof(pid_prefix), "pid %u: ", p->pid);
			const char *why = strncmp(p->msg, pid_prefix, (size_t)n) == 0 ? p->msg + n : p->msg;
			fprintf(out, "ember: pid %u: native profile only: %s\n", p->pid, why);
		}
	}
	if (gone)
		fprintf(out, "ember: %" PRIu64 " process%s (%" PRIu64 " sample%s) ended before ember could look for a "
			"Python runtime in %s: native frames only\n", gone, gone == 1 ? "" : "es", gone_samples,
			gone_samples == 1 ? "" : "s", gone == 1 ? "it" : "them");
}

bool ember_py_session_any(const struct ember_py_session *s)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i]->py)
			return true;
	return false;
}

bool ember_py_session_refused(const struct ember_py_session *s)
{
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct py_proc *p = s->procs[i];
		if (!p->py && (p->status == EMBER_PY_UNSUPPORTED || p->status == EMBER_PY_NO_ACCESS ||
			       p->status == EMBER_PY_ERROR))
			return true;
	}
	return false;
}

static bool python_basename(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	return strncmp(b, "python", 6) == 0 || strncmp(b, "pypy", 4) == 0;
}

static bool maps_libpython(void *arg, const struct ember_proc_map *m)
{
	bool *found = arg;
	*found = strstr(m->path, "libpython") != NULL;
	return !*found;
}

/* Whether a script's #! line names python (PATH lookup as execvp does). */
static bool script_is_python(const char *cmd)
{
	char path[4096], buf[256];
	FILE *f = NULL;
	if (strchr(cmd, '/')) {
		f = fopen(cmd, "re");
	} else {
		const char *env = getenv("PATH");
		for (const char *p = env ? env : "/usr/bin:/bin"; p && *p && !f;) {
			const char *c = strchr(p, ':');
			size_t len = c ? (size_t)(c - p) : strlen(p);
			snprintf(path, sizeof path, "%.*s/%s", (int)len, p, cmd);
			f = fopen(path, "re");
			p = c ? c + 1 : NULL;
		}
	}
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	return n > 2 && buf[0] == '#' && buf[1] == '!' && strstr(strtok(buf, "\n"), "python") != NULL;
}

/* Commands that run another command given later in their arguments
 * (after their own options): `chroot ROOT python3 x.py`, `env -i python3`. */
static bool launcher(const char *path)
{
	static const char *const names[] = { "chroot", "unshare", "nsenter", "env", "nice", "ionice", "taskset",
					     "numactl", "chrt", "setpriv", "setarch", "prlimit", "timeout", "stdbuf",
					     "sudo", "doas", "runuser", "time", "exec" };
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(b, names[i]) == 0)
			return true;
	return false;
}

bool ember_py_target_likely(pid_t pid, char *const *argv)
{
	if (pid <= 0) {
		if (python_basename(argv[0]) || script_is_python(argv[0]))
			return true;
		for (size_t i = 1; launcher(argv[0]) && argv[i]; i++)
			if (python_basename(argv[i]))
				return true;
		return false;
	}
	char exe[4096];
	if (ember_proc_exe(pid, exe, sizeof exe) > 0 && python_basename(exe))
		return true;
	bool found = false;
	ember_proc_maps(pid, maps_libpython, &found);
	return found;
}

uint8_t ember_py_eval_class(const struct ember_python *py)
{
	return py->rt.major == 2 ? EMBER_NATIVE_EVAL_EX : EMBER_NATIVE_EVAL;
}

uint8_t ember_py_frame_class(const struct ember_python *py, uint8_t cls, const char *path, uint64_t vaddr)
{
	if (py && path && !(cls & (EMBER_NATIVE_EVAL | EMBER_NATIVE_EVAL_EX)) && ember_python_is_eval_vaddr(py, path, vaddr))
		cls |= ember_py_eval_class(py) | EMBER_NATIVE_INTERP;
	return cls;
}
