/* Capture side of Python merging: one ember_python reader per target
 * process, opened on the first sample of that process (and retried while
 * it is not Python yet, after 5 ms doubling to every 0.5 s: a launched
 * shell may exec python later, an interpreter may still be loading), and
 * a read of the sampled thread's Python frames right after its native
 * sample.  Python thread names (threading.Thread.name) are read
 * here too, while the target runs: when a thread is first seen with Python
 * frames, then at most once a second, once that sample is stored. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "python_stacks.h"

#define NAME_REFRESH_NS 1000000000ull   /* re-read a thread's Python name at most this often */
#define NAME_RETRY_NS 100000000ull      /* first retry while none is known, doubling up to 1 s */
#define NAME_MAX_BYTES 128

/* One thread's Python name; tid 0 = free slot of the table. */
struct py_tname {
	uint32_t tid;
	uint32_t misses;              /* reads in a row that found no name */
	uint64_t next_ns;             /* sample time from which it is read again */
	char *name;                   /* NULL: no name found yet */
};

struct py_proc {
	uint32_t pid;
	struct py_tname *names;       /* open addressing by tid, power-of-two capacity */
	size_t nnames, names_cap;
	struct ember_python *py;      /* NULL: not Python (yet), or refused */
	uint64_t next_try_ns;
	uint32_t open_tries;          /* failed ember_python_open calls so far */
	uint32_t tried_gen;           /* the sample's code_gen at the last try */
	uint32_t tries_total;         /* failed ember_python_open calls in all */
	uint64_t samples, unread;     /* its samples; those before the runtime was found */
	char failed[256];             /* why the last failed try failed */
	int status;                   /* last ember_python_open result */
	char msg[256];
	char cmdline[256];
	bool reported;
};

struct python_capture {
	bool gil;                     /* find out who holds the GIL (--gil) */
	struct ember_py_sampletime *sf; /* the in-kernel frame copier, NULL when off or refused */
	char sf_msg[256];             /* why it is not used ("" when it is, or was not asked for) */
	bool test_no_copy;            /* EMBER_TEST_PY_NO_COPY: read every sample after it */
	int test_start_stall_ms;      /* EMBER_TEST_START_STALL_MS: sleep once a runtime is first
	                               * found, before its first read (ember held back as the
	                               * Python thread starts) */
	struct py_proc *procs;
	size_t nprocs, cap;
	uint64_t reads, torn;
	uint64_t setup_ns;            /* time spent finding runtimes (python_capture_setup_ns) */
	struct py_proc *last;         /* python_capture_is_eval's last process */
	struct ember_py_evidence ev[EMBER_MAX_PROBES];   /* python_capture_check */
};

uint64_t cli_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct python_capture *python_capture_new(bool gil, bool sample_time)
{
	struct python_capture *pc = calloc(1, sizeof(struct python_capture));
	if (!pc)
		return NULL;
	pc->gil = gil;
	if (sample_time && ember_py_sampletime_open(&pc->sf, pc->sf_msg, sizeof pc->sf_msg) != EMBER_PY_OK)
		pc->sf = NULL;
	/* Test knob: the copier loaded but its copies unused, as when ember
	 * falls behind (the eval loop's DWARF must then be read after all). */
	pc->test_no_copy = getenv("EMBER_TEST_PY_NO_COPY") != NULL;
	const char *stall = getenv("EMBER_TEST_START_STALL_MS");
	pc->test_start_stall_ms = stall ? atoi(stall) : 0;
	return pc;
}

int python_capture_bpf_fd(const struct python_capture *pc)
{
	return pc->sf ? ember_py_sampletime_prog_fd(pc->sf) : 0;
}

int python_capture_wake_fd(const struct python_capture *pc)
{
	return pc->sf && !pc->test_no_copy ? ember_py_sampletime_wake_fd(pc->sf) : -1;
}

uint64_t python_capture_setup_ns(const struct python_capture *pc)
{
	return pc->setup_ns;
}

void python_capture_consume(struct python_capture *pc)
{
	ember_py_sampletime_consume(pc->sf);
}

const char *python_capture_bpf_note(const struct python_capture *pc)
{
	return pc->sf_msg;
}

void python_capture_bpf_stats(const struct python_capture *pc, struct ember_py_sampletime_stats *out)
{
	ember_py_sampletime_stats(pc->sf, out);
}

void python_capture_free(struct python_capture *pc)
{
	if (!pc)
		return;
	for (size_t i = 0; i < pc->nprocs; i++) {
		struct py_proc *p = &pc->procs[i];
		if (p->py)
			ember_python_close(p->py);
		for (size_t k = 0; k < p->names_cap; k++)
			free(p->names[k].name);
		free(p->names);
	}
	free(pc->procs);
	ember_py_sampletime_close(pc->sf);
	free(pc);
}

