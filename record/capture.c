/* The capture: the sampler's hooks, the drain policy, and the loop that
 * drains the sampler until the run ends. Per sample: the Python frames are
 * read before the native stack is unwound, checked against what the
 * sample held, and the two are counted together in raw stacks. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "clock.h"
#include "capture.h"

#define POLL_MS 100      /* drain at least this often (a half-full ring wakes ember sooner) */
/* ... and, when Python frames are copied at the sample, after about this
 * many samples of a thread, within these bounds: the first read of a drain
 * finds ember's caches cold (~10 us against ~1 for the rest), so it is
 * shared by that many reads (at 99 Hz every 250 ms, at 499 Hz and over
 * every 50 ms). What cannot wait wakes ember at once (the copier's records
 * of code objects and threads it has not seen, a half-full ring, the
 * target's exit). */
#define PY_DRAIN_SAMPLES 25
#define PY_DRAIN_MIN_MS 50
#define PY_DRAIN_MAX_MS 250
#define LOADING_POLL_MS 10   /* while the copier is being loaded: frames read after the sample */
#define LATE_READ_NS 1000000ull  /* a read this long after its sample is late */

/* Python frames are read in the early hook, before the native stack is
 * unwound: every microsecond between the sample and the read is a chance
 * for the thread to move on. on_sample then takes them from here. */
