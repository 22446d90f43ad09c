/* One record run: its options, launch or attach, the user a launched
 * command runs as under sudo, the target's own cost, the JIT settings of a
 * launched command, and the run's results (record.h has the contract). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "proc.h"
#include "build_profile.h"
#include "capture.h"
#include "symbolizer.h"

void ember_record_knobs_from_env(struct ember_record_knobs *k)
{
	const char *v;
	*k = (struct ember_record_knobs){ .py_drain_ms = -1 };
	k->py_no_copy = getenv("EMBER_TEST_PY_NO_COPY") != NULL;
	k->py_no_dwarf = getenv("EMBER_TEST_PY_NO_DWARF") != NULL;
	k->copier_later = getenv("EMBER_TEST_COPIER_LATER") != NULL;
	if ((v = getenv("EMBER_TEST_START_STALL_MS")))
		k->py_start_stall_ms = atoi(v);
	if ((v = getenv("EMBER_TEST_PY_DRAIN_MS")))
		k->py_drain_ms = atoi(v);
	if ((v = getenv("EMBER_TEST_PY_READ_DELAY_US")))
		k->py_read_delay_ns = strtoull(v, NULL, 10) * 1000ull;
	if ((v = getenv("EMBER_TEST_STALL_MS")))
		k->stall_ms = (uint32_t)atoi(v);
	k->bpf_debug = getenv("EMBER_BPF_DEBUG") != NULL;
	k->bpf_stats = getenv("EMBER_BPF_STATS") != NULL;
	k->bpf_unrolled = getenv("EMBER_BPF_UNROLLED") != NULL;
}

void ember_record_opts_default(struct ember_record_opts *o)
{
	*o = (struct ember_record_opts){ .sampler = EMBER_SAMPLER_OPTS_DEFAULT, .python = true,
					 .knobs = { .py_drain_ms = -1 } };
}

struct ember_record *ember_record_new(const struct ember_record_opts *o)
{
	struct ember_record *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->opts = *o;
	if (o->python) {
		/* Where the kernel checks the copier slowly, the command does not
		 * wait for it: it is loaded meanwhile, from the start for a
		 * command that looks like Python, else once a Python process
		 * shows up, if one does. */
		r->py_likely = ember_py_target_likely(o->pid, o->argv);
		bool later = !o->no_copier && (o->knobs.copier_later || !ember_py_copier_quick());
		struct ember_py_session_opts po = { .gil = o->gil_only, .copier = !o->no_copier,
						    .copier_later = later, .copier_on_python = !r->py_likely,
						    .no_copy_use = o->knobs.py_no_copy,
						    .no_debug_info = o->knobs.py_no_dwarf,
						    .start_stall_ms = o->knobs.py_start_stall_ms,
						    .copier_opts = { .debug = o->knobs.bpf_debug,
								     .stats = o->knobs.bpf_stats,
								     .unrolled = o->knobs.bpf_unrolled,
								     .at_switch = o->sampler.off_cpu } };
		if (!(r->python = ember_py_session_new(&po)) || (!o->no_attribution && !(r->pools = pool_watch_new()))) {
			ember_py_session_free(r->python);
			free(r);
			return NULL;
		}
	}
	r->sampler = ember_sampler_new(&r->opts.sampler);
	r->raw = raw_stacks_new();
	r->jit = ember_jit_map_new();
	if (!r->sampler || !r->raw || !r->jit) {
		ember_record_free(r);
		return NULL;
	}
	capture_hooks(r);
	return r;
}

void ember_record_free(struct ember_record *r)
{
	if (!r)
		return;
	raw_stacks_free(r->raw);
	pool_watch_free(r->pools);
	free(r->as_groups);
	ember_py_session_free(r->python);
	ember_jit_map_free(r->jit);
	ember_sampler_free(r->sampler);
	free(r);
}

const char *ember_record_error(const struct ember_record *r)
{
	return r->err[0] ? r->err : ember_sampler_error(r->sampler);
}

pid_t ember_record_target(const struct ember_record *r)
{
	return r->opts.pid ? r->opts.pid : r->child;
}

