/* ember sampler: the capture hot path.
 *
 * Samples every thread of a target (a launched command or an existing
 * process, and everything it creates later) with a perf_event software clock,
 * copying user registers and a slice of the user stack per sample.  Each
 * sample is unwound as soon as it is read from the ring (DWARF CFI, libunwind
 * remote API over the copy and the mapped ELF files) and handed to the caller
 * as a list of (module id, ELF address) pairs; the stack bytes are dropped.
 * Symbolization happens later, on the cold path, from the module table this
 * sampler keeps.
 *
 * One struct ember_sampler holds all state; nothing is global. */
#ifndef EMBER_SAMPLER_H
#define EMBER_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "native_stack.h"


struct ember_sampler_opts {
	uint32_t freq_hz;       /* sampling rate, default 99 */
	uint32_t stack_size;    /* user stack bytes copied per sample, default 65528 (the most perf_event
	                         * copies), multiple of 8: OpenBLAS's DGEMM kernel alone takes 33 KB */
	bool kernel;            /* also sample kernel frames (when permitted) */
	uint32_t ring_pages;    /* data pages per CPU ring (power of two), 0 = default: room for ~128
	                         * samples of stack_size, at most 64 MiB over all CPUs */
	bool off_cpu;           /* also trace the intervals target threads spend off CPU (blocked,
	                         * sleeping, waiting for a CPU): each is delivered as a sample with
	                         * EMBER_SAMPLE_OFF_CPU when the thread runs again (docs/offcpu.md).
	                         * Needs BPF; when it cannot be had, sampling goes on without it
	                         * and ember_sampler_off_cpu_error says why */
};
#define EMBER_SAMPLER_OPTS_DEFAULT { .freq_hz = 99, .stack_size = 65528, .kernel = false, .ring_pages = 0 }

/* One sample as delivered to the caller.  Pointers are valid only during the
 * callback. */
struct ember_sample {
	uint32_t pid, tid;
	uint64_t time_ns;              /* CLOCK_MONOTONIC */
	uint64_t off_cpu_ns;           /* with EMBER_SAMPLE_OFF_CPU: the interval's length */
	uint32_t flags;                /* enum ember_sample_flags */
	uint32_t code_gen;             /* changes when the process maps new code or execs:
	                                * a reader that gave up on it may look again */
	uint32_t nframes;              /* user frames, leaf first */
	const struct ember_frame_addr *frames;
	uint32_t nkernel;              /* kernel frames, leaf first (--kernel) */
	const uint64_t *kernel_ips;
	/* Registers at the sample, for readers of interpreter state (Python). */
	uint64_t sp, ip;
	uint32_t nprobes;              /* frames picked by the probe hook, leaf first */
	const struct ember_frame_probe *probes;
};

typedef void (*ember_sample_fn)(void *arg, const struct ember_sample *s);


/* A module (ELF file) seen mapped executable in some target process.  Ids are
 * dense from 0 and stable for the sampler's life. */
struct ember_module_info {
	const char *path;        /* as mapped in the target ("/usr/lib/x86_64-linux-gnu/libc.so.6", "[vdso]") */
	const char *open_path;   /* how ember opens it ("/proc/PID/root/...") */
	const char *root;        /* the root directory its process saw, when not ember's (a chroot,
	                          * a container): "/proc/self/fd/N", held; NULL otherwise */
	const uint8_t *build_id; /* NULL when unknown */
	size_t build_id_len;
	uint32_t jit_pid;        /* > 0: JIT code of this process, no file (path "[jit]" or
	                          * "[anon:NAME]", open_path ""); its addresses are absolute */
};

