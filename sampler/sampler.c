/* The sampler: opens the events for a launched or attached target, drains
 * the per-CPU rings, keeps the process model current, and unwinds each sample
 * as it arrives.  The public contract is sampler.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "perf_ring.h"
#include "process_model.h"
#include "unwinder.h"

#define MAX_CPUS 1024
#define MAX_KERNEL_FRAMES 128        /* kernel frames kept per sample (--kernel) */
#define MAX_PATH_LEN 4096            /* a mapped file's name, NUL included (PATH_MAX) */

struct ember_sampler {
	struct ember_sampler_opts opts;
	struct perf_event_attr attr;
	int cpus[MAX_CPUS];
	int ncpus;
	struct perf_ring *rings;         /* one per CPU */
	struct pollfd *pfds;
	int *fds;                        /* every event fd, ring owners included */
	size_t nfds, fds_cap;
	size_t ring_pages;
	pid_t target;
	bool attached;
	bool stopped;
	struct process_model pm;
	struct unwinder unw;
	struct ember_sampler_stats stats;
	uint8_t *scratch;
	struct ember_frame_addr frames[EMBER_MAX_FRAMES];
	uint64_t kernel_ips[MAX_KERNEL_FRAMES];
	/* The callback of the poll in progress. */
	ember_sample_fn fn;
	void *fn_arg;
	struct ember_sampler_hooks hooks;   /* ember_sampler_set_hooks */
	struct ember_frame_probe probes[EMBER_MAX_PROBES];
	int delivered;
	char err[512];
};

static int fail(struct ember_sampler *s, enum ember_sampler_err code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof s->err, fmt, ap);
	va_end(ap);
	return -(int)code;
}

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