bool ember_record_kernel_excluded(const struct ember_record *r)
{
	struct ember_sampler_stats st;
	ember_sampler_get_stats(r->sampler, &st);
	return st.kernel_excluded;
}

bool ember_record_kernel_unnamed(const struct ember_record *r)
{
	return r->opts.sampler.kernel && !ember_record_kernel_excluded(r) && !ember_kernel_symbols_visible();
}

/* The target's CPU and context switches from /proc (attach mode). */
static bool read_usage(pid_t pid, double *user_s, double *sys_s, long *vol, long *invol)
{
	char buf[1024];
	if (ember_proc_read(pid, "stat", buf, sizeof buf) <= 0)
		return false;
	char *p = strrchr(buf, ')');
	unsigned long ut, st;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return false;
	long hz = sysconf(_SC_CLK_TCK);
	*user_s = (double)ut / (double)hz;
	*sys_s = (double)st / (double)hz;
	*vol = *invol = 0;
	if (ember_proc_status(pid, "voluntary_ctxt_switches", buf, sizeof buf))
		*vol = atol(buf);
	if (ember_proc_status(pid, "nonvoluntary_ctxt_switches", buf, sizeof buf))
		*invol = atol(buf);
	return true;
}

static void describe_command(struct ember_record *r)
{
	size_t n = 0;
	if (r->opts.argv) {
		for (char **a = r->opts.argv; *a && n < sizeof r->command - 1; a++)
			n += (size_t)snprintf(r->command + n, sizeof r->command - n, "%s%s", n ? " " : "", *a);
		return;
	}
	char buf[512];
	ssize_t len = ember_proc_read(r->opts.pid, "cmdline", buf, sizeof buf);
	if (len <= 0) {
		snprintf(r->command, sizeof r->command, "pid %d", r->opts.pid);
		return;
	}
	for (ssize_t i = 0; i < len - 1; i++)
		if (!buf[i])
			buf[i] = ' ';
	snprintf(r->command, sizeof r->command, "pid %d: %s", r->opts.pid, buf);
}

/* Launch mode: have oneDNN (PyTorch's CPU kernels) name its JIT code in
 * /tmp/perf-PID.map, unless the user set either variable or asked to leave
 * them alone. The maps of processes with oneDNN are ember's to delete after
 * reading, unless the command asked for perf maps itself (CPython's -X perf
 * writes the same file, for perf). */
static void jit_env_setup(struct ember_record *r)
{
	if (r->opts.pid || r->opts.no_jit_env || getenv("ONEDNN_JIT_PROFILE") || getenv("DNNL_JIT_PROFILE"))
		return;
	if (setenv("ONEDNN_JIT_PROFILE", "2", 1) != 0 || setenv("DNNL_JIT_PROFILE", "2", 1) != 0)
		return;
	const char *py = getenv("PYTHONPERFSUPPORT");
	bool asked = py && *py && strcmp(py, "0") != 0;
	for (char **a = r->opts.argv; *a; a++)
		asked |= strncmp(*a, "-Xperf", 6) == 0 || (strcmp(*a, "-X") == 0 && a[1] && strncmp(a[1], "perf", 4) == 0);
	r->jit_remove = !asked;
}

/* A user or group id written in decimal: false when it is not one. */
static bool parse_id(const char *v, unsigned long *out)
{
	char *end;
	errno = 0;
	*out = strtoul(v, &end, 10);
	return *v && !*end && !errno && *out < (unsigned long)(uid_t)-1;
}

/* The user's supplementary groups (as initgroups sets them), or just gid
 * when the user has no name. 0, or -1 on OOM. */
static int user_groups(struct ember_record *r, const char *name, gid_t gid)
{
	int n = 16;
	for (;;) {
		gid_t *g = realloc(r->as_groups, (size_t)n * sizeof *g);
		if (!g)
			return -1;
		r->as_groups = g;
		if (!name) {
			g[0] = gid;
			r->as.ngroups = 1;
			return 0;
		}
		int want = n;
		if (getgrouplist(name, gid, g, &want) >= 0) {
			r->as.ngroups = (size_t)want;
			return 0;
		}
		n = want > n ? want : 2 * n;
	}
}