struct ember_sampler_stats {
	uint64_t samples;        /* SAMPLE records read */
	uint64_t lost;           /* samples lost (LOST records) */
	uint64_t truncated;      /* stacks cut by the copy size or the frame cap */
	uint64_t frame_capped;   /* ... of them, by the frame cap (EMBER_MAX_FRAMES) */
	uint64_t unwind_errors;  /* other unwinding failures */
	uint64_t no_cfi;         /* samples whose walk met a frame without usable unwind info */
	uint64_t scanned;        /* ... of them, with every such frame's caller found by a stack scan */
	uint64_t scans, scan_ns; /* stack scans run (one per frame without CFI) and their elapsed time */
	uint64_t unwind_ns;      /* elapsed time spent unwinding (CLOCK_MONOTONIC: a preempted
	                          * profiler counts the wait too; cheap enough per sample) */
	/* A task's sampling clock starts at its creation, and runs apart on
	 * each CPU: a task that ends leaves the CPU time since its last sample
	 * on each CPU unsampled (under one period each; all of it for a task
	 * shorter than a period).  What tasks created during the run left so,
	 * as the kernel reports it when they end: */
	uint64_t unsampled_ns;   /* CPU time after the last sample, summed */
	uint64_t ended_tasks;    /* tasks (threads, processes) created and ended while sampled */
	bool kernel_excluded;    /* kernel frames/time were not permitted */
	uint32_t bpf_attached, bpf_failed; /* events the BPF program was / could not be attached to */
	uint64_t off_cpu;        /* off-CPU intervals delivered (opts.off_cpu) */
	uint64_t off_cpu_lost;   /* ... lost: the tracer's ring was full */
};

/* Error codes returned (negated) by start functions, with a message in the
 * sampler's error buffer (ember_sampler_error). */
enum ember_sampler_err {
	EMBER_SERR_NONE = 0,
	EMBER_SERR_NO_PROCESS,   /* no such pid, or it exited during attach */
	EMBER_SERR_PERMISSION,   /* perf_event_paranoid, ptrace, seccomp, other user */
	EMBER_SERR_LIMIT,        /* fds, locked memory */
	EMBER_SERR_INVALID,      /* option rejected by the kernel */
	EMBER_SERR_NOT_FOUND,    /* command not found (launch) */
	EMBER_SERR_SYSTEM,       /* anything else */
};

struct ember_sampler;

struct ember_sampler *ember_sampler_new(const struct ember_sampler_opts *opts);
void ember_sampler_free(struct ember_sampler *s);

/* Who a launched command runs as, when not as the caller: a caller running
 * as root on behalf of another user (ember under sudo) names that user.
 * Before it execs, the child takes the supplementary groups, then the group
 * and the user id (real, effective and saved: root cannot be regained),
 * then, when given, HOME and USER/LOGNAME. */
struct ember_launch_user {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;     /* supplementary groups */
	size_t ngroups;
	const char *name;        /* USER and LOGNAME; NULL: left as they are */
	const char *home;        /* HOME; NULL: left as it is */
};

/* Fork and exec argv[0] (PATH search), sampling from its exec on; as the
 * user `as` names (NULL: as the caller).  On success *child is its pid;
 * the caller reaps it.  The child is in ember's process group; signals are
 * the caller's business.  Returns 0 or -enum ember_sampler_err. */
int ember_sampler_launch(struct ember_sampler *s, char *const argv[], const struct ember_launch_user *as,
			 pid_t *child);

/* Sample every thread of pid (and threads/children created later).
 * Returns 0 or -enum ember_sampler_err. */
int ember_sampler_attach(struct ember_sampler *s, pid_t pid);

/* Wait up to timeout_ms for data, then drain every ring, calling fn for each
 * sample.  Returns the number of samples delivered, or -1 on a fatal error.
 * Returns 0 and sets *done (if non-NULL) when every target thread is gone. */
int ember_sampler_poll(struct ember_sampler *s, int timeout_ms, ember_sample_fn fn, void *arg,
		       bool *done);

/* What the caller plugs into capture: functions the sampler calls while it
 * reads and unwinds samples, and descriptors it wires into the events it
 * opens.  Every member is optional: 0 or NULL is "none", so designated
 * initializers name just the ones wanted.
 *
 * Every function is called on the thread that runs ember_sampler_poll,
 * from inside that call, one at a time (the sampler has no threads of its
 * own) and never from a signal handler.  Each gets its own arg back, which
 * must stay valid while the sampler polls.  They may read the sampler
 * (ember_sampler_module, ember_sampler_thread_name, ember_sampler_error)
 * but must not poll, stop, attach, launch or free it.  Every microsecond
 * they take delays the sample being read, and the ones after it in the
 * ring. */