static void read_python_early(void *arg, const struct ember_sample *s)
{
	struct ember_record *r = arg;
	struct py_reads *pr = &r->pr;
	if (r->opts.knobs.py_read_delay_ns && (r->test_reads++ & 1)) {
		/* Test knob: every other read late, as on a loaded machine. */
		uint64_t at = s->time_ns + r->opts.knobs.py_read_delay_ns;
		struct timespec ts = { (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !*r->stop)
			;
	}
	uint64_t start = ember_now_ns(), setup = ember_py_session_setup_ns(r->python);
	r->py_tid = s->tid;
	r->py_time = s->time_ns;
	r->py_lag = start > s->time_ns ? start - s->time_ns : 0;
	r->pyflags = 0;
	int n = ember_py_session_read(r->python, s, r->py, MAX_PY_FRAMES, &r->pyflags, &r->py_peer);
	/* A pool's worker without the copier (or started before it was
	 * ready, so its events lack the program): its dispatcher's frames
	 * read now, while they still are the ones of its sample (the wake-up
	 * per sample makes the read prompt; a late one is dropped). */
	bool uncopied = ember_py_session_wake_fd(r->python) < 0 || r->copier_attached_late;
	uint32_t peer = n <= 0 && r->pools && uncopied ? pool_watch_peer(r->pools, s->pid, s->tid) : 0;
	if (peer) {
		n = ember_py_session_read_peer(r->python, s->pid, peer, r->py, MAX_PY_FRAMES, &r->pyflags);
		r->py_peer = peer;
		if (ember_now_ns() - s->time_ns > LATE_READ_NS)
			n = 0;
	}
	r->npy = n > 0 ? (uint32_t)n : 0;
	if (!r->npy)
		r->py_peer = 0;
	pr->before_copier += (r->pyflags & EMBER_PY_BEFORE_COPIER) != 0;
	pr->before_load += n > 0 && ember_py_session_copier_state(r->python) == EMBER_PY_COPIER_LOADING;
	if (r->pyflags & EMBER_PY_AT_SAMPLE)
		r->py_lag = 0;   /* the frames are the sample's own */
	if (n <= 0)
		return;
	pr->reads++;
	pr->at_sample += (r->pyflags & EMBER_PY_AT_SAMPLE) != 0;
	/* Finding the runtime is reported on its own. */
	uint64_t took = ember_now_ns() - start - (ember_py_session_setup_ns(r->python) - setup);
	pr->read_ns += took;
	pr->hist[took / PY_READ_BUCKET_NS < PY_READ_BUCKETS ? took / PY_READ_BUCKET_NS : PY_READ_BUCKETS - 1]++;
	pr->lag_ns += r->py_lag;
	pr->late += r->py_lag > LATE_READ_NS;
}

/* What a sample stands for: one sample; with --idle, microseconds (an
 * interval off CPU its length, a sample of the clock its period), so
 * that a thread's rows add up to its wall time (docs/offcpu.md). */
static uint64_t capture_weight(const struct ember_record_opts *o, const struct ember_sample *s)
{
	if (!o->sampler.off_cpu)
		return 1;
	if (s->flags & EMBER_SAMPLE_OFF_CPU)
		return (s->off_cpu_ns + 500) / 1000;
	uint32_t hz = o->sampler.freq_hz ? o->sampler.freq_hz : 1;
	return (2000000u / hz + 1) / 2;
}

/* A worker's peer changed: the copier is to copy that thread's frames. */
static void set_peer(void *arg, uint32_t pid, uint32_t tid, uint32_t peer)
{
	struct ember_record *r = arg;
	ember_py_session_set_peer(r->python, pid, tid, peer);
}

static void on_sample(void *arg, const struct ember_sample *s)
{
	struct ember_record *r = arg;
	uint32_t npy = 0, pyflags = 0, peer = 0;
	if (r->python && r->py_tid == s->tid && r->py_time == s->time_ns) {
		npy = r->npy;
		pyflags = r->pyflags;
		peer = r->py_peer;
		/* What the sample itself held beats what the read found later
		 * (of the thread's own frames: a peer's are another stack's). */
		if (s->nprobes && !peer) {
			int n = ember_py_session_check(r->python, s, r->py_lag, r->py, (int)npy, MAX_PY_FRAMES,
						       &pyflags);
			npy = n > 0 ? (uint32_t)n : 0;
		}
	}
	/* Off CPU, the frames must be the ones copied as the thread left the
	 * CPU: read any later (a thread the copier did not know yet), they are
	 * where it went since, so none are kept. */
	if ((s->flags & EMBER_SAMPLE_OFF_CPU) && !(pyflags & EMBER_PY_AT_SAMPLE))
		npy = 0;
	if (r->opts.gil_only) {
		if (peer) {
			r->pr.gil_dropped++;   /* a pool's worker holds no GIL */
			return;
		}
		if (!(pyflags & EMBER_PY_GIL_KNOWN) && npy > 0) {
			r->pr.gil_unknown++;
		} else {
			r->pr.gil_known++;
			if (!(pyflags & EMBER_PY_HOLDS_GIL)) {
				r->pr.gil_dropped++;
				return;
			}
		}
	}
	/* A Python stack cut in the middle is a truncated stack (one count
	 * per sample, whichever part was cut). */
	if (npy && (pyflags & EMBER_PY_CUT) && !(s->flags & EMBER_SAMPLE_TRUNCATED))
		r->pr.cut++;
	uint64_t weight = capture_weight(&r->opts, s);
	struct raw_py rp = { .frames = r->py, .n = npy, .flags = pyflags, .peer_tid = peer };
	if (weight && raw_stacks_add_sample(r->raw, s, &rp, weight) != 0)
		r->oom = true;
	/* after the sample is stored: neither delays one */
	if (r->pools && !(s->flags & EMBER_SAMPLE_OFF_CPU))
		pool_watch_sample(r->pools, r->sampler, s, npy && !peer, set_peer, r);
	if (npy && !peer)
		ember_py_session_names(r->python, s);
}

/* The sampler's question while unwinding past JIT code: where does the
 * function start? New code's line may have come after the last read. */
static bool jit_start(void *arg, uint32_t pid, uint64_t addr, uint64_t *start)
{
	struct ember_record *r = arg;
	if (ember_jit_map_lookup(r->jit, (pid_t)pid, addr, start))
		return true;
	ember_jit_map_refresh(r->jit, (pid_t)pid);
	return ember_jit_map_lookup(r->jit, (pid_t)pid, addr, start) != NULL;
}

/* The wake-up policy. Frames copied at the sample are read on a timer and
 * when the copier wakes ember (a code object or thread it has not seen),
 * sparing the target a wakeup per sample. Without the copier, a target
 * that looks like Python wakes ember at every sample, so that its frames
 * are read while they still match; other targets do without (a wake-up
 * costs ember ~10 us a sample), and a native launcher that execs Python
 * later still gets its Python frames, read a little later. */
void capture_hooks(struct ember_record *r)
{
	struct ember_sampler_hooks h = { .jit_start = jit_start, .jit_start_arg = r };
	r->poll_ms = POLL_MS;
	if (r->python) {
		h.early = read_python_early;
		h.early_arg = r;
		h.probe = ember_py_session_is_eval;
		h.probe_arg = r->python;
		/* The copier: the sampler attaches it to every event it opens. */
		h.bpf_prog_fd = ember_py_session_copier_fd(r->python);
		h.wake_per_sample = r->py_likely;
		int wake_fd = ember_py_session_wake_fd(r->python);
		int drain = r->opts.knobs.py_drain_ms;
		if (wake_fd > 0 && drain < 0) {
			uint32_t hz = r->opts.sampler.freq_hz ? r->opts.sampler.freq_hz : 1;
			drain = (int)(PY_DRAIN_SAMPLES * 1000u / hz);
			drain = drain < PY_DRAIN_MIN_MS ? PY_DRAIN_MIN_MS : drain > PY_DRAIN_MAX_MS ? PY_DRAIN_MAX_MS : drain;
		}
		if (wake_fd > 0 && drain > 0) {
			h.wake_per_sample = false;
			h.wake_fd = wake_fd;
			r->poll_ms = drain;
		}
	}
	ember_sampler_set_hooks(r->sampler, &h);
}

/* The copier, loaded once a Python process showed up, is ready: its
 * program goes on the events already open, its ring is polled, and the
 * workers given peers meanwhile are told to it. */
static void copier_ready(struct ember_record *r)
{
	capture_hooks(r);
	ember_sampler_attach_bpf(r->sampler, ember_py_session_copier_fd(r->python));
	r->copier_attached_late = true;
	if (r->pools)
		pool_watch_peers(r->pools, set_peer, r);
}

/* The longest wait between two drains: shorter while the copier is being
 * loaded, as the frames of those samples are read after them. */
static int poll_wait_ms(const struct ember_record *r)
{
	if (r->python && ember_py_session_copier_state(r->python) == EMBER_PY_COPIER_LOADING)
		return r->poll_ms < LOADING_POLL_MS ? r->poll_ms : LOADING_POLL_MS;
	return r->poll_ms;
}

/* Read the perf maps and jitdumps of processes whose JIT code changed (all
 * of them: at the end). */
static void jit_read(struct ember_record *r, bool all)
{
	size_t cursor = 0;
	struct ember_jit_process jp;
	while (ember_sampler_jit_next(r->sampler, &cursor, !all, &jp))
		ember_jit_map_read(r->jit, jp.pid, jp.jitdump);
}

static double self_cpu_s(void)
{
	return (double)ember_cpu_ns() / 1e9;
}

static double now_s(void)
{
	return (double)ember_now_ns() / 1e9;
}

void capture_run(struct ember_record *r, ember_record_progress_fn progress, void *arg)
{
	double t0 = r->t0_s, last_progress = t0, cpu0 = self_cpu_s(), dur = r->opts.duration_s;
	for (;;) {
		bool done = false;
		int wait_ms = poll_wait_ms(r);
		if (dur > 0) {   /* no later than asked */
			double left = dur - (now_s() - t0);
			wait_ms = left <= 0 ? 0 : left * 1000 < wait_ms ? (int)(left * 1000) + 1 : wait_ms;
		}
		if (ember_sampler_poll(r->sampler, wait_ms, on_sample, r, &done) < 0)
			break;
		if (r->python) {
			ember_py_session_consume(r->python);
			if (ember_py_session_copier_poll(r->python))
				copier_ready(r);
		}
		jit_read(r, false);
		if (r->opts.knobs.stall_ms)
			poll(NULL, 0, (int)r->opts.knobs.stall_ms);
		if (r->child > 0 && wait4(r->child, &r->child_status, WNOHANG, &r->child_ru) == r->child) {
			r->child_reaped = true;
			break;
		}
		double t = now_s();
		if (done || *r->stop || (dur > 0 && t - t0 >= dur))
			break;
		if (progress && t - last_progress >= (r->opts.progress_s > 0 ? r->opts.progress_s : 1.0)) {
			progress(arg, t - t0, raw_stacks_samples(r->raw));
			last_progress = t;
		}
	}
	ember_sampler_stop(r->sampler);
	ember_sampler_poll(r->sampler, 0, on_sample, r, NULL);
	jit_read(r, true);
	/* The copier's load on its thread is said on its own (summary). */
	r->profiler_cpu_s = self_cpu_s() - cpu0;
	if (r->python)
		r->profiler_cpu_s -= (double)ember_py_session_copier_load_cpu_ns(r->python) / 1e9;
	r->wall_s = now_s() - t0;
}