/* Root through sudo (real uid 0, SUDO_UID another user's): the user the
 * command runs as, as if run without sudo -- its groups (SUDO_GID, else its
 * passwd entry's), HOME, USER and LOGNAME. Returns -EMBER_SERR_INVALID
 * when the SUDO_ variables do not name a user and group, 0 otherwise
 * (r->as_user set when the command is to run as the user). */
static int sudo_user(struct ember_record *r)
{
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	unsigned long uid, gid = 0;
	if (r->opts.as_root || getuid() != 0 || !su)
		return 0;
	bool uid_ok = parse_id(su, &uid);
	if (uid_ok && uid == 0)
		return 0;   /* root ran sudo: root it is */
	const struct passwd *pw = uid_ok ? getpwuid((uid_t)uid) : NULL;
	bool gid_ok = sg ? parse_id(sg, &gid) : pw != NULL;
	if (!sg && pw)
		gid = pw->pw_gid;
	if (!uid_ok || !gid_ok) {
		snprintf(r->err, sizeof r->err, "SUDO_UID=%s, SUDO_GID=%s: no user and group to run the command as "
			 "(unset them, or --as-root)", su, sg ? sg : "(unset)");
		return -EMBER_SERR_INVALID;
	}
	const char *name = pw ? pw->pw_name : getenv("SUDO_USER");
	snprintf(r->as_name, sizeof r->as_name, "%s", name ? name : "");
	snprintf(r->as_home, sizeof r->as_home, "%s", pw ? pw->pw_dir : "");
	r->as = (struct ember_launch_user){ .uid = (uid_t)uid, .gid = (gid_t)gid, .name = name ? r->as_name : NULL,
					    .home = pw ? r->as_home : NULL };
	if (user_groups(r, pw ? r->as_name : NULL, (gid_t)gid) != 0) {
		snprintf(r->err, sizeof r->err, "out of memory");
		return -EMBER_SERR_SYSTEM;
	}
	r->as.groups = r->as_groups;
	r->as_user = true;
	return 0;
}

const char *ember_record_off_cpu_error(const struct ember_record *r)
{
	return ember_sampler_off_cpu_error(r->sampler);
}

/* --idle without its tracer: the profile counts samples, as without --idle. */
static int off_cpu_check(struct ember_record *r, int rc)
{
	if (rc == 0 && ember_sampler_off_cpu_error(r->sampler))
		r->opts.sampler.off_cpu = false;
	return rc;
}

int ember_record_start(struct ember_record *r)
{
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	r->start_unix_ns = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec;
	describe_command(r);
	r->t0_s = (double)ember_now_ns() / 1e9;
	if (r->opts.pid) {
		r->usage0_ok = read_usage(r->opts.pid, &r->usage0_user_s, &r->usage0_sys_s, &r->usage0_vol,
					  &r->usage0_invol);
		return off_cpu_check(r, ember_sampler_attach(r->sampler, r->opts.pid));
	}
	int rc = sudo_user(r);
	if (rc < 0)
		return rc;
	jit_env_setup(r);
	return off_cpu_check(r, ember_sampler_launch(r->sampler, r->opts.argv, r->as_user ? &r->as : NULL, &r->child));
}

void ember_record_capture(struct ember_record *r, volatile sig_atomic_t *stop, ember_record_progress_fn progress,
			  void *arg)
{
	static volatile sig_atomic_t never;
	r->stop = stop ? stop : &never;
	capture_run(r, progress, arg);
	if (r->child > 0 && !r->child_reaped && !*r->stop)
		kill(r->child, SIGTERM);   /* the duration passed */
}