struct ember_sampler_hooks {
	/* Called once per sample with user registers, as soon as it is read
	 * from the ring and before it is unwound: pid, tid, time_ns, flags
	 * (IN_KERNEL), code_gen, sp and ip are set, the frames and probes are
	 * not (nframes, nprobes 0).  For readers of live state, such as Python
	 * frames, whose reads go stale while ember unwinds.  The poll's own
	 * callback follows for the same sample.  Samples without user registers
	 * (kernel threads, exiting tasks) reach neither. */
	ember_sample_fn early;
	void *early_arg;
	/* Asked for every frame while the unwinder adds it, leaf first (pc:
	 * absolute, inside the call for callers), until EMBER_MAX_PROBES frames
	 * of the sample are picked; true records a struct ember_frame_probe for
	 * the frame in the sample's probes.  Frames of a stack-scan candidate
	 * that is then rejected are asked too, and their probes dropped.  Runs
	 * per frame on the hot path: it must be cheap (a range check). */
	ember_probe_fn probe;
	void *probe_arg;
	/* Asked while unwinding past a frame without CFI whose pc lies in JIT
	 * code (addr: inside the call for callers): the start of the function
	 * holding addr, from the JIT's perf map or jitdump (symbolizer/jit_map.h).
	 * When it answers, the sampler reads the function's first bytes from the
	 * target (once per function, kept until new code is mapped there) and
	 * takes the return address from its prologue; otherwise, and without
	 * this hook, the frame is passed by the stack scan alone.  Asked only
	 * for such frames: it may read files, but a miss should be cheap. */
	ember_jit_start_fn jit_start;
	void *jit_start_arg;
	/* > 0: a BPF perf_event program, attached (PERF_EVENT_IOC_SET_BPF) to
	 * every event the sampler opens, so that it runs at each sample before
	 * the record is written.  Optional: events it cannot be attached to are
	 * counted (ember_sampler_stats.bpf_attached, bpf_failed), not fatal.
	 * The caller keeps and closes the fd. */
	int bpf_prog_fd;
	/* > 0: ember_sampler_poll also returns when this fd is readable (that
	 * program's own ring: it wakes ember for the samples that must be read
	 * at once).  The sampler only polls it; the caller reads and closes it. */
	int wake_fd;
	/* The rings wake poll at every sample instead of when half full: for
	 * readers of live state (early) that must run right after the sample,
	 * at the cost of a wakeup per sample. */
	bool wake_per_sample;
};

/* Set the hooks (copied) before ember_sampler_launch or ember_sampler_attach:
 * the descriptors and the wakeup policy are applied as events are opened.
 * Without a call, there are none. */
void ember_sampler_set_hooks(struct ember_sampler *s, const struct ember_sampler_hooks *hooks);
/* Attach BPF perf_event program prog_fd (> 0) to every event open now and
 * to those opened later, as hooks.bpf_prog_fd does from the start (for a
 * program that became ready during the run); counted the same way. */
void ember_sampler_attach_bpf(struct ember_sampler *s, int prog_fd);

/* Stop sampling (disable the events) without losing queued samples:
 * call ember_sampler_poll once more with timeout 0 after this. */
void ember_sampler_stop(struct ember_sampler *s);

const char *ember_sampler_error(const struct ember_sampler *s);
/* With opts.off_cpu: why off-CPU intervals are not traced (one line), or
 * NULL when they are. */
const char *ember_sampler_off_cpu_error(const struct ember_sampler *s);
void ember_sampler_get_stats(const struct ember_sampler *s, struct ember_sampler_stats *st);

uint32_t ember_sampler_module_count(const struct ember_sampler *s);
void ember_sampler_module(const struct ember_sampler *s, uint32_t id, struct ember_module_info *out);

/* Processes with JIT code (anonymous executable memory, or a jitdump file
 * mapped), for readers of the files JIT compilers write for profilers.
 * Call with *cursor 0, then again until it returns false.  changed_only:
 * just the processes whose JIT code changed since they were last reported. */
struct ember_jit_process {
	pid_t pid;
	const char *jitdump;     /* path of its jitdump file as the process sees it, or NULL */
	bool onednn;             /* it maps oneDNN (libdnnl, libmkldnn, or PyTorch's libtorch_cpu,
	                          * which may hold it): the JIT that ONEDNN_JIT_PROFILE drives */
};
bool ember_sampler_jit_next(struct ember_sampler *s, size_t *cursor, bool changed_only,
			    struct ember_jit_process *out);

/* Last comm seen for a thread ("" if none). */
const char *ember_sampler_thread_name(const struct ember_sampler *s, uint32_t pid, uint32_t tid);

#endif
