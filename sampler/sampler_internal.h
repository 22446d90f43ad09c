/* Private to sampler/: the pieces the capture path is built from.
 *
 *   process_model processes, their loaded modules (file + load bias), thread
 *                 names; fed by MMAP2/COMM/FORK/EXIT records and /proc.
 *   unwind        libunwind remote unwinding of one sample's stack copy.
 *   perf_ring     perf_event_open per CPU, ring buffers, record parsing. */
#ifndef EMBER_SAMPLER_INTERNAL_H
#define EMBER_SAMPLER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "elf_view.h"
#include "sampler.h"

/* ---- process_model.c ---- */

struct module {
	uint32_t id;
	char *path;                /* as the target sees it; "[jit]" or "[anon:NAME]" for JIT code */
	char *open_path;           /* as ember opens it ("" for JIT code) */
	pid_t ns_pid;              /* 0: ember's mount namespace; else the process whose root it was read under */
	pid_t jit_pid;             /* > 0: the JIT code of this process (anonymous executable memory,
	                            * one module per process and mapping name; addresses are absolute) */
	struct ember_elf elf;      /* the file, mapped (common/elf_view.h) */
	bool elf_ok;               /* it opened, and its build-id matches the mapping's */
};

/* A module loaded in one process at one bias, covering [lo, hi). */
struct module_load {
	uint64_t lo, hi;
	uint64_t bias;
	struct module *mod;
};

struct unwind_space;           /* unwind.c: libunwind address space of a process */

/* The first bytes of a JIT function, read from the target once (its
 * prologue tells where its return address is; samples unwound after the
 * process exited can no longer read it): JIT_CODE_SETS sets of
 * JIT_CODE_WAYS, forgotten where the process maps new JIT code. */
#define JIT_CODE_SETS 32
#define JIT_CODE_WAYS 4
#define JIT_CODE_BYTES 256
struct jit_code {
	uint64_t start;            /* 0: empty */
	uint32_t len;
	uint8_t bytes[JIT_CODE_BYTES];
};

struct process {
	pid_t pid;
	struct module_load *loads; /* sorted by lo, non-overlapping */
	size_t nloads, loads_cap;
	struct unwind_space *unwind;
	uint64_t last_maps_reload_ns;
	uint32_t code_gen;         /* bumped when code is mapped or the process execs */
	char *jitdump;             /* a jit-PID.dump file it mapped (its path as it sees it), or NULL */
	struct jit_code *jit_code; /* JIT_CODE_SETS * JIT_CODE_WAYS, allocated on first use */
	uint32_t jit_code_next;    /* the way to replace next */
	bool has_jit;              /* it has mapped anonymous executable memory (or a jitdump) */
	bool jit_changed;          /* ... since ember_sampler_jit_next last reported it */
	bool same_mount_ns;
	bool exited;
};

struct thread_name {
	uint32_t pid, tid;
	uint32_t parent_tid;       /* creator: a thread starts with its creator's comm */
	char comm[16];
};

struct process_model {
	struct process **procs;
	size_t nprocs, procs_cap;
	struct module **mods;
	size_t nmods, mods_cap;
	struct thread_name *threads;       /* open-addressing hash on tid */
	size_t threads_cap, nthreads;
	uint64_t scans, scan_ns;           /* stack scans past frames without CFI, and their time */
	ember_jit_start_fn jit_start;      /* ember_sampler_hooks.jit_start */
	void *jit_start_arg;
	char vdso_path[64];                /* dump of ember's own vDSO image, "" if none */
	char self_mnt_ns[64];
};

int process_model_init(struct process_model *pm);
void process_model_free(struct process_model *pm);
struct process *process_get(struct process_model *pm, pid_t pid, bool create);
/* Record an executable mapping (from MMAP2 or /proc/PID/maps): a file, or
 * anonymous memory ("//anon", "", "[anon:NAME]", memfd), which is JIT code. */
void process_add_mapping(struct process_model *pm, struct process *proc, uint64_t start,
			 uint64_t len, uint64_t pgoff, const char *path,
			 const uint8_t *build_id, size_t build_id_len);