struct ember_sampler *ember_sampler_new(const struct ember_sampler_opts *opts)
{
	struct ember_sampler *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->opts = *opts;
	s->scratch = malloc(PERF_RECORD_MAX);
	unwinder_init(&s->unw);
	s->ncpus = perf_online_cpus(s->cpus, MAX_CPUS);
	s->rings = calloc((size_t)s->ncpus, sizeof *s->rings);
	/* One per CPU ring, then the caller's wake fd (hooks.wake_fd). */
	s->pfds = calloc((size_t)s->ncpus + 1, sizeof *s->pfds);
	if (!s->scratch || !s->rings || !s->pfds || process_model_init(&s->pm) != 0) {
		ember_sampler_free(s);
		return NULL;
	}
	for (int i = 0; i <= s->ncpus; i++)
		s->pfds[i].fd = -1;   /* poll skips a CPU whose ring is not mapped (yet) */
	/* ncpus x threads descriptors in attach mode: take all we may. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return s;
}

static void close_events(struct ember_sampler *s)
{
	for (int i = 0; i < s->ncpus; i++)
		perf_ring_unmap(&s->rings[i]);
	for (size_t i = 0; i < s->nfds; i++)
		close(s->fds[i]);
	s->nfds = 0;
}

void ember_sampler_free(struct ember_sampler *s)
{
	if (!s)
		return;
	if (s->rings)
		close_events(s);
	unwinder_free(&s->unw);
	process_model_free(&s->pm);
	free(s->fds);
	free(s->rings);
	free(s->pfds);
	free(s->scratch);
	free(s);
}

static bool add_fd(struct ember_sampler *s, int fd)
{
	if (s->nfds == s->fds_cap) {
		size_t ncap = s->fds_cap ? s->fds_cap * 2 : 64;
		int *p = realloc(s->fds, ncap * sizeof *p);
		if (!p)
			return false;
		s->fds = p;
		s->fds_cap = ncap;
	}
	s->fds[s->nfds++] = fd;
	return true;
}

/* Turn a failed perf_event_open into the one line the user needs. */
static int open_error(struct ember_sampler *s, int err, pid_t pid)
{
	int paranoid = read_int_file("/proc/sys/kernel/perf_event_paranoid", 2);
	switch (err) {
	case ESRCH:
		return fail(s, EMBER_SERR_NO_PROCESS, "no process with pid %d", pid);
	case EACCES:
		if (paranoid >= 3 && geteuid() != 0)
			return fail(s, EMBER_SERR_PERMISSION,
				    "perf events are disabled for unprivileged users (kernel.perf_event_paranoid=%d): "
				    "run as root, or sysctl kernel.perf_event_paranoid=2", paranoid);
		return fail(s, EMBER_SERR_PERMISSION,
			    "permission denied profiling pid %d: it belongs to another user or is not dumpable "
			    "(run as that user, as root, or with CAP_SYS_PTRACE and CAP_PERFMON)", pid);
	case EPERM:
		return fail(s, EMBER_SERR_PERMISSION,
			    "perf_event_open is not permitted here (a container's seccomp profile blocks it: "
			    "docker run --cap-add PERFMON, or run on the host)");
	case EMFILE:
	case ENFILE:
		return fail(s, EMBER_SERR_LIMIT, "too many open files for %zu events: raise ulimit -n", s->nfds + 1);
	case EINVAL:
		return fail(s, EMBER_SERR_INVALID,
			    "the kernel rejected the sampling settings (-F %u, --stack-size %u; "
			    "kernel.perf_event_max_sample_rate=%d)", s->opts.freq_hz, s->opts.stack_size,
			    read_int_file("/proc/sys/kernel/perf_event_max_sample_rate", 0));
	case ENOSYS:
		return fail(s, EMBER_SERR_SYSTEM, "this kernel has no perf_event support (CONFIG_PERF_EVENTS)");
	default:
		return fail(s, EMBER_SERR_SYSTEM, "perf_event_open failed: %s", strerror(err));
	}
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
	/* The BPF program is optional: without it, readers read after the sample. */
	if (s->hooks.bpf_prog_fd > 0) {
		if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, s->hooks.bpf_prog_fd) == 0)
			s->stats.bpf_attached++;
		else
			s->stats.bpf_failed++;
	}
	if (!add_fd(s, fd)) {
		close(fd);
		return -ENOMEM;
	}
	struct perf_ring *r = &s->rings[ci];
	if (!r->base) {
		/* Big rings lose nothing at 999 Hz; an unprivileged user's
		 * locked-memory budget may allow less, so halve until it fits. */
		int rc;
		while ((rc = perf_ring_map(r, fd, s->ring_pages)) == -EPERM && s->ring_pages > 8)
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
 * stack was there to copy: room for ~128 of them per CPU (wakeups come at
 * half), within 64 MiB of locked memory over all CPUs. */
static size_t default_ring_pages(const struct ember_sampler *s)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), want = 128 * ((size_t)s->opts.stack_size + 512), pages = 8;
	while (pages * page < want)
		pages *= 2;
	while (pages > 8 && pages * page * (size_t)s->ncpus > (64u << 20))
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
			return fail(s, EMBER_SERR_LIMIT,
				    "ring buffer does not fit the locked-memory limit: raise ulimit -l or "
				    "kernel.perf_event_mlock_kb");
		if (rc < 0)
			return open_error(s, -rc, tid);
	}
	return 0;
}

int ember_sampler_launch(struct ember_sampler *s, char *const argv[], pid_t *child)
{
	int go[2], report[2];
	if (pipe2(go, O_CLOEXEC) != 0)
		return fail(s, EMBER_SERR_SYSTEM, "pipe: %s", strerror(errno));
	if (pipe2(report, O_CLOEXEC) != 0) {
		close(go[0]), close(go[1]);
		return fail(s, EMBER_SERR_SYSTEM, "pipe: %s", strerror(errno));
	}
	pid_t pid = fork();
	if (pid < 0)
		return fail(s, EMBER_SERR_SYSTEM, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(go[1]);
		close(report[0]);
		char c;
		/* Wait until the events are open, so sampling starts at exec. */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		int e = errno;
		if (write(report[1], &e, sizeof e) < 0)
			_exit(127);
		_exit(e == ENOENT || e == ENOTDIR ? 127 : 126);
	}
	close(go[0]);
	close(report[1]);
	*child = pid;
	s->target = pid;
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
	int e;
	ssize_t n = read(report[0], &e, sizeof e);
	close(report[0]);
	if (n == (ssize_t)sizeof e)
		return fail(s, EMBER_SERR_NOT_FOUND, "%s: %s", argv[0],
			    e == ENOENT ? "command not found" : strerror(e));
	return 0;
}

