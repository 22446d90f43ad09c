/* Opening the events (sampler.h: ember_sampler_launch, _attach, _stop):
 * one per task and CPU, the first of each CPU owning its ring, with the
 * errors the kernel gives turned into the line the user needs.  What each
 * attribute does is docs/sampling.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grow.h"
#include "hash.h"
#include "offcpu.h"
#include "proc.h"
#include "sampler_events.h"
#include "sampler_state.h"

/* The rings: by default room for RING_SAMPLES samples per CPU (each
 * reserves its stack copy and about SAMPLE_OVERHEAD bytes more), within
 * RING_BUDGET bytes over all CPUs, and never under RING_MIN_PAGES data pages. */
#define RING_SAMPLES 128
#define SAMPLE_OVERHEAD 512
#define RING_BUDGET (64u << 20)
#define RING_MIN_PAGES 8

static int read_int_file(const char *path, int dflt)
{
	FILE *f = fopen(path, "re");
	int v = dflt;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = dflt;
		fclose(f);
	}
	return v;
}

void sampler_close_events(struct ember_sampler *s)
{
	for (int i = 0; i < s->ncpus; i++)
		perf_ring_unmap(&s->rings[i]);
	for (size_t i = 0; i < s->nfds; i++)
		close(s->fds[i]);
	s->nfds = 0;
}

static bool add_fd(struct ember_sampler *s, int fd)
{
	if (EMBER_GROW(s->fds, s->fds_cap, s->nfds + 1) != 0)
		return false;
	s->fds[s->nfds++] = fd;
	return true;
}

/* Turn a failed perf_event_open into the one line the user needs. */
static int open_error(struct ember_sampler *s, int err, pid_t pid)
{
	int paranoid = read_int_file("/proc/sys/kernel/perf_event_paranoid", 2);
	switch (err) {
	case ESRCH:
		return sampler_fail(s, EMBER_SERR_NO_PROCESS, "no process with pid %d", pid);
	case EACCES:
		if (paranoid >= 3 && geteuid() != 0)
			return sampler_fail(s, EMBER_SERR_PERMISSION,
				    "perf events are disabled for unprivileged users (kernel.perf_event_paranoid=%d): "
				    "run as root, give ember CAP_PERFMON, or sysctl kernel.perf_event_paranoid=2", paranoid);
		return sampler_fail(s, EMBER_SERR_PERMISSION,
			    "permission denied profiling pid %d: it belongs to another user or is not dumpable "
			    "(run as that user, as root, or with CAP_PERFMON; reading its Python frames needs CAP_SYS_PTRACE "
			    "too)", pid);
	case EPERM:
		return sampler_fail(s, EMBER_SERR_PERMISSION,
			    "perf_event_open is not permitted here (a container's seccomp profile blocks it: "
			    "docker run --cap-add PERFMON, or run on the host)");
	case EMFILE:
	case ENFILE:
		return sampler_fail(s, EMBER_SERR_LIMIT, "too many open files for %zu events: raise ulimit -n", s->nfds + 1);
	case EINVAL:
		return sampler_fail(s, EMBER_SERR_INVALID,
			    "the kernel rejected the sampling settings (-F %u, --stack-size %u; "
			    "kernel.perf_event_max_sample_rate=%d)", s->opts.freq_hz, s->opts.stack_size,
			    read_int_file("/proc/sys/kernel/perf_event_max_sample_rate", 0));
	case ENOSYS:
		return sampler_fail(s, EMBER_SERR_SYSTEM, "this kernel has no perf_event support (CONFIG_PERF_EVENTS)");
	default:
		return sampler_fail(s, EMBER_SERR_SYSTEM, "perf_event_open failed: %s", strerror(err));
	}
}

/* The BPF program on event fd.  It is optional: without it, readers read
 * after the sample. */
static void attach_bpf(struct ember_sampler *s, int fd)
{
	if (s->hooks.bpf_prog_fd <= 0)
		return;
	if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, s->hooks.bpf_prog_fd) == 0)
		s->stats.bpf_attached++;
	else
		s->stats.bpf_failed++;
}

void ember_sampler_attach_bpf(struct ember_sampler *s, int prog_fd)
{
	s->hooks.bpf_prog_fd = prog_fd;
	for (size_t i = 0; i < s->nfds; i++)
		attach_bpf(s, s->fds[i]);
}

/* Open one event for (pid, cpu index), with the kernel-permission fallback
 * decided on the first event. */