static void read_cmdline(uint32_t pid, char *out, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%u/cmdline", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, size - 1) : -1;
	if (fd >= 0)
		close(fd);
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

static struct py_proc *get_proc(struct python_capture *pc, uint32_t pid)
{
	for (size_t i = 0; i < pc->nprocs; i++)
		if (pc->procs[i].pid == pid)
			return &pc->procs[i];
	if (pc->nprocs == pc->cap) {
		size_t ncap = pc->cap ? pc->cap * 2 : 8;
		struct py_proc *p = realloc(pc->procs, ncap * sizeof *p);
		if (!p)
			return NULL;
		pc->procs = p;
		pc->cap = ncap;
		pc->last = NULL;
	}
	struct py_proc *p = &pc->procs[pc->nprocs++];
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->status = -1;
	return p;
}

static size_t name_slot(const struct py_tname *v, size_t cap, uint32_t tid)
{
	size_t i = (size_t)((tid * 0x9e3779b97f4a7c15ull) >> 40) & (cap - 1);
	while (v[i].tid && v[i].tid != tid)
		i = (i + 1) & (cap - 1);
	return i;
}

/* The slot of tid in p's name table, added if new; NULL on OOM. */
static struct py_tname *name_entry(struct py_proc *p, uint32_t tid)
{
	if ((p->nnames + 1) * 2 > p->names_cap) {
		size_t cap = p->names_cap ? p->names_cap * 2 : 64;
		struct py_tname *v = calloc(cap, sizeof *v);
		if (!v)
			return NULL;
		for (size_t i = 0; i < p->names_cap; i++)
			if (p->names[i].tid)
				v[name_slot(v, cap, p->names[i].tid)] = p->names[i];
		free(p->names);
		p->names = v;
		p->names_cap = cap;
	}
	struct py_tname *e = &p->names[name_slot(p->names, p->names_cap, tid)];
	if (!e->tid) {
		e->tid = tid;
		p->nnames++;
	}
	return e;
}

/* Read the Python name of a thread that has Python frames: the first time
 * it is seen, then when the last read is a second old (a thread may be
 * renamed).  While none is known (threading not imported yet, the thread
 * not registered yet) the retries start sooner and back off to the same
 * second, so short runs get names too and nameless threads cost little.
 * A read that finds nothing keeps the name known before.  Cost per sample
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
	if (!e->name && e->misses && e->misses < 4)
		wait = NAME_RETRY_NS << (e->misses - 1);   /* 0.1, 0.2, 0.4 s, then 1 s */
	e->next_ns = now_ns + wait;
	if (n <= 0 || (e->name && strcmp(e->name, buf) == 0))
		return;
	char *copy = strdup(buf);
	if (copy) {
		free(e->name);
		e->name = copy;
	}
}

int python_capture_read(struct python_capture *pc, const struct ember_sample *s, struct ember_py_frame *out,
			int max, uint32_t *flags)
{
	*flags = 0;
	struct py_proc *p = get_proc(pc, s->pid);
	if (!p)
		return 0;
	p->samples++;
	if (!p->py) {
		p->unread++;
		uint64_t t = cli_monotonic_ns();
		/* It mapped new code (libpython, after the dynamic loader) or
		 * exec'd since the last try: look again at once. */
		if (p->open_tries && s->code_gen != p->tried_gen)
			p->open_tries = 0;
		else if (t < p->next_try_ns || p->status == EMBER_PY_UNSUPPORTED)
			return 0;
		p->tried_gen = s->code_gen;
		/* The command line while the process is alive, for labels. */
		if (!p->cmdline[0])
			read_cmdline(s->pid, p->cmdline, sizeof p->cmdline);
		struct ember_python_opts o = EMBER_PYTHON_OPTS_DEFAULT;
		/* One remote range fewer per read: the GIL only when asked for.
		 * Code objects stay re-validated at every read (code_recheck_ms
		 * 0): a module's code is freed after its import and the next
		 * module's often lands at the same address within milliseconds. */
		o.no_gil_check = !pc->gil;
		/* Tests and bench compare the sample check with and without DWARF. */
		o.no_debug_info = getenv("EMBER_TEST_PY_NO_DWARF") != NULL;
		/* Frames copied at the sample need no DWARF: read it only if
		 * reads keep coming without a copy. */
		o.defer_debug_info = pc->sf != NULL;
		p->status = ember_python_open(&p->py, (pid_t)s->pid, &o, p->msg, sizeof p->msg);
		if (p->status != EMBER_PY_OK) {
			p->py = NULL;
			/* Not Python yet: it may exec an interpreter later (then,
			 * or when it maps libpython, the check above tries again at
			 * once), else soon at first, then every 0.5 s.  A runtime
			 * found but not ready (its version not in memory yet: it is
			 * starting) every 5 ms for 0.1 s: each try missed loses the
			 * frames of the samples in between for good (a 2.7 script
			 * that compressed at import had its first 0.5 s unread). */
			uint32_t shift = p->open_tries < 7 ? p->open_tries : 7;
			if (p->status != EMBER_PY_NOT_PYTHON && p->open_tries < 20)
				shift = 0;
			uint64_t wait = 5000000ull << shift;
			p->open_tries++;
			p->tries_total++;
			snprintf(p->failed, sizeof p->failed, "%s", p->msg);
			p->next_try_ns = t + (wait < 500000000ull ? wait : 500000000ull);
			pc->setup_ns += cli_monotonic_ns() - t;
			return 0;
		}
		p->unread--;
		if (pc->test_start_stall_ms > 0) {
			poll(NULL, 0, pc->test_start_stall_ms);
			pc->test_start_stall_ms = 0;
		}
		read_cmdline(s->pid, p->cmdline, sizeof p->cmdline);
		ember_python_set_sampletime(p->py, pc->sf);
		pc->setup_ns += cli_monotonic_ns() - t;
	}
	pc->reads++;
	int n = pc->test_no_copy ? ember_python_read_thread(p->py, s->tid, out, max, flags)
				 : ember_python_read_sample(p->py, s->tid, s->time_ns, out, max, flags);
	if (n < 0)
		return 0;
	if (*flags & EMBER_PY_TORN)
		pc->torn++;
	return n;
}