int ember_sampler_attach(struct ember_sampler *s, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", pid);
	if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
		return fail(s, EMBER_SERR_NO_PROCESS, "no process with pid %d", pid);
	s->target = pid;
	s->attached = true;
	setup_attr(s, false);

	/* Threads may appear while we open events: list again until a pass
	 * finds nothing new. */
	pid_t *seen = NULL;
	size_t nseen = 0, seen_cap = 0;
	int rc = 0;
	for (bool found = true; found && rc == 0;) {
		found = false;
		DIR *d = opendir(path);
		if (!d) {
			rc = nseen ? 0 : fail(s, EMBER_SERR_NO_PROCESS, "process %d exited during attach", pid);
			break;
		}
		struct dirent *de;
		while ((de = readdir(d)) && rc == 0) {
			pid_t tid = atoi(de->d_name);
			bool known = tid <= 0;
			for (size_t i = 0; i < nseen && !known; i++)
				known = seen[i] == tid;
			if (known)
				continue;
			if (nseen == seen_cap) {
				seen_cap = seen_cap ? seen_cap * 2 : 64;
				pid_t *p = realloc(seen, seen_cap * sizeof *p);
				if (!p) {
					rc = fail(s, EMBER_SERR_SYSTEM, "out of memory");
					break;
				}
				seen = p;
			}
			seen[nseen++] = tid;
			found = true;
			rc = open_for_task(s, tid, false);
			if (rc == -EMBER_SERR_NO_PROCESS && tid != pid)
				rc = 0;   /* that thread ended meanwhile */
		}
		closedir(d);
	}
	free(seen);
	if (rc == -EMBER_SERR_NO_PROCESS)
		return fail(s, EMBER_SERR_NO_PROCESS, "process %d exited during attach", pid);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < s->nfds; i++)
		ioctl(s->fds[i], PERF_EVENT_IOC_ENABLE, 0);
	/* Mappings made before we attached have no MMAP2 record; read them
	 * after enabling so nothing falls in between. */
	struct process *proc = process_get(&s->pm, pid, true);
	if (!proc || process_load_proc_maps(&s->pm, proc, true) != 0) {
		if (kill(pid, 0) != 0)
			return fail(s, EMBER_SERR_NO_PROCESS, "process %d exited during attach", pid);
		return fail(s, EMBER_SERR_PERMISSION, "cannot read /proc/%d/maps: %s", pid, strerror(errno));
	}
	threads_load_proc(&s->pm, pid);
	return 0;
}

/* ---- records ---- */