static int open_one(struct ember_sampler *s, pid_t pid, int ci, bool launch)
{
	int fd = perf_open(&s->attr, pid, s->cpus[ci]);
	if (fd < 0 && errno == EACCES && !s->attr.exclude_kernel && s->nfds == 0) {
		perf_fill_attr(&s->attr, &s->opts, s->hooks.wake_per_sample, launch, true);
		s->stats.kernel_excluded = true;
		fd = perf_open(&s->attr, pid, s->cpus[ci]);
	}
	if (fd < 0)
		return -errno;
	attach_bpf(s, fd);
	if (!add_fd(s, fd)) {
		close(fd);
		return -ENOMEM;
	}
	struct perf_ring *r = &s->rings[ci];
	if (!r->base) {
		/* Big rings lose nothing at 999 Hz; an unprivileged user's
		 * locked-memory budget may allow less, so halve until it fits. */
		int rc;
		while ((rc = perf_ring_map(r, fd, s->ring_pages)) == -EPERM && s->ring_pages > RING_MIN_PAGES)
			s->ring_pages /= 2;
		if (rc < 0) {
			errno = -rc;
			return rc == -EPERM ? -EDQUOT : rc;
		}
		s->pfds[ci] = (struct pollfd){ .fd = fd, .events = POLLIN };
	} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) != 0) {
		return -errno;
	}
	return 0;
}

/* A sample reserves its whole stack_size in the ring, however little of the
 * stack was there to copy: room for RING_SAMPLES of them per CPU (wakeups
 * come at half), within RING_BUDGET of locked memory over all CPUs. */
static size_t default_ring_pages(const struct ember_sampler *s)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t want = RING_SAMPLES * ((size_t)s->opts.stack_size + SAMPLE_OVERHEAD), pages = RING_MIN_PAGES;
	while (pages * page < want)
		pages *= 2;
	while (pages > RING_MIN_PAGES && pages * page * (size_t)s->ncpus > RING_BUDGET)
		pages /= 2;
	return pages;
}

static void setup_attr(struct ember_sampler *s, bool launch)
{
	s->ring_pages = s->opts.ring_pages ? s->opts.ring_pages : default_ring_pages(s);
	perf_fill_attr(&s->attr, &s->opts, s->hooks.wake_per_sample, launch, false);
}

static int open_for_task(struct ember_sampler *s, pid_t tid, bool launch)
{
	for (int ci = 0; ci < s->ncpus; ci++) {
		int rc = open_one(s, tid, ci, launch);
		if (rc == -EDQUOT)
			return sampler_fail(s, EMBER_SERR_LIMIT,
				    "ring buffer does not fit the locked-memory limit: raise ulimit -l or "
				    "kernel.perf_event_mlock_kb");
		if (rc < 0)
			return open_error(s, -rc, tid);
	}
	return 0;
}

/* What the launched child says back when it could not exec: at which step,
 * and errno.  Nothing (the pipe closes at exec): it runs. */
enum launch_step { STEP_EXEC, STEP_USER };
struct launch_report {
	int step;
	int err;
};

/* In the launched child: become the user as names.  0, or errno. */
static int become_user(const struct ember_launch_user *as)
{
	if (setgroups(as->ngroups, as->groups) != 0 || setresgid(as->gid, as->gid, as->gid) != 0 ||
	    setresuid(as->uid, as->uid, as->uid) != 0)
		return errno;
	if (as->home && setenv("HOME", as->home, 1) != 0)
		return errno;
	if (as->name && (setenv("USER", as->name, 1) != 0 || setenv("LOGNAME", as->name, 1) != 0))
		return errno;
	return 0;
}

/* Given file capabilities, ember runs in secure-exec mode: the dynamic
 * loader took LD_LIBRARY_PATH, LD_PRELOAD, TMPDIR, MALLOC_* and the like
 * out of its environment.  The command runs without ember's capabilities
 * (its exec drops them), so it gets them back as the user set them: the
 * entries of the original environment (/proc/self/environ) that environ
 * lacks, as NUL-separated "NAME=VALUE" strings ending in an empty one, or
 * NULL.  Not for a set-id ember, whose command would keep the ids. */
