/* `ember record`: launch or attach, capture until the target ends (or -d, or
 * a signal), then symbolize, write every output and print the summary.  One
 * cleanup path; outputs are written on every way out once capture began. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "jit_map.h"
#include "python_stacks.h"

/* Signal handlers cannot take a context argument: these two are the only
 * process-wide state, written by the handler and read by the loop. */
static volatile sig_atomic_t stop_signal;
static volatile pid_t forward_to;

static void on_stop_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	stop_signal = sig;
	/* Ctrl-C on a terminal reaches the command directly (same process
	 * group, si_code SI_KERNEL); forward only what was sent to ember alone. */
	if (forward_to > 0 && si->si_code != SI_KERNEL)
		kill(forward_to, sig);
}

#define MAX_PY_FRAMES 1024
#define POLL_MS 100      /* drain at least this often (a half-full ring wakes ember sooner) */
/* ... and, when Python frames are copied at the sample, after about this
 * many samples of a thread, within these bounds: the first read of a drain
 * finds ember's caches cold (~10 us against ~1 for the rest), so it is
 * shared by that many reads (at 99 Hz every 250 ms, at 499 Hz and over
 * every 50 ms).  What cannot wait wakes ember at once (the copier's
 * records of code objects and threads it has not seen, a half-full ring,
 * the target's exit). */
#define PY_DRAIN_SAMPLES 25
#define PY_DRAIN_MIN_MS 50
#define PY_DRAIN_MAX_MS 250

#define PY_READ_BUCKET_NS 100   /* Python read times: 0.1 us buckets */
#define PY_READ_BUCKETS 1000     /* up to 100 us */