static void handle_sample(struct ember_sampler *s, const struct perf_event_header *h)
{
	struct perf_sample ps;
	if (!perf_parse_sample(h, s->attr.sample_type, &ps, s->kernel_ips, MAX_KERNEL_FRAMES))
		return;
	struct ember_sample smp = { .pid = ps.pid, .tid = ps.tid, .time_ns = ps.time_ns, .nkernel = ps.nkernel };
	if (h->misc & PERF_RECORD_MISC_KERNEL)
		smp.flags |= EMBER_SAMPLE_IN_KERNEL;
	if (s->attr.sample_type & PERF_SAMPLE_CALLCHAIN)
		smp.kernel_ips = s->kernel_ips;
	s->stats.samples++;
	if (!ps.abi) {
		/* No user registers: a kernel thread, or a task exiting. */
		s->stats.unwind_errors++;
		return;
	}
	struct process *proc = process_get(&s->pm, (pid_t)smp.pid, true);
	if (!proc)
		return;
	if (proc->nloads == 0 && !proc->exited)
		process_load_proc_maps(&s->pm, proc, true);
	smp.sp = ps.regs[PERF_REG_SP];
	smp.ip = ps.regs[PERF_REG_IP];
	smp.code_gen = proc->code_gen;
	if (s->hooks.early)
		s->hooks.early(s->hooks.early_arg, &smp);
	struct unwind_input in = { .regs = ps.regs, .stack = ps.stack, .stack_len = ps.stack_len,
				   .stack_reserved = ps.stack_size };
	uint64_t t0 = ember_now_ns();
	/* A PC in no known module: its MMAP2 may still sit in another CPU's
	 * ring (dlopen), so look at /proc/PID/maps once before giving up. */
	if (!process_find(proc, smp.ip) && !proc->exited)
		process_load_proc_maps(&s->pm, proc, false);
	struct unwind_probes pr = { .fn = s->hooks.probe, .arg = s->hooks.probe_arg, .out = s->probes };
	smp.nframes = unwind_sample(&s->unw, proc, &in, s->frames, EMBER_MAX_FRAMES, &smp.flags,
				    s->hooks.probe ? &pr : NULL);
	smp.nprobes = s->hooks.probe ? pr.n : 0;
	smp.probes = s->probes;
	s->stats.unwind_ns += ember_now_ns() - t0;
	smp.frames = s->frames;
	s->stats.no_cfi += (smp.flags & EMBER_SAMPLE_NO_CFI) != 0;
	s->stats.scanned += (smp.flags & EMBER_SAMPLE_SCANNED) != 0;
	if (smp.flags & EMBER_SAMPLE_TRUNCATED) {
		s->stats.truncated++;
		s->stats.frame_capped += (smp.flags & EMBER_SAMPLE_FRAME_CAP) != 0;
	}
	else if (smp.flags & EMBER_SAMPLE_UNWIND_ERROR)
		s->stats.unwind_errors++;
	s->fn(s->fn_arg, &smp);
	s->delivered++;
}

/* An executable mapping: into the process model. */
static void handle_mmap2(struct ember_sampler *s, const struct perf_event_header *h)
{
	struct perf_mmap2 m;
	char name[MAX_PATH_LEN];
	if (!perf_parse_mmap2(h, &m) || m.name_len >= sizeof name)
		return;
	memcpy(name, m.name, m.name_len);
	name[m.name_len] = 0;
	if (!(m.prot & PROT_EXEC))
		return;
	struct process *proc = process_get(&s->pm, (pid_t)m.pid, true);
	if (proc)
		process_add_mapping(&s->pm, proc, m.addr, m.len, m.pgoff, name, m.build_id, m.build_id_len);
}

static void handle_record(void *arg, const struct perf_event_header *h)
{
	struct ember_sampler *s = arg;
	struct perf_comm c;
	struct perf_task t;
	uint64_t lost;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		handle_sample(s, h);
		break;
	case PERF_RECORD_MMAP2:
		handle_mmap2(s, h);
		break;
	case PERF_RECORD_COMM:
		if (!perf_parse_comm(h, &c))
			break;
		if (h->misc & PERF_RECORD_MISC_COMM_EXEC) {
			struct process *proc = process_get(&s->pm, (pid_t)c.pid, false);
			if (proc)
				process_exec(&s->pm, proc);
		}
		thread_set_name(&s->pm, c.pid, c.tid, c.comm, c.comm_len);
		break;
	case PERF_RECORD_FORK:
		if (!perf_parse_task(h, &t))
			break;
		if (t.pid != t.ppid)
			process_fork(&s->pm, (pid_t)t.ppid, (pid_t)t.pid);
		thread_set_parent(&s->pm, t.pid, t.tid, t.ptid);
		break;
	case PERF_RECORD_EXIT:
		if (perf_parse_task(h, &t) && t.pid == t.tid)
			process_exit(&s->pm, (pid_t)t.pid);
		break;
	case PERF_RECORD_LOST:
		if (perf_parse_lost(h, &lost))
			s->stats.lost += lost;
		break;
	default:
		break;
	}
}