static char *lost_environment(void)
{
	if (!getauxval(AT_SECURE) || getuid() != geteuid() || getgid() != getegid())
		return NULL;
	FILE *f = fopen("/proc/self/environ", "re");
	if (!f)
		return NULL;
	char *entry = NULL, *lost = NULL;
	size_t entry_cap = 0, len = 0, cap = 0;
	while (getdelim(&entry, &entry_cap, '\0', f) > 0) {
		char *eq = strchr(entry, '=');
		if (!eq || eq == entry)
			continue;
		*eq = 0;
		bool present = getenv(entry) != NULL;
		*eq = '=';
		size_t n = strlen(entry) + 1;
		if (present || EMBER_GROW(lost, cap, len + n + 1) != 0)
			continue;
		memcpy(lost + len, entry, n);
		len += n;
		lost[len] = 0;
	}
	free(entry);
	fclose(f);
	return lost;
}

/* The launched child: wait until the events are open, so sampling starts at
 * exec; put back what secure-exec took from the environment; become the
 * user; exec.  Reports a failure on fd and exits. */
__attribute__((noreturn)) static void launch_child(char *const argv[], const struct ember_launch_user *as,
						   char *lost_env, int go, int fd)
{
	char c;
	if (read(go, &c, 1) != 1)
		_exit(127);
	for (char *e = lost_env; e && *e; e += strlen(e) + 1)
		putenv(e);
	struct launch_report rep = { STEP_USER, as ? become_user(as) : 0 };
	if (!rep.err) {
		execvp(argv[0], argv);
		rep = (struct launch_report){ STEP_EXEC, errno };
	}
	if (write(fd, &rep, sizeof rep) < 0)
		_exit(127);
	_exit(rep.step == STEP_EXEC && (rep.err == ENOENT || rep.err == ENOTDIR) ? 127 : 126);
}

/* With opts.off_cpu: the tracer, started on first use, traces pid too.
 * When it cannot run, s->offcpu_err says why and sampling goes on. */
static void trace_off_cpu(struct ember_sampler *s, pid_t pid)
{
	if (!s->opts.off_cpu)
		return;
	if (!s->offcpu && !s->offcpu_err[0])
		s->offcpu = offcpu_open(s->opts.stack_size, s->offcpu_err, sizeof s->offcpu_err);
	offcpu_add_process(s->offcpu, pid);
}

/* The child's report, once the events are open and it was told to go:
 * 0 when it execs. */
static int launch_result(struct ember_sampler *s, char *const argv[], const struct ember_launch_user *as,
			 pid_t *child, int fd)
{
	struct launch_report rep;
	ssize_t n = read(fd, &rep, sizeof rep);
	close(fd);
	if (n != (ssize_t)sizeof rep)
		return 0;
	if (rep.step == STEP_EXEC)
		return sampler_fail(s, EMBER_SERR_NOT_FOUND, "%s: %s", argv[0],
			    rep.err == ENOENT ? "command not found" : strerror(rep.err));
	waitpid(*child, NULL, 0);
	*child = 0;
	return sampler_fail(s, EMBER_SERR_PERMISSION, "cannot run %s as user %u (group %u): %s", argv[0],
		    (unsigned)as->uid, (unsigned)as->gid, strerror(rep.err));
}

int ember_sampler_launch(struct ember_sampler *s, char *const argv[], const struct ember_launch_user *as,
			 pid_t *child)
{
	int go[2], report[2];
	if (pipe2(go, O_CLOEXEC) != 0)
		return sampler_fail(s, EMBER_SERR_SYSTEM, "pipe: %s", strerror(errno));
	if (pipe2(report, O_CLOEXEC) != 0) {
		close(go[0]), close(go[1]);
		return sampler_fail(s, EMBER_SERR_SYSTEM, "pipe: %s", strerror(errno));
	}
	char *lost_env = lost_environment();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		free(lost_env);
		close(go[0]), close(go[1]), close(report[0]), close(report[1]);
		return sampler_fail(s, EMBER_SERR_SYSTEM, "fork: %s", strerror(e));
	}
	if (pid == 0) {
		close(go[1]);
		close(report[0]);
		launch_child(argv, as, lost_env, go[0], report[1]);
	}
	free(lost_env);
	close(go[0]);
	close(report[1]);
	*child = pid;
	s->target = pid;
	trace_off_cpu(s, pid);
	setup_attr(s, true);
	int rc = open_for_task(s, pid, true);
	if (rc < 0) {
		close(go[1]);
		close(report[0]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		*child = 0;
		return rc;
	}
	if (write(go[1], "g", 1) != 1) {
		/* The child is gone already; the caller will reap it. */
	}
	close(go[1]);
	return launch_result(s, argv, as, child, report[0]);
}

