/* The sampler's lifecycle and its drain (sampler.h): state made and freed,
 * the hooks set, every CPU's ring drained at each poll, and what the model
 * knows handed out.  Opening the events is sampler_events.c; what each
 * record does, sampler_records.c; the state they share, with the error
 * every failing call leaves in it, sampler_state.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "offcpu.h"
#include "proc.h"
#include "sampler_events.h"
#include "sampler_records.h"
#include "sampler_state.h"

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
	/* One per CPU ring, then the caller's wake fd (hooks.wake_fd), then
	 * the off-CPU tracer's ring. */
	s->pfds = calloc((size_t)s->ncpus + 2, sizeof *s->pfds);
	s->ring_active = calloc((size_t)s->ncpus, sizeof *s->ring_active);
	if (!s->scratch || !s->rings || !s->pfds || !s->ring_active || process_model_init(&s->pm) != 0) {
		ember_sampler_free(s);
		return NULL;
	}
	for (int i = 0; i <= s->ncpus + 1; i++)
		s->pfds[i].fd = -1;   /* poll skips a CPU whose ring is not mapped (yet) */
	/* ncpus x threads descriptors in attach mode: take all we may. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return s;
}

void ember_sampler_free(struct ember_sampler *s)
{
	if (!s)
		return;
	if (s->rings)
		sampler_close_events(s);
	offcpu_free(s->offcpu);
	unwinder_free(&s->unw);
	process_model_free(&s->pm);
	free(s->fds);
	free(s->rings);
	free(s->pfds);
	free(s->ring_active);
	free(s->scratch);
	free(s);
}

void ember_sampler_set_hooks(struct ember_sampler *s, const struct ember_sampler_hooks *hooks)
{
	s->hooks = *hooks;
	s->unw.jit_start = hooks->jit_start;
	s->unw.jit_start_arg = hooks->jit_start_arg;
}

/* ---- the drain ---- */

int ember_sampler_poll(struct ember_sampler *s, int timeout_ms, ember_sample_fn fn, void *arg, bool *done)
{
	if (done)
		*done = false;
	if (timeout_ms > 0 && !s->stopped) {
		nfds_t n = (nfds_t)s->ncpus;
		if (s->hooks.wake_fd > 0)
			s->pfds[n++] = (struct pollfd){ .fd = s->hooks.wake_fd, .events = POLLIN };
		if (offcpu_poll_fd(s->offcpu) >= 0)
			s->pfds[n++] = (struct pollfd){ .fd = offcpu_poll_fd(s->offcpu), .events = POLLIN };
		int rc = poll(s->pfds, n, timeout_ms);
		if (rc < 0 && errno != EINTR)
			return -1;
	}
	s->fn = fn;
	s->fn_arg = arg;
	s->delivered = 0;
	perf_rings_drain(s->rings, s->ncpus, s->ring_active, s->scratch, sampler_handle_record, s);
	offcpu_drain(s->offcpu, s);   /* after the mappings the rings told of */
	if (done && s->attached && ember_proc_gone(s->target))
		*done = true;
	return s->delivered;
}

/* ---- what the model knows ---- */

const char *ember_sampler_error(const struct ember_sampler *s)
{
	return s->err;
}

const char *ember_sampler_off_cpu_error(const struct ember_sampler *s)
{
	return s->opts.off_cpu && !s->offcpu ? s->offcpu_err : NULL;
}

void ember_sampler_get_stats(const struct ember_sampler *s, struct ember_sampler_stats *st)
{
	*st = s->stats;
	uint64_t period_ns = 1000000000ull / (s->opts.freq_hz ? s->opts.freq_hz : 1);
	thread_unsampled(&s->pm, period_ns, &st->ended_tasks, &st->unsampled_ns);
	st->scans = s->unw.scans;
	st->scan_ns = s->unw.scan_ns;
	uint64_t sent;
	offcpu_counts(s->offcpu, &sent, &st->off_cpu_lost);
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
	out->root = m->root;
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