static bool target_gone(pid_t pid)
{
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return true;
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	const char *st = strrchr(buf, ')');
	return st && (st[2] == 'Z' || st[2] == 'X');
}

int ember_sampler_poll(struct ember_sampler *s, int timeout_ms, ember_sample_fn fn, void *arg, bool *done)
{
	if (done)
		*done = false;
	if (timeout_ms > 0 && !s->stopped) {
		nfds_t n = (nfds_t)s->ncpus;
		if (s->hooks.wake_fd > 0)
			s->pfds[n++] = (struct pollfd){ .fd = s->hooks.wake_fd, .events = POLLIN };
		int rc = poll(s->pfds, n, timeout_ms);
		if (rc < 0 && errno != EINTR)
			return -1;
	}
	s->fn = fn;
	s->fn_arg = arg;
	s->delivered = 0;
	for (int i = 0; i < s->ncpus; i++)
		if (s->rings[i].base)
			perf_ring_drain(&s->rings[i], s->scratch, handle_record, s);
	if (done && s->attached && target_gone(s->target))
		*done = true;
	return s->delivered;
}

void ember_sampler_set_hooks(struct ember_sampler *s, const struct ember_sampler_hooks *hooks)
{
	s->hooks = *hooks;
	s->unw.jit_start = hooks->jit_start;
	s->unw.jit_start_arg = hooks->jit_start_arg;
}

void ember_sampler_stop(struct ember_sampler *s)
{
	for (size_t i = 0; i < s->nfds; i++)
		ioctl(s->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	s->stopped = true;
}

const char *ember_sampler_error(const struct ember_sampler *s)
{
	return s->err;
}

void ember_sampler_get_stats(const struct ember_sampler *s, struct ember_sampler_stats *st)
{
	*st = s->stats;
	st->scans = s->unw.scans;
	st->scan_ns = s->unw.scan_ns;
}

uint32_t ember_sampler_module_count(const struct ember_sampler *s)
{
	return (uint32_t)s->pm.nmods;
}

void ember_sampler_module(const struct ember_sampler *s, uint32_t id, struct ember_module_info *out)
{
	const struct module *m = s->pm.mods[id];
	out->path = m->path;
	out->open_path = m->open_path;
	out->build_id = m->elf_ok && m->elf.build_id_len ? m->elf.build_id : NULL;
	out->build_id_len = m->elf_ok ? m->elf.build_id_len : 0;
	out->jit_pid = (uint32_t)m->jit_pid;
}

static bool maps_onednn(const struct process *p)
{
	for (size_t i = 0; i < p->nloads; i++) {
		const char *base = strrchr(p->loads[i].mod->path, '/');
		base = base ? base + 1 : p->loads[i].mod->path;
		if (strstr(base, "dnnl") || strstr(base, "mkldnn") || strncmp(base, "libtorch_cpu", 12) == 0)
			return true;
	}
	return false;
}

bool ember_sampler_jit_next(struct ember_sampler *s, size_t *cursor, bool changed_only,
			    struct ember_jit_process *out)
{
	while (*cursor < s->pm.nprocs) {
		struct process *p = s->pm.procs[(*cursor)++];
		if (!p->has_jit || (changed_only && !p->jit_changed))
			continue;
		/* The kernel reports new anonymous code as "//anon": the names
		 * its process gave it are in /proc/PID/maps. */
		if (p->jit_changed && !p->exited)
			process_load_proc_maps(&s->pm, p, false);
		p->jit_changed = false;
		*out = (struct ember_jit_process){ .pid = p->pid, .jitdump = p->jitdump, .onednn = maps_onednn(p) };
		return true;
	}
	return false;
}

const char *ember_sampler_thread_name(const struct ember_sampler *s, uint32_t pid, uint32_t tid)
{
	return thread_get_name(&s->pm, pid, tid);
}