/* The tids an attach has opened events for. */
struct tid_set {
	pid_t *tids;
	size_t n, cap;
	struct ember_idtab index;
};

static bool tid_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct tid_set *)ctx)->tids[id] == *(const pid_t *)key;
}

/* 1 when tid is new to the set (now in it), 0 when known, -1 on OOM. */
static int tid_set_add(struct tid_set *set, pid_t tid)
{
	uint64_t h = ember_hash_mix((uint64_t)(uint32_t)tid);
	if (ember_idtab_find(&set->index, h, tid_eq, set, &tid) != UINT32_MAX)
		return 0;
	if (EMBER_GROW(set->tids, set->cap, set->n + 1) != 0 || ember_idtab_insert(&set->index, h, (uint32_t)set->n) != 0)
		return -1;
	set->tids[set->n++] = tid;
	return 1;
}

/* One pass over a process's threads (ember_proc_tasks' callback). */
struct open_pass {
	struct ember_sampler *s;
	pid_t pid;
	struct tid_set *seen;
	bool found;
	int rc;
};

static bool open_new_task(void *arg, uint32_t utid)
{
	struct open_pass *op = arg;
	pid_t tid = (pid_t)utid;
	int added = tid_set_add(op->seen, tid);
	if (added < 0)
		op->rc = sampler_fail(op->s, EMBER_SERR_SYSTEM, "out of memory");
	if (added <= 0)
		return op->rc == 0;
	op->found = true;
	op->rc = open_for_task(op->s, tid, false);
	if (op->rc == -EMBER_SERR_NO_PROCESS && tid != op->pid)
		op->rc = 0;   /* that thread ended meanwhile */
	return op->rc == 0;
}

/* Open events for every thread of pid.  Threads may appear while they are
 * opened: list again until a pass finds nothing new.  0 or -enum
 * ember_sampler_err. */
static int open_threads(struct ember_sampler *s, pid_t pid)
{
	struct tid_set seen = { 0 };
	if (ember_idtab_init(&seen.index) != 0)
		return sampler_fail(s, EMBER_SERR_SYSTEM, "out of memory");
	struct open_pass op = { .s = s, .pid = pid, .seen = &seen, .found = true };
	while (op.found && op.rc == 0) {
		op.found = false;
		if (ember_proc_tasks(pid, open_new_task, &op) < 0) {
			op.rc = seen.n ? 0 : -EMBER_SERR_NO_PROCESS;
			break;
		}
	}
	free(seen.tids);
	ember_idtab_free(&seen.index);
	return op.rc;
}

int ember_sampler_attach(struct ember_sampler *s, pid_t pid)
{
	if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
		return sampler_fail(s, EMBER_SERR_NO_PROCESS, "no process with pid %d", pid);
	if (ember_proc_kthread(pid))
		return sampler_fail(s, EMBER_SERR_NO_PROCESS,
				    "pid %d is a kernel thread: it has no user-space stack to profile", pid);
	s->target = pid;
	s->attached = true;
	trace_off_cpu(s, pid);
	setup_attr(s, false);
	int rc = open_threads(s, pid);
	if (rc == -EMBER_SERR_NO_PROCESS)
		return sampler_fail(s, EMBER_SERR_NO_PROCESS, "process %d exited during attach", pid);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < s->nfds; i++)
		ioctl(s->fds[i], PERF_EVENT_IOC_ENABLE, 0);
	/* Mappings made before we attached have no MMAP2 record; read them
	 * after enabling so nothing falls in between. */
	struct process *proc = process_get(&s->pm, pid, true);
	if (!proc || process_load_proc_maps(&s->pm, proc, true) != 0) {
		if (kill(pid, 0) != 0)
			return sampler_fail(s, EMBER_SERR_NO_PROCESS, "process %d exited during attach", pid);
		return sampler_fail(s, EMBER_SERR_PERMISSION, "cannot read /proc/%d/maps: %s", pid, strerror(errno));
	}
	threads_load_proc(&s->pm, pid);
	return 0;
}

void ember_sampler_stop(struct ember_sampler *s)
{
	offcpu_detach(s->offcpu);
	for (size_t i = 0; i < s->nfds; i++)
		ioctl(s->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	s->stopped = true;
}