void record_fill_meta(struct ember_record *r, struct ember_profile *p)
{
	struct ember_sampler_stats st;
	ember_sampler_get_stats(r->sampler, &st);
	struct ember_run_meta *m = &p->meta;
	m->command = ember_profile_cstr(p, r->command);
	m->pid = (uint32_t)ember_record_target(r);
	m->freq_hz = r->opts.sampler.freq_hz;
	if (r->opts.sampler.off_cpu) {
		m->interval_ns = 1000;   /* counts are microseconds (capture.c) */
		m->wall_clock = true;
	}
	m->start_unix_ns = r->start_unix_ns;
	/* During the capture (a checkpoint), the run so far. */
	double wall = r->wall_s > 0 ? r->wall_s : (double)ember_now_ns() / 1e9 - r->t0_s;
	m->duration_ns = (uint64_t)(wall * 1e9);
	m->samples = st.samples;
	m->lost = st.lost;
	m->truncated = st.truncated + r->pr.cut;
	m->unwind_errors = st.unwind_errors;
	m->kernel_frames = r->opts.sampler.kernel && !st.kernel_excluded;
	m->source = ember_profile_cstr(p, "ember record");
}

int ember_record_profile(struct ember_record *r, struct ember_profile *p)
{
	record_fill_meta(r, p);
	if (r->oom)
		return -1;
	uint64_t t0 = ember_cpu_ns();
	struct build_in in = { .raw = r->raw, .sampler = r->sampler, .python = r->python, .jit = r->jit,
			       .opts = &r->opts, .wait_frames = r->opts.merge.native_unfiltered };
	int rc = build_profile(&in, p, &r->mismatched, &r->attr);
	r->symbolize_s = (double)(ember_cpu_ns() - t0) / 1e9;
	p->meta.mismatched = r->mismatched;
	return rc;
}

static uint32_t jit_remove_maps(struct ember_record *r)
{
	size_t cursor = 0;
	uint32_t n = 0;
	struct ember_jit_process jp;
	while (r->jit_remove && ember_sampler_jit_next(r->sampler, &cursor, false, &jp))
		if (jp.onednn)   /* (another JIT's own map is not ember's to delete) */
			n += ember_jit_map_remove_perf_map(r->jit, jp.pid);
	return n;
}

static int wait_child(struct ember_record *r)
{
	if (!r->child_reaped) {
		while (wait4(r->child, &r->child_status, 0, &r->child_ru) < 0 && errno == EINTR)
			;
		r->child_reaped = true;
	}
	if (WIFSIGNALED(r->child_status))
		return 128 + WTERMSIG(r->child_status);
	return WEXITSTATUS(r->child_status);
}

/* The median read: the mean counts the reads ember was preempted in. */
static double median_read_us(const struct py_reads *pr)
{
	uint64_t seen = 0;
	for (int i = 0; i < PY_READ_BUCKETS && pr->reads; i++) {
		seen += pr->hist[i];
		if (2 * seen >= pr->reads)
			return (i + 0.5) * PY_READ_BUCKET_NS / 1e3;
	}
	return 0;
}

static void python_stats(const struct ember_record *r, struct ember_record_stats *st)
{
	const struct py_reads *pr = &r->pr;
	double reads = pr->reads ? (double)pr->reads : 1;
	st->python_samples = r->python && ember_py_session_any(r->python);
	st->gil_dropped = pr->gil_dropped;
	st->gil_unknown = pr->gil_unknown;
	st->py_read_us = (double)pr->read_ns / 1e3 / reads;
	st->py_read_median_us = median_read_us(pr);
	st->py_lag_us = (double)pr->lag_ns / 1e3 / reads;
	st->py_late = pr->late;
	st->py_reads = pr->reads;
	st->py_at_sample = pr->at_sample;
	st->py_before_copier = pr->before_copier;
	st->py_before_load = pr->before_load;
	st->copier_asked = r->python && !r->opts.no_copier;
	st->copier_note = "";
	st->switch_note = NULL;
	st->copier_unrolled = false;
	if (!r->python)
		return;
	st->py_setup_ms = (double)ember_py_session_setup_ns(r->python) / 1e6;
	st->copier_note = ember_py_session_copier_note(r->python);
	st->copier_wait_ms = (double)ember_py_session_copier_wait_ns(r->python) / 1e6;
	st->copier_loading = ember_py_session_copier_state(r->python) == EMBER_PY_COPIER_LOADING;
	st->switch_note = r->opts.sampler.off_cpu ? ember_py_session_switch_note(r->python) : NULL;
	st->copier_unrolled = ember_py_session_copier_unrolled(r->python);
	ember_py_session_copier_stats(r->python, &st->copier);
	ember_py_session_totals(r->python, &st->py_checked, &st->py_corrected);
}