/* Read /proc/PID/maps and add every file mapping; rate-limited unless force. */
int process_load_proc_maps(struct process_model *pm, struct process *proc, bool force);
void process_exec(struct process_model *pm, struct process *proc);
void process_fork(struct process_model *pm, pid_t parent, pid_t child);
void process_exit(struct process_model *pm, pid_t pid);
/* The module load covering addr, or NULL. */
const struct module_load *process_find(const struct process *proc, uint64_t addr);

void thread_set_name(struct process_model *pm, uint32_t pid, uint32_t tid, const char *comm, size_t len);
/* A new thread (FORK): until it renames itself it has its creator's name,
 * which may only arrive later from another CPU's ring. */
void thread_set_parent(struct process_model *pm, uint32_t pid, uint32_t tid, uint32_t parent_tid);
const char *thread_get_name(const struct process_model *pm, uint32_t pid, uint32_t tid);
/* Names of every thread of pid from /proc/PID/task/ * /comm. */
void threads_load_proc(struct process_model *pm, pid_t pid);

/* ---- unwind.c ---- */

/* User registers as perf delivers them with mask 0xff0fff (x86-64). */
#define PERF_REGS_COUNT 20
#define PERF_REGS_MASK 0xff0fffULL
#define PERF_REG_BP 6
#define PERF_REG_SP 7
#define PERF_REG_IP 8

struct unwind_input {
	const uint64_t *regs;      /* PERF_REGS_COUNT values */
	const uint8_t *stack;      /* copy starting at regs[SP] */
	uint64_t stack_len;        /* dyn_size */
	uint64_t stack_reserved;   /* size requested: a full copy may be a cut-off one */
};

struct unwind_space *unwind_space_new(void);
void unwind_space_free(struct unwind_space *us);
void unwind_space_flush(struct unwind_space *us, uint64_t lo, uint64_t hi);

/* Unwind one sample into out[] (leaf first).  Sets EMBER_SAMPLE_TRUNCATED /
 * EMBER_SAMPLE_UNWIND_ERROR in *flags.  May reload the process's maps once
 * when the sampled PC is in no known module. */
/* Frames to probe (see ember_frame_probe): asked per frame during the walk. */
struct unwind_probes {
	ember_probe_fn fn;
	void *arg;
	struct ember_frame_probe *out;   /* EMBER_MAX_PROBES */
	uint32_t n;                      /* out: recorded */
};
uint32_t unwind_sample(struct process_model *pm, struct process *proc, const struct unwind_input *in,
		       struct ember_frame_addr *out, uint32_t max, uint32_t *flags, struct unwind_probes *probes);

uint64_t monotonic_ns(void);

/* ---- unwind_lock.c: libunwind's signal-blocking lock, made free ---- */
void unwind_lock_enter(void);
void unwind_lock_leave(void);

/* ---- perf_ring.c ---- */

struct perf_event_attr;
struct perf_event_header;

struct perf_ring {
	int fd;                    /* the event whose buffer this is */
	uint8_t *base;             /* metadata page followed by the data pages */
	size_t map_len;
	uint8_t *data;
	uint64_t data_size;        /* power of two */
};

/* The online CPUs (/sys/devices/system/cpu/online). Returns the count. */
int perf_online_cpus(int *cpus, int max);
/* Fill attr for sampling as ember does; launch selects enable_on_exec,
 * wake_per_sample a wakeup at every sample (ember_sampler_hooks). */
void perf_fill_attr(struct perf_event_attr *attr, const struct ember_sampler_opts *opts,
		    bool wake_per_sample, bool launch, bool exclude_kernel);
int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu);
/* mmap a ring of `pages` data pages (a power of two) for fd. 0 or -errno. */
int perf_ring_map(struct perf_ring *r, int fd, size_t pages);
void perf_ring_unmap(struct perf_ring *r);
/* Call fn for every complete record in the ring, then release them.
 * Records that wrap around the end are copied into scratch (64 KiB). */
typedef void (*perf_record_fn)(void *arg, const struct perf_event_header *h);
size_t perf_ring_drain(struct perf_ring *r, uint8_t *scratch, perf_record_fn fn, void *arg);

#endif