struct record_run {
	struct record_opts opts;
	struct ember_sampler *sampler;
	struct raw_stacks *raw;
	struct python_capture *python;
	int poll_ms;                  /* the longest wait between two drains */
	uint64_t gil_dropped;         /* --gil: samples of threads not holding it */
	uint64_t py_read_ns, py_reads;/* time reading Python frames, and reads that found some */
	uint32_t py_read_hist[PY_READ_BUCKETS];   /* those reads by time, PY_READ_BUCKET_NS wide
	                                           * (the last: longer), for the median */
	uint64_t py_lag_ns, py_late;  /* sample-to-read delay summed, and reads > 1 ms late */
	uint64_t py_at_sample;        /* reads whose frames the kernel copied at the sample */
	uint64_t py_before_copier;    /* samples before the copier knew their thread (any read) */
	/* The last sample's Python frames, read before it was unwound. */
	struct ember_py_frame py[MAX_PY_FRAMES];
	uint32_t npy, pyflags, py_tid;
	uint64_t py_time, py_lag;     /* its sample time, and how late the read started */
	uint64_t test_read_delay_ns;  /* $EMBER_TEST_PY_READ_DELAY_US (tests only) */
	uint32_t test_stall_ms;       /* $EMBER_TEST_STALL_MS: sleep after each drain, as when
	                               * the machine steals ember's CPU (tests only) */
	uint64_t test_reads;
	bool gil_unknown;             /* --gil asked, but the version records no holder */
	struct ember_jit_map *jit;    /* names of JIT code, from the target's perf maps */
	bool jit_remove;              /* ember asked for those maps: delete them after reading */
	struct ember_profile profile;
	bool profile_ready;
	pid_t child;
	int child_status;
	bool child_reaped;
	struct rusage child_ru;
	bool oom;
	char default_output[2][256];
	char command[1024];
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double self_cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Python frames are read in the early callback, before the native stack is
 * unwound: every microsecond between the sample and the read is a chance
 * for the thread to move on.  on_sample then takes them from here. */
static void read_python_early(void *arg, const struct ember_sample *s)
{
	struct record_run *run = arg;
	if (run->test_read_delay_ns && (run->test_reads++ & 1)) {
		/* Test knob: every other read late, as on a loaded machine. */
		uint64_t at = s->time_ns + run->test_read_delay_ns;
		struct timespec ts = { (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !stop_signal)
			;
	}
	uint64_t start = cli_monotonic_ns(), setup = python_capture_setup_ns(run->python);
	run->py_tid = s->tid;
	run->py_time = s->time_ns;
	run->py_lag = start > s->time_ns ? start - s->time_ns : 0;
	run->pyflags = 0;
	int n = python_capture_read(run->python, s, run->py, MAX_PY_FRAMES, &run->pyflags);
	run->npy = n > 0 ? (uint32_t)n : 0;
	run->py_before_copier += (run->pyflags & EMBER_PY_BEFORE_COPIER) != 0;
	if (run->pyflags & EMBER_PY_AT_SAMPLE)
		run->py_lag = 0;   /* the frames are the sample's own */
	if (n > 0) {
		run->py_reads++;
		run->py_at_sample += (run->pyflags & EMBER_PY_AT_SAMPLE) != 0;
		/* (finding the runtime is reported on its own) */
		uint64_t took = cli_monotonic_ns() - start - (python_capture_setup_ns(run->python) - setup);
		run->py_read_ns += took;
		run->py_read_hist[took / PY_READ_BUCKET_NS < PY_READ_BUCKETS ? took / PY_READ_BUCKET_NS
									      : PY_READ_BUCKETS - 1]++;
		run->py_lag_ns += run->py_lag;
		run->py_late += run->py_lag > 1000000;
	}
}

/* The median read: the mean counts the reads ember was preempted in. */
static double median_read_us(const uint32_t *hist, uint64_t reads)
{
	uint64_t seen = 0;
	for (int i = 0; i < PY_READ_BUCKETS && reads; i++) {
		seen += hist[i];
		if (2 * seen >= reads)
			return (i + 0.5) * PY_READ_BUCKET_NS / 1e3;
	}
	return 0;
}

static void on_sample(void *arg, const struct ember_sample *s)
{
	struct record_run *run = arg;
	uint32_t npy = 0, pyflags = 0;
	if (run->python && run->py_tid == s->tid && run->py_time == s->time_ns) {
		npy = run->npy;
		pyflags = run->pyflags;
		/* What the sample itself held beats what the read found later. */
		if (s->nprobes) {
			int n = python_capture_check(run->python, s, run->py_lag, run->py, (int)npy, MAX_PY_FRAMES,
						     &pyflags);
			npy = n > 0 ? (uint32_t)n : 0;
		}
	}
	if (run->opts.gil_only) {
		if (!(pyflags & EMBER_PY_GIL_KNOWN) && npy > 0) {
			run->gil_unknown = true;
		} else if (!(pyflags & EMBER_PY_HOLDS_GIL)) {
			run->gil_dropped++;
			return;
		}
	}
	if (raw_stacks_add(run->raw, s, run->py, npy, pyflags) != 0)
		run->oom = true;
	if (npy)   /* after the sample is stored: a name read never delays one */
		python_capture_names(run->python, s);
}

/* Whether the target is (or starts as) a Python interpreter: then, unless
 * the frames are copied at the sample (see cmd_record), the sampler wakes
 * ember at every sample, so that Python frames are read while they still
 * match.  Other targets do without the wake-ups (they cost ember
 * ~10 us a sample); a native launcher that execs Python later still gets its
 * Python frames, read a little later. */
static bool python_basename(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	return strncmp(b, "python", 6) == 0 || strncmp(b, "pypy", 4) == 0;
}

static bool looks_like_python(const struct record_opts *o)
{
	char path[4096], buf[256];
	if (o->pid) {
		snprintf(path, sizeof path, "/proc/%d/exe", o->pid);
		ssize_t n = readlink(path, buf, sizeof buf - 1);
		if (n > 0 && (buf[n] = 0, python_basename(buf)))
			return true;
		snprintf(path, sizeof path, "/proc/%d/maps", o->pid);
		FILE *f = fopen(path, "re");
		bool found = false;
		char line[512];
		while (f && !found && fgets(line, sizeof line, f))
			found = strstr(line, "libpython") != NULL;
		if (f)
			fclose(f);
		return found;
	}
	const char *cmd = o->argv[0];
	if (python_basename(cmd))
		return true;
	/* A script: look at its #! line (PATH lookup as execvp does). */
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

static int sampler_exit_code(int err)
{
	switch (err) {
	case EMBER_SERR_NO_PROCESS: return EMBER_EXIT_UNAVAILABLE;
	case EMBER_SERR_PERMISSION: return EMBER_EXIT_NOPERM;
	case EMBER_SERR_INVALID: return EMBER_EXIT_USAGE;
	default: return EMBER_EXIT_OSERR;
	}
}

/* Attach mode: the target's CPU and context switches from /proc. */
struct proc_usage {
	double user_s, sys_s;
	long vol, invol, hwm_kib;
	bool ok;
};

static void read_proc_usage(pid_t pid, struct proc_usage *u)
{
	char path[64], buf[1024];
	memset(u, 0, sizeof *u);
	u->hwm_kib = -1;
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	unsigned long ut, st;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return;
	long hz = sysconf(_SC_CLK_TCK);
	u->user_s = (double)ut / (double)hz;
	u->sys_s = (double)st / (double)hz;
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	if ((f = fopen(path, "re"))) {
		while (fgets(buf, sizeof buf, f)) {
			sscanf(buf, "VmHWM: %ld", &u->hwm_kib);
			sscanf(buf, "voluntary_ctxt_switches: %ld", &u->vol);
			sscanf(buf, "nonvoluntary_ctxt_switches: %ld", &u->invol);
		}
		fclose(f);
	}
	u->ok = true;
}

static void describe_command(struct record_run *run)
{
	size_t n = 0;
	if (run->opts.argv) {
		for (char **a = run->opts.argv; *a && n < sizeof run->command - 1; a++)
			n += (size_t)snprintf(run->command + n, sizeof run->command - n, "%s%s", n ? " " : "", *a);
		return;
	}
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/cmdline", run->opts.pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (len <= 0) {
		snprintf(run->command, sizeof run->command, "pid %d", run->opts.pid);
		return;
	}
	for (ssize_t i = 0; i < len - 1; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[len] = 0;
	snprintf(run->command, sizeof run->command, "pid %d: %s", run->opts.pid, buf);
}

/* Launch mode: have oneDNN (PyTorch's CPU kernels) name its JIT code in
 * /tmp/perf-PID.map, unless the user set either variable or said
 * --no-jit-env.  The maps of processes with oneDNN are ember's to delete
 * after reading, unless the command asked for perf maps itself (CPython's
 * -X perf writes the same file, for perf). */
static void jit_env_setup(struct record_run *run)
{
	if (run->opts.pid || run->opts.no_jit_env || getenv("ONEDNN_JIT_PROFILE") || getenv("DNNL_JIT_PROFILE"))
		return;
	if (setenv("ONEDNN_JIT_PROFILE", "2", 1) != 0 || setenv("DNNL_JIT_PROFILE", "2", 1) != 0)
		return;
	const char *py = getenv("PYTHONPERFSUPPORT");
	bool asked = py && *py && strcmp(py, "0") != 0;
	for (char **a = run->opts.argv; *a; a++)
		asked |= strncmp(*a, "-Xperf", 6) == 0 || (strcmp(*a, "-X") == 0 && a[1] && strncmp(a[1], "perf", 4) == 0);
	run->jit_remove = !asked;
}

/* Read the perf maps and jitdumps of processes whose JIT code changed (all
 * of them: at the end). */
static void jit_read(struct record_run *run, bool all)
{
	size_t cursor = 0;
	struct ember_jit_process jp;
	while (run->jit && ember_sampler_jit_next(run->sampler, &cursor, !all, &jp))
		ember_jit_map_read(run->jit, jp.pid, jp.jitdump);
}

/* The sampler's question while unwinding past JIT code: where does the
 * function start?  New code's line may have come after the last read. */
static bool jit_start(void *arg, uint32_t pid, uint64_t addr, uint64_t *start)
{
	struct record_run *run = arg;
	if (ember_jit_map_lookup(run->jit, (pid_t)pid, addr, start))
		return true;
	ember_jit_map_refresh(run->jit, (pid_t)pid);
	return ember_jit_map_lookup(run->jit, (pid_t)pid, addr, start) != NULL;
}

static uint32_t jit_remove_maps(struct record_run *run)
{
	size_t cursor = 0;
	uint32_t n = 0;
	struct ember_jit_process jp;
	while (run->jit_remove && run->jit && ember_sampler_jit_next(run->sampler, &cursor, false, &jp))
		if (jp.onednn)   /* (another JIT's own map is not ember's to delete) */
			n += ember_jit_map_remove_perf_map(run->jit, jp.pid);
	return n;
}

static void capture(struct record_run *run, struct run_summary *sum, double t0)
{
	bool tty = !run->opts.quiet && isatty(STDERR_FILENO);
	double last_status = t0, cpu0 = self_cpu_s();
	for (;;) {
		bool done = false;
		int wait_ms = run->poll_ms;
		if (run->opts.duration_s > 0) {   /* -d: no later than asked */
			double left = run->opts.duration_s - (now_s() - t0);
			wait_ms = left <= 0 ? 0 : left * 1000 < wait_ms ? (int)(left * 1000) + 1 : wait_ms;
		}
		if (ember_sampler_poll(run->sampler, wait_ms, on_sample, run, &done) < 0)
			break;
		if (run->python)
			python_capture_consume(run->python);
		jit_read(run, false);
		if (run->test_stall_ms)
			poll(NULL, 0, (int)run->test_stall_ms);
		if (run->child > 0 &&
		    wait4(run->child, &run->child_status, WNOHANG, &run->child_ru) == run->child) {
			run->child_reaped = true;
			break;
		}
		double t = now_s();
		if (done || stop_signal || (run->opts.duration_s > 0 && t - t0 >= run->opts.duration_s))
			break;
		if (tty && t - last_status >= 1.0) {
			fprintf(stderr, "\rember: %.0f s, %llu samples ", t - t0,
				(unsigned long long)raw_stacks_samples(run->raw));
			last_status = t;
		}
	}
	ember_sampler_stop(run->sampler);
	ember_sampler_poll(run->sampler, 0, on_sample, run, NULL);
	jit_read(run, true);
	sum->profiler_cpu_s = self_cpu_s() - cpu0;
	sum->wall_s = now_s() - t0;
	if (tty)
		fputs("\r\033[K", stderr);
}

static int finish_child(struct record_run *run)
{
	if (!run->child_reaped) {
		while (wait4(run->child, &run->child_status, 0, &run->child_ru) < 0 && errno == EINTR)
			;
		run->child_reaped = true;
	}
	if (WIFSIGNALED(run->child_status))
		return 128 + WTERMSIG(run->child_status);
	return WEXITSTATUS(run->child_status);
}

int cmd_record(int argc, char **argv)
{
	struct record_run run = { 0 };
	bool help;
	options_record_defaults(&run.opts);
	int rc = options_parse_record(argc, argv, &run.opts, &help);
	if (rc != 0 || help)
		return rc;
	if ((rc = outputs_open(&run.opts.out)) != 0)
		goto out;

	struct sigaction sa = { .sa_sigaction = on_stop_signal, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	struct ember_sampler_hooks hooks = { .jit_start = jit_start, .jit_start_arg = &run };
	if (run.opts.python)
		hooks.wake_per_sample = looks_like_python(&run.opts);
	/* The frame copier first: the sampler attaches it to every event it opens. */
	if (run.opts.python && (run.python = python_capture_new(run.opts.gil_only, !run.opts.no_bpf)))
		hooks.bpf_prog_fd = python_capture_bpf_fd(run.python);
	run.poll_ms = POLL_MS;
	int wake_fd = run.python ? python_capture_wake_fd(run.python) : -1;
	if (wake_fd > 0) {
		/* Frames are copied at the sample: ember reads them on a timer and
		 * when the copier wakes it (a code object or thread it has not
		 * seen), not at every sample, sparing the target a wakeup per
		 * sample.  EMBER_TEST_PY_DRAIN_MS=0 (bench) wakes per sample. */
		const char *ms = getenv("EMBER_TEST_PY_DRAIN_MS");
		uint32_t hz = run.opts.sampler.freq_hz ? run.opts.sampler.freq_hz : 1;
		int drain = ms ? atoi(ms) : (int)(PY_DRAIN_SAMPLES * 1000u / hz);
		if (!ms && drain < PY_DRAIN_MIN_MS)
			drain = PY_DRAIN_MIN_MS;
		if (!ms && drain > PY_DRAIN_MAX_MS)
			drain = PY_DRAIN_MAX_MS;
		if (drain > 0) {
			hooks.wake_per_sample = false;
			hooks.wake_fd = wake_fd;
			run.poll_ms = drain;
		}
	}
	run.sampler = ember_sampler_new(&run.opts.sampler);
	run.raw = raw_stacks_new();
	run.jit = ember_jit_map_new();
	if (!run.sampler || !run.raw || !run.jit || (run.opts.python && !run.python) ||
	    ember_profile_init(&run.profile) != 0) {
		fprintf(stderr, "ember: out of memory\n");
		rc = EMBER_EXIT_INTERNAL;
		goto out;
	}
	if (run.python) {
		const char *delay = getenv("EMBER_TEST_PY_READ_DELAY_US");
		run.test_read_delay_ns = delay ? strtoull(delay, NULL, 10) * 1000ull : 0;
		const char *stall = getenv("EMBER_TEST_STALL_MS");
		run.test_stall_ms = stall ? (uint32_t)atoi(stall) : 0;
		hooks.early = read_python_early, hooks.early_arg = &run;
		hooks.probe = python_capture_is_eval, hooks.probe_arg = run.python;
	}
	ember_sampler_set_hooks(run.sampler, &hooks);
	run.profile_ready = true;
	describe_command(&run);
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	double t0 = now_s();
	struct proc_usage pu0 = { 0 };
	if (run.opts.pid) {
		read_proc_usage(run.opts.pid, &pu0);
		int err = ember_sampler_attach(run.sampler, run.opts.pid);
		if (err < 0) {
			fprintf(stderr, "ember: %s\n", ember_sampler_error(run.sampler));
			rc = sampler_exit_code(-err);
			goto out;
		}
	} else {
		jit_env_setup(&run);
		int err = ember_sampler_launch(run.sampler, run.opts.argv, &run.child);
		if (err == -EMBER_SERR_NOT_FOUND) {
			fprintf(stderr, "ember: %s\n", ember_sampler_error(run.sampler));
			rc = finish_child(&run);
			goto out;
		}
		if (err < 0) {
			fprintf(stderr, "ember: %s\n", ember_sampler_error(run.sampler));
			rc = sampler_exit_code(-err);
			goto out;
		}
		forward_to = run.child;
	}
	struct ember_sampler_stats st;
	ember_sampler_get_stats(run.sampler, &st);
	if (st.kernel_excluded && !run.opts.quiet)
		fprintf(stderr, "ember: kernel.perf_event_paranoid forbids kernel sampling for this user: "
			"user space only, kernel frames and time in system calls are excluded "
			"(run as root or with CAP_PERFMON to include them)\n");
	if (!run.opts.out.noutputs) {
		/* By default: a flame graph to look at, and everything else kept
		 * losslessly for `ember convert` / `report` / `diff`. */
		const char *prog = run.opts.argv ? run.opts.argv[0] : "pid";
		const char *base = strrchr(prog, '/');
		static const char *const ext[2] = { "svg", "ember" };
		for (int i = 0; i < 2; i++) {
			snprintf(run.default_output[i], sizeof run.default_output[i], "%s-%d.%s",
				 base ? base + 1 : prog, run.opts.pid ? run.opts.pid : run.child, ext[i]);
			run.opts.out.outputs[i].path = run.default_output[i];
			run.opts.out.outputs[i].format = i ? FORMAT_EMBER : FORMAT_SVG;
		}
		run.opts.out.noutputs = 2;
		if ((rc = outputs_open(&run.opts.out)) != 0)
			goto out;
	}

	struct run_summary sum = { .max_rss_kib = -1, .vol_ctx = -1, .invol_ctx = -1,
				   .stack_size = run.opts.sampler.stack_size };
	capture(&run, &sum, t0);
	if (run.child > 0 && !run.child_reaped && !stop_signal) {
		/* -d expired: the command does not outlive its profile. */
		kill(run.child, SIGTERM);
	}
	forward_to = 0;
	ember_sampler_get_stats(run.sampler, &sum.stats);

	struct ember_run_meta *m = &run.profile.meta;
	m->command = ember_profile_cstr(&run.profile, run.command);
	m->pid = (uint32_t)(run.opts.pid ? run.opts.pid : run.child);
	m->freq_hz = run.opts.sampler.freq_hz;
	m->start_unix_ns = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec;
	m->duration_ns = (uint64_t)(sum.wall_s * 1e9);
	m->samples = sum.stats.samples;
	m->lost = sum.stats.lost;
	m->truncated = sum.stats.truncated;
	m->unwind_errors = sum.stats.unwind_errors;
	m->kernel_frames = run.opts.sampler.kernel && !sum.stats.kernel_excluded;
	m->source = ember_profile_cstr(&run.profile, "ember record");
	uint64_t mismatched = 0;
	if (run.oom || build_profile(run.raw, run.sampler, run.python, run.jit, &run.opts.merge, &run.profile,
				     &sum.symbolize_s, &mismatched) != 0) {
		fprintf(stderr, "ember: out of memory while building the profile\n");
		rc = EMBER_EXIT_INTERNAL;
	}
	sum.jit_removed = jit_remove_maps(&run);
	struct ember_jit_map_stats jst;
	ember_jit_map_get_stats(run.jit, &jst);
	sum.jit_files = jst.files;
	sum.jit_entries = jst.entries;
	sum.jit_refused = jst.refused;
	sum.jit_refused_path = jst.refused_path;
	run.profile.meta.mismatched = mismatched;
	sum.mismatched = mismatched;
	sum.python_samples = run.python && python_capture_any(run.python);
	sum.gil_dropped = run.gil_dropped;
	sum.py_read_us = run.py_reads ? (double)run.py_read_ns / 1e3 / (double)run.py_reads : 0;
	sum.py_read_median_us = median_read_us(run.py_read_hist, run.py_reads);
	sum.py_setup_ms = run.python ? (double)python_capture_setup_ns(run.python) / 1e6 : 0;
	sum.py_lag_us = run.py_reads ? (double)run.py_lag_ns / 1e3 / (double)run.py_reads : 0;
	sum.py_late = run.py_late;
	sum.py_reads = run.py_reads;
	sum.py_at_sample = run.py_at_sample;
	sum.py_before_copier = run.py_before_copier;
	sum.py_bpf_asked = run.python && !run.opts.no_bpf;
	sum.bpf_failed = sum.stats.bpf_failed;
	sum.py_bpf_note = run.python ? python_capture_bpf_note(run.python) : "";
	if (run.python) {
		struct ember_py_sampletime_stats bst;
		python_capture_bpf_stats(run.python, &bst);
		sum.bpf = bst;
	}
	if (run.python)
		python_capture_totals(run.python, &sum.py_checked, &sum.py_corrected);
	int wrc = outputs_write(&run.opts.out, &run.profile, run.opts.quiet);
	if (rc == 0)
		rc = wrc;

	if (run.child > 0) {
		int status = finish_child(&run);
		if (rc == 0)
			rc = status;
		sum.target_user_s = (double)run.child_ru.ru_utime.tv_sec + (double)run.child_ru.ru_utime.tv_usec / 1e6;
		sum.target_sys_s = (double)run.child_ru.ru_stime.tv_sec + (double)run.child_ru.ru_stime.tv_usec / 1e6;
		sum.max_rss_kib = run.child_ru.ru_maxrss;
		sum.vol_ctx = run.child_ru.ru_nvcsw;
		sum.invol_ctx = run.child_ru.ru_nivcsw;
	} else {
		struct proc_usage pu1;
		read_proc_usage(run.opts.pid, &pu1);
		if (pu0.ok && pu1.ok) {
			sum.target_user_s = pu1.user_s - pu0.user_s;
			sum.target_sys_s = pu1.sys_s - pu0.sys_s;
			sum.max_rss_kib = pu1.hwm_kib;
			sum.vol_ctx = pu1.vol - pu0.vol;
			sum.invol_ctx = pu1.invol - pu0.invol;
		}
	}
	if (!run.opts.quiet) {
		if (run.python)
			python_capture_report(run.python, stderr);
		if (run.python && !python_capture_any(run.python))
			fprintf(stderr, "ember: %s is not a Python process: native frames only\n",
				run.opts.argv ? run.opts.argv[0] : "the target");
		if (run.gil_unknown)
			fprintf(stderr, "ember: --gil: this Python does not record which thread holds the GIL; "
				"samples of every Python thread were kept\n");
		summary_print(stderr, &sum, &run.profile);
	}
out:
	outputs_close(&run.opts.out);
	if (run.profile_ready)
		ember_profile_free(&run.profile);
	raw_stacks_free(run.raw);
	python_capture_free(run.python);
	ember_jit_map_free(run.jit);
	ember_sampler_free(run.sampler);
	return rc;
}
