/* What the sampler knows about its targets (process_model.c): for each
 * process, which modules (ELF files, or JIT code) are loaded where, and the
 * name of every thread.  Fed by the sampler from MMAP2, COMM, FORK and EXIT
 * records and from /proc; read by the unwinder, which never changes it.
 *
 * The model only records what changed: code_gen and unmap_gen count
 * changes per process, and every load carries a serial of its own.  Readers
 * that cache what they read from a process's code (the unwinder's CFI and
 * JIT code caches) compare these with what they saw last and drop their
 * own caches; the model calls nobody.
 *
 * Processes are never freed before the model is (an exited one is marked),
 * and neither are modules: module ids are what the cold path symbolizes
 * against, and process indexes key the tables readers keep beside the
 * model.  Not thread-safe. */
#ifndef EMBER_PROCESS_MODEL_H
#define EMBER_PROCESS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "elf_view.h"
#include "idtab.h"

struct module {
	uint32_t id;               /* index in process_model.mods: ember_module_info's id */
	char *path;                /* as the target sees it; "[jit]" or "[anon:NAME]" for JIT code */
	char *open_path;           /* as ember opens it ("" for JIT code) */
	char *root;                /* its process's root directory when not ember's ("/proc/self/fd/N"), or NULL */
	pid_t ns_pid;              /* 0: ember's mount namespace; else the process whose root it was read under */
	pid_t jit_pid;             /* > 0: the JIT code of this process (anonymous executable memory,
	                            * one module per process and mapping name; addresses are absolute) */
	struct ember_elf elf;      /* the file, mapped (common/elf_view.h) */
	bool elf_ok;               /* it opened, and its build-id matches the mapping's */
	uint8_t map_build_id[20];  /* the build-id the mapping declared (MMAP2), if any */
	uint8_t map_build_id_len;
	struct module *next_same_key;  /* the next module (by id) with this path in this namespace:
	                                * another build of the file */
};

/* A module loaded in one process at one bias, covering [lo, hi). */
struct module_load {
	uint64_t lo, hi;
	uint64_t bias;             /* process address - ELF address (0 for JIT code) */
	uint64_t serial;           /* unique to this load in the model: a load put in its place,
	                            * even of the same module at the same addresses, gets another */
	struct module *mod;
};

struct process {
	pid_t pid;
	uint32_t index;            /* its place in process_model.procs, dense from 0 */
	struct module_load *loads; /* sorted by lo, non-overlapping */
	size_t nloads, loads_cap;
	uint64_t last_maps_reload_ns;
	uint32_t code_gen;         /* bumped when code is mapped or the process execs */
	uint32_t unmap_gen;        /* bumped when code it had mapped is gone: a load dropped for other
	                            * code at its addresses, or the exec.  What was read from the code
	                            * there before (CFI, instructions) may be stale. */
	char *jitdump;             /* a jit-PID.dump file it mapped (its path as it sees it), or NULL */
	bool has_jit;              /* it has mapped anonymous executable memory (or a jitdump) */
	bool jit_changed;          /* ... since ember_sampler_jit_next last reported it */
	bool same_root;            /* its mount namespace and root directory are ember's: the paths
	                            * of its maps are ember's too (else under /proc/PID/root) */
	int root_fd;               /* !same_root: its root directory (process_model.roots), or -1 */
	bool exited;
};

struct thread_name {
	uint32_t pid, tid;
	uint32_t parent_tid;       /* creator: a thread starts with its creator's comm */
	char comm[16];
	/* What sampling left out of it: its samples (with user registers),
	 * and, once it has ended, the CPU time the kernel reported for it
	 * (summed over the CPUs' events; only tasks created while sampled). */
	uint32_t samples;
	bool ended;
	uint64_t ended_ns;
};

/* A process's root directory other than ember's (chroot, container), held
 * open (O_PATH) so that its files, debug files included, stay reachable
 * after the process exits; one per directory, shared by its processes. */
struct root_dir {
	dev_t dev;
	ino_t ino;
	int fd;
};

struct process_model {
	struct process **procs;            /* by struct process.index */
	size_t nprocs, procs_cap;
	struct ember_idtab proc_index;     /* pid -> index */
	struct module **mods;              /* by struct module.id */
	size_t nmods, mods_cap;
	struct ember_idtab mod_index;      /* (path, ns_pid, jit_pid) -> first module id */
	struct thread_name *threads;       /* thread_names.c */
	size_t nthreads, threads_cap;
	struct ember_idtab thread_index;   /* tid (unique system-wide) -> index in threads */
	uint64_t load_serial;              /* the last module_load.serial given */
	char vdso_path[64];                /* dump of ember's own vDSO image, "" if none */
	char self_mnt_ns[64];
	struct root_dir *roots;            /* root directories of processes whose root is not ember's */
	size_t nroots, roots_cap;
};

/* 0, or -1 on OOM (then nothing is left to free). */
int process_model_init(struct process_model *pm);
void process_model_free(struct process_model *pm);
/* The process pid, made (empty) when create; NULL when absent or on OOM. */
struct process *process_get(struct process_model *pm, pid_t pid, bool create);
/* Record an executable mapping (from MMAP2 or /proc/PID/maps): a file, or
 * anonymous memory ("//anon", "", "[anon:NAME]", memfd), which is JIT code. */
void process_add_mapping(struct process_model *pm, struct process *proc, uint64_t start,
			 uint64_t len, uint64_t pgoff, const char *path,
			 const uint8_t *build_id, size_t build_id_len);
/* Read /proc/PID/maps and add every executable mapping; rate-limited
 * unless force.  0, or -1 when the file cannot be read. */
int process_load_proc_maps(struct process_model *pm, struct process *proc, bool force);
/* The process replaced its program: every load is gone. */
void process_exec(struct process_model *pm, struct process *proc);
/* A new process starts with its parent's loads. */
void process_fork(struct process_model *pm, pid_t parent, pid_t child);
void process_exit(struct process_model *pm, pid_t pid);
/* The module load covering addr, or NULL.  On the unwinder's hot path. */
const struct module_load *process_find(const struct process *proc, uint64_t addr);

/* ---- thread_names.c ---- */

void thread_set_name(struct process_model *pm, uint32_t pid, uint32_t tid, const char *comm, size_t len);
/* A new thread (FORK): until it renames itself it has its creator's name,
 * which may only arrive later from another CPU's ring. */
void thread_set_parent(struct process_model *pm, uint32_t pid, uint32_t tid, uint32_t parent_tid);
/* Its last name seen ("" if none), valid until the model changes. */
const char *thread_get_name(const struct process_model *pm, uint32_t pid, uint32_t tid);
/* A sample of the thread was taken. */
void thread_sampled(struct process_model *pm, uint32_t pid, uint32_t tid);
/* The thread ended, having run ns of CPU time on one CPU's event. */
void thread_ended_time(struct process_model *pm, uint32_t pid, uint32_t tid, uint64_t ns);
/* Over the threads that ended: how many (*tasks), and the CPU time they ran
 * beyond their samples' share (samples x period_ns), summed (*ns). */
void thread_unsampled(const struct process_model *pm, uint64_t period_ns, uint64_t *tasks, uint64_t *ns);
/* Names of every thread of pid from /proc/PID/task/ * /comm. */
void threads_load_proc(struct process_model *pm, pid_t pid);

#endif