void python_capture_names(struct python_capture *pc, const struct ember_sample *s)
{
	struct py_proc *p = get_proc(pc, s->pid);
	if (p && p->py)
		refresh_name(p, s->tid, s->time_ns);
}

const char *python_capture_thread_name(const struct python_capture *pc, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < pc->nprocs; i++) {
		const struct py_proc *p = &pc->procs[i];
		if (p->pid != pid || !p->names_cap)
			continue;
		const struct py_tname *e = &p->names[name_slot(p->names, p->names_cap, tid)];
		return e->tid == tid ? e->name : NULL;
	}
	return NULL;
}

static struct py_proc *find_proc(struct python_capture *pc, uint32_t pid)
{
	if (pc->last && pc->last->pid == pid)
		return pc->last;
	for (size_t i = 0; i < pc->nprocs; i++)
		if (pc->procs[i].pid == pid)
			return pc->last = &pc->procs[i];
	return NULL;
}

bool python_capture_is_eval(void *arg, uint32_t pid, uint64_t pc_addr)
{
	struct py_proc *p = find_proc(arg, pid);
	return p && p->py && ember_python_is_eval(p->py, pc_addr);
}

int python_capture_check(struct python_capture *pc, const struct ember_sample *s, uint64_t read_lag_ns,
			 struct ember_py_frame *frames, int n, int max, uint32_t *flags)
{
	struct py_proc *p = find_proc(pc, s->pid);
	if (!p || !p->py || !s->nprobes)
		return n;
	struct ember_py_evidence *ev = pc->ev;
	uint32_t nev = 0;
	for (uint32_t i = s->nprobes; i-- > 0;) {       /* root first */
		const struct ember_frame_probe *pr = &s->probes[i];
		ev[nev++] = (struct ember_py_evidence){ .pc = pr->pc, .leaf = pr->leaf, .vals = pr->cand,
							.n = pr->ncand < EMBER_PY_EVIDENCE_MAX ? pr->ncand
											 : EMBER_PY_EVIDENCE_MAX };
	}
	return ember_python_reconcile(p->py, ev, nev, (s->flags & EMBER_SAMPLE_TRUNCATED) != 0, read_lag_ns, frames,
				      n, max, flags);
}

void python_capture_totals(const struct python_capture *pc, uint64_t *checked, uint64_t *corrected)
{
	*checked = *corrected = 0;
	for (size_t i = 0; i < pc->nprocs; i++)
		if (pc->procs[i].py) {
			struct ember_python_stats st;
			ember_python_stats(pc->procs[i].py, &st);
			*checked += st.checked;
			*corrected += st.corrected;
		}
}

const struct ember_python *python_capture_get(const struct python_capture *pc, uint32_t pid)
{
	for (size_t i = 0; i < pc->nprocs; i++)
		if (pc->procs[i].pid == pid)
			return pc->procs[i].py;
	return NULL;
}

const char *python_capture_cmdline(const struct python_capture *pc, uint32_t pid)
{
	for (size_t i = 0; i < pc->nprocs; i++)
		if (pc->procs[i].pid == pid)
			return pc->procs[i].cmdline;
	return "";
}

void python_capture_report(const struct python_capture *pc, FILE *out)
{
	for (size_t i = 0; i < pc->nprocs; i++) {
		const struct py_proc *p = &pc->procs[i];
		if (p->py) {
			fprintf(out, "ember: pid %u: Python %s (%s)\n", p->pid, ember_python_version(p->py),
				ember_python_describe(p->py));
			/* Frames of samples before the runtime was found are lost:
			 * say so when it is more than the dynamic loader's few. */
			if (p->unread * 100 > p->samples)
				fprintf(out, "ember: pid %u: %" PRIu64 " of %" PRIu64 " samples before its runtime was "
					"found (%u tries; the last failed: %s) have no Python frames\n", p->pid,
					p->unread, p->samples, p->tries_total + 1, p->failed);
		}
		else if (p->status == EMBER_PY_UNSUPPORTED || p->status == EMBER_PY_NO_ACCESS ||
			 p->status == EMBER_PY_ERROR)
			fprintf(out, "ember: pid %u: native profile only: %s\n", p->pid, p->msg);
	}
}

bool python_capture_any(const struct python_capture *pc)
{
	for (size_t i = 0; i < pc->nprocs; i++)
		if (pc->procs[i].py)
			return true;
	return false;
}