int ember_record_finish(struct ember_record *r, struct ember_record_stats *st)
{
	*st = (struct ember_record_stats){ .max_rss_kib = -1, .vol_ctx = -1, .invol_ctx = -1 };
	st->jit_removed = jit_remove_maps(r);
	int status = 0;
	if (r->child > 0) {
		status = wait_child(r);
		const struct rusage *ru = &r->child_ru;
		st->target_user_s = (double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec / 1e6;
		st->target_sys_s = (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec / 1e6;
		st->max_rss_kib = ru->ru_maxrss;
		st->vol_ctx = ru->ru_nvcsw;
		st->invol_ctx = ru->ru_nivcsw;
	} else if (r->opts.pid && r->usage0_ok) {
		double user, sys;
		long vol, invol;
		char hwm[64];
		if (read_usage(r->opts.pid, &user, &sys, &vol, &invol)) {
			st->target_user_s = user - r->usage0_user_s;
			st->target_sys_s = sys - r->usage0_sys_s;
			st->vol_ctx = vol - r->usage0_vol;
			st->invol_ctx = invol - r->usage0_invol;
			st->max_rss_kib = ember_proc_status(r->opts.pid, "VmHWM", hwm, sizeof hwm) ? atol(hwm) : -1;
		}
	}
	ember_sampler_get_stats(r->sampler, &st->sampler);
	st->sampler.truncated += r->pr.cut;
	st->py_cut = r->pr.cut;
	st->wall_s = r->wall_s;
	st->profiler_cpu_s = r->profiler_cpu_s;
	st->symbolize_s = r->symbolize_s;
	st->mismatched = r->mismatched;
	python_stats(r, st);
	const struct build_attr_stats *a = &r->attr;
	for (int k = 0; k < EMBER_POOL_KIND_COUNT; k++) {
		st->pools.worker[k] = a->worker[k];
		st->pools.wait[k] = a->wait[k];
	}
	st->pools.by_peer = a->attributed[ATTR_PEER];
	st->pools.by_bracket = a->attributed[ATTR_BRACKET];
	st->pools.by_one_path = a->attributed[ATTR_ONE_PATH];
	st->pools.no_dispatcher = a->unattributed[ATTR_WHY_NO_DISPATCHER];
	st->pools.several = a->unattributed[ATTR_WHY_SEVERAL];
	st->pools.unsure = a->unattributed[ATTR_WHY_UNSURE];
	struct ember_jit_map_stats jst;
	ember_jit_map_get_stats(r->jit, &jst);
	st->jit_files = jst.files;
	st->jit_entries = jst.entries;
	st->jit_refused = jst.refused;
	st->jit_skipped = jst.skipped;
	st->jit_capped = jst.capped;
	snprintf(st->jit_refused_path, sizeof st->jit_refused_path, "%s", jst.refused_path);
	return status;
}

void ember_record_report(const struct ember_record *r, FILE *out)
{
	if (!r->python)
		return;
	ember_py_session_report(r->python, out);
	if (!ember_py_session_any(r->python) && !ember_py_session_refused(r->python))
		fprintf(out, "ember: %s is not a Python process: native frames only\n",
			r->opts.argv ? r->opts.argv[0] : "the target");
	/* Most unknown: the interpreter keeps no holder ember can read; a few:
	 * reads at the sample that failed. */
	const struct py_reads *pr = &r->pr;
	if (pr->gil_unknown && pr->gil_unknown >= pr->gil_known)
		fprintf(out, "ember: --gil: this Python does not record which thread holds the GIL; "
			"samples of every Python thread were kept\n");
	else if (pr->gil_unknown)
		fprintf(out, "ember: --gil: %" PRIu64 " of %" PRIu64 " Python samples kept whose GIL holder could not "
			"be read\n", pr->gil_unknown, pr->gil_unknown + pr->gil_known);
}
