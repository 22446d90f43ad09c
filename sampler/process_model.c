/* What the sampler knows about its targets (process_model.h): for each
 * process, which ELF modules are loaded where (fed by MMAP2 records and
 * /proc/PID/maps), and the name of every thread (COMM records and /proc).
 * Modules are shared between processes. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "process_model.h"

static bool grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t ncap = *cap ? *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	void *p = realloc(*arr, ncap * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = ncap;
	return true;
}

/* The vDSO has no file.  Every process on this kernel maps the same image, so
 * ember's own copy stands in for the target's: put it in a memfd so that both
 * the unwinder and the symbolizer can open it by path. */
static void dump_vdso(struct process_model *pm)
{
	const void *base = (const void *)getauxval(AT_SYSINFO_EHDR);
	FILE *f = fopen("/proc/self/maps", "re");
	if (!base || !f) {
		if (f)
			fclose(f);
		return;
	}
	char line[512];
	size_t size = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
		    lo == (unsigned long)base)
			size = hi - lo;
	}
	fclose(f);
	int fd = size ? memfd_create("ember-vdso", MFD_CLOEXEC) : -1;
	if (fd < 0)
		return;
	if (write(fd, base, size) != (ssize_t)size) {
		close(fd);
		return;
	}
	snprintf(pm->vdso_path, sizeof pm->vdso_path, "/proc/self/fd/%d", fd);
	/* fd stays open for the sampler's life; closed in process_model_free. */
}

int process_model_init(struct process_model *pm)
{
	memset(pm, 0, sizeof *pm);
	ssize_t n = readlink("/proc/self/ns/mnt", pm->self_mnt_ns, sizeof pm->self_mnt_ns - 1);
	if (n > 0)
		pm->self_mnt_ns[n] = 0;
	dump_vdso(pm);
	return 0;
}

void process_model_free(struct process_model *pm)
{
	for (size_t i = 0; i < pm->nprocs; i++) {
		free(pm->procs[i]->loads);
		free(pm->procs[i]->jitdump);
		free(pm->procs[i]);
	}
	free(pm->procs);
	for (size_t i = 0; i < pm->nmods; i++) {
		struct module *m = pm->mods[i];
		if (m->elf_ok)
			ember_elf_close(&m->elf);
		free(m->path);
		free(m->open_path);
		free(m);
	}
	free(pm->mods);
	free(pm->threads);
	int fd;
	if (pm->vdso_path[0] && sscanf(pm->vdso_path, "/proc/self/fd/%d", &fd) == 1)
		close(fd);
	memset(pm, 0, sizeof *pm);
}

/* Paths in the maps of a process in another mount namespace (a container,
 * `unshare -m`) mean nothing here: those files are opened under /proc/PID/root. */
static void check_mount_ns(const struct process_model *pm, struct process *p)
{
	char path[64], ns[64];
	snprintf(path, sizeof path, "/proc/%d/ns/mnt", p->pid);
	ssize_t n = readlink(path, ns, sizeof ns - 1);
	if (n > 0)
		ns[n] = 0;
	/* Unknown (no permission, already gone): assume ours, the common case. */
	p->same_mount_ns = n <= 0 || strcmp(ns, pm->self_mnt_ns) == 0;
}

struct process *process_get(struct process_model *pm, pid_t pid, bool create)
{
	for (size_t i = 0; i < pm->nprocs; i++)
		if (pm->procs[i]->pid == pid)
			return pm->procs[i];
	if (!create || !grow((void **)&pm->procs, &pm->procs_cap, pm->nprocs + 1, sizeof *pm->procs))
		return NULL;
	struct process *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->pid = pid;
	p->index = (uint32_t)pm->nprocs;
	check_mount_ns(pm, p);
	pm->procs[pm->nprocs++] = p;
	return p;
}

/* Executable memory no file backs: JIT code.  Its name for the profile:
 * "[anon:NAME]" for a mapping its process named (PR_SET_VMA_ANON_NAME),
 * else "[jit]".  NULL for anything else. */
static const char *jit_region_name(const char *path)
{
	if (!path[0] || strncmp(path, "//anon", 6) == 0 || strncmp(path, "/dev/zero", 9) == 0 ||
	    strncmp(path, "memfd:", 6) == 0 || strncmp(path, "/memfd:", 7) == 0 ||
	    strncmp(path, "anon_inode:", 11) == 0)
		return "[jit]";
	if (strncmp(path, "[anon:", 6) == 0)
		return path;
	return NULL;
}

/* Mappings that are neither a module nor JIT code: [vvar], [vsyscall],
 * [stack], SysV shared memory. */
static bool ignored_path(const char *path)
{
	return (path[0] == '[' && strcmp(path, "[vdso]") != 0) || strncmp(path, "/SYSV", 5) == 0;
}

/* A jitdump file ("jit-PID.dump"), which its writer maps executable so
 * that profilers see where it is. */
static bool is_jitdump(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strlen(base);
	return strncmp(base, "jit-", 4) == 0 && n > 9 && strcmp(base + n - 5, ".dump") == 0 &&
	       strspn(base + 4, "0123456789") == n - 9;
}

static struct module *module_get(struct process_model *pm, struct process *proc, const char *path,
				 uint64_t start, uint64_t end, const uint8_t *build_id, size_t build_id_len)
{
	static const char deleted[] = " (deleted)";
	size_t plen = strlen(path);
	bool is_deleted = plen > sizeof deleted - 1 && strcmp(path + plen - (sizeof deleted - 1), deleted) == 0;

	/* The same path in another mount namespace may be another file. */
	pid_t ns_pid = proc->same_mount_ns ? 0 : proc->pid;
	for (size_t i = 0; i < pm->nmods; i++) {
		struct module *m = pm->mods[i];
		if (strcmp(m->path, path) != 0 || m->ns_pid != ns_pid)
			continue;
		if (!build_id_len || !m->elf_ok || !m->elf.build_id_len ||
		    (m->elf.build_id_len == build_id_len && memcmp(m->elf.build_id, build_id, build_id_len) == 0))
			return m;
	}
	if (!grow((void **)&pm->mods, &pm->mods_cap, pm->nmods + 1, sizeof *pm->mods))
		return NULL;
	struct module *m = calloc(1, sizeof *m);
	if (!m || !(m->path = strdup(path))) {
		free(m);
		return NULL;
	}
	m->id = (uint32_t)pm->nmods;
	m->ns_pid = ns_pid;
	char buf[4200];
	const char *open_path = path;
	if (strcmp(path, "[vdso]") == 0) {
		open_path = pm->vdso_path;
	} else if (is_deleted) {
		/* The file on disk is gone or replaced; the mapping itself is still
		 * reachable (needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE). */
		snprintf(buf, sizeof buf, "/proc/%d/map_files/%lx-%lx", proc->pid,
			 (unsigned long)start, (unsigned long)end);
		open_path = buf;
	} else if (!proc->same_mount_ns) {
		snprintf(buf, sizeof buf, "/proc/%d/root%s", proc->pid, path);
		open_path = buf;
	}
	m->elf_ok = open_path[0] && ember_elf_open(&m->elf, open_path) == 0;
	if (m->elf_ok && build_id_len && m->elf.build_id_len &&
	    (m->elf.build_id_len != build_id_len || memcmp(m->elf.build_id, build_id, build_id_len) != 0)) {
		/* The file at that path is not the one mapped: unwinding with its
		 * CFI would produce wrong stacks.  Keep the module for naming only. */
		ember_elf_close(&m->elf);
		m->elf_ok = false;
	}
	if (m->elf_ok && open_path != path && open_path != pm->vdso_path) {
		/* Paths under /proc/PID vanish with the process; keep the file
		 * reachable for the symbolizer through our own descriptor. */
		snprintf(buf, sizeof buf, "/proc/self/fd/%d", m->elf.fd);
		open_path = buf;
	}
	m->open_path = strdup(open_path);
	if (!m->open_path) {
		if (m->elf_ok)
			ember_elf_close(&m->elf);
		free(m->path);
		free(m);
		return NULL;
	}
	pm->mods[pm->nmods++] = m;
	return m;
}

/* The JIT module of proc named name ("[jit]", "[anon:NAME]"), made on first use. */
static struct module *jit_module_get(struct process_model *pm, const struct process *proc, const char *name)
{
	for (size_t i = pm->nmods; i-- > 0;)
		if (pm->mods[i]->jit_pid == proc->pid && strcmp(pm->mods[i]->path, name) == 0)
			return pm->mods[i];
	if (!grow((void **)&pm->mods, &pm->mods_cap, pm->nmods + 1, sizeof *pm->mods))
		return NULL;
	struct module *m = calloc(1, sizeof *m);
	if (!m || !(m->path = strdup(name)) || !(m->open_path = strdup(""))) {
		if (m)
			free(m->path);
		free(m);
		return NULL;
	}
	m->id = (uint32_t)pm->nmods;
	m->jit_pid = proc->pid;
	pm->mods[pm->nmods++] = m;
	return m;
}

/* Put ml into proc's sorted loads, under a new serial, dropping whatever it
 * overlaps (an unmapped library replaced at the same addresses, freed JIT
 * code, or our own older, narrower entry). */
static void insert_load(struct process_model *pm, struct process *proc, struct module_load *ml)
{
	size_t w = 0;
	ml->serial = ++pm->load_serial;
	for (size_t i = 0; i < proc->nloads; i++) {
		struct module_load *l = &proc->loads[i];
		if (l->lo < ml->hi && ml->lo < l->hi) {
			if (!(l->mod == ml->mod && l->bias == ml->bias))
				proc->unmap_gen++;   /* other code there now */
			continue;
		}
		proc->loads[w++] = *l;
	}
	proc->nloads = w;
	if (!grow((void **)&proc->loads, &proc->loads_cap, proc->nloads + 1, sizeof *proc->loads))
		return;
	size_t pos = proc->nloads;
	while (pos > 0 && proc->loads[pos - 1].lo > ml->lo) {
		proc->loads[pos] = proc->loads[pos - 1];
		pos--;
	}
	proc->loads[pos] = *ml;
	proc->nloads++;
	proc->code_gen++;
}

void process_add_mapping(struct process_model *pm, struct process *proc, uint64_t start,
			 uint64_t len, uint64_t pgoff, const char *path,
			 const uint8_t *build_id, size_t build_id_len)
{
	if (len == 0)
		return;
	if (is_jitdump(path)) {
		if (!proc->jitdump || strcmp(proc->jitdump, path) != 0) {
			free(proc->jitdump);
			proc->jitdump = strdup(path);
			proc->has_jit = proc->jit_changed = true;
		}
		return;
	}
	const char *jit = jit_region_name(path);
	if (jit) {
		/* One load per mapping, never widened: JIT regions lie between
		 * libraries, and their addresses are their own (bias 0). */
		struct module *mod = jit_module_get(pm, proc, jit);
		const struct module_load *have = process_find(proc, start);
		if (!mod || (have && have->mod == mod && have->lo == start && have->hi == start + len))
			return;
		insert_load(pm, proc, &(struct module_load){ .lo = start, .hi = start + len, .mod = mod });
		proc->has_jit = proc->jit_changed = true;
		return;
	}
	if (ignored_path(path))
		return;
	struct module *mod = module_get(pm, proc, path, start, start + len, build_id, build_id_len);
	if (!mod)
		return;
	struct module_load ml = { .mod = mod };
	if (mod->elf_ok) {
		ml.bias = ember_elf_bias(&mod->elf, start, pgoff);
		/* Cover every segment, not just this mapping: .eh_frame often sits
		 * in a read-only segment no MMAP2 record reports. */
		ml.lo = ml.bias + (mod->elf.min_vaddr & ~0xfffULL);
		ml.hi = ml.bias + mod->elf.max_vaddr;
		if (start < ml.lo)
			ml.lo = start;
		if (start + len > ml.hi)
			ml.hi = start + len;
	} else {
		ml.bias = start - pgoff;
		ml.lo = start;
		ml.hi = start + len;
	}

	/* Already known, or a widening of a load we have. */
	for (size_t i = 0; i < proc->nloads; i++) {
		struct module_load *l = &proc->loads[i];
		if (l->mod == mod && l->bias == ml.bias) {
			if (ml.lo >= l->lo && ml.hi <= l->hi)
				return;
			ml.lo = ml.lo < l->lo ? ml.lo : l->lo;
			ml.hi = ml.hi > l->hi ? ml.hi : l->hi;
			break;
		}
	}
	insert_load(pm, proc, &ml);
}

const struct module_load *process_find(const struct process *proc, uint64_t addr)
{
	size_t lo = 0, hi = proc->nloads;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct module_load *l = &proc->loads[mid];
		if (addr < l->lo)
			hi = mid;
		else if (addr >= l->hi)
			lo = mid + 1;
		else
			return l;
	}
	return NULL;
}

int process_load_proc_maps(struct process_model *pm, struct process *proc, bool force)
{
	uint64_t now = ember_now_ns();
	if (!force && now - proc->last_maps_reload_ns < 50 * 1000000ull)
		return 0;
	proc->last_maps_reload_ns = now;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", proc->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char line[4400];
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi, off;
		char perms[5];
		int n = 0;
		if (sscanf(line, "%lx-%lx %4s %lx %*x:%*x %*u %n", &lo, &hi, perms, &off, &n) < 4 || !n)
			continue;
		if (perms[2] != 'x')
			continue;
		char *name = line + n;
		name[strcspn(name, "\n")] = 0;
		process_add_mapping(pm, proc, lo, hi - lo, off, name, NULL, 0);
	}
	fclose(f);
	return 0;
}

void process_exec(struct process_model *pm, struct process *proc)
{
	/* unshare(1) and container runtimes switch namespaces, then exec. */
	check_mount_ns(pm, proc);
	proc->nloads = 0;
	free(proc->jitdump);
	proc->jitdump = NULL;
	proc->code_gen++;
	proc->unmap_gen++;
}

void process_fork(struct process_model *pm, pid_t parent, pid_t child)
{
	struct process *pp = process_get(pm, parent, false);
	struct process *cp = process_get(pm, child, true);
	if (!pp || !cp || cp->nloads)
		return;
	if (!grow((void **)&cp->loads, &cp->loads_cap, pp->nloads, sizeof *cp->loads))
		return;
	memcpy(cp->loads, pp->loads, pp->nloads * sizeof *cp->loads);
	cp->nloads = pp->nloads;
}

void process_exit(struct process_model *pm, pid_t pid)
{
	struct process *p = process_get(pm, pid, false);
	if (p)
		p->exited = true;
}

/* ---- thread names: open addressing on tid (tids are unique system-wide) ---- */

static struct thread_name *thread_slot(const struct process_model *pm, uint32_t tid)
{
	size_t mask = pm->threads_cap - 1;
	for (size_t i = (tid * 2654435761u) & mask;; i = (i + 1) & mask)
		if (pm->threads[i].tid == tid || pm->threads[i].tid == 0)
			return &pm->threads[i];
}

static struct thread_name *thread_add(struct process_model *pm, uint32_t pid, uint32_t tid)
{
	if ((pm->nthreads + 1) * 2 > pm->threads_cap) {
		size_t ncap = pm->threads_cap ? pm->threads_cap * 2 : 64;
		struct thread_name *old = pm->threads, *nt = calloc(ncap, sizeof *nt);
		if (!nt)
			return NULL;
		size_t ocap = pm->threads_cap;
		pm->threads = nt;
		pm->threads_cap = ncap;
		for (size_t i = 0; i < ocap; i++)
			if (old[i].tid)
				*thread_slot(pm, old[i].tid) = old[i];
		free(old);
	}
	struct thread_name *t = thread_slot(pm, tid);
	if (!t->tid)
		pm->nthreads++;
	t->tid = tid;
	t->pid = pid;
	return t;
}

void thread_set_parent(struct process_model *pm, uint32_t pid, uint32_t tid, uint32_t parent_tid)
{
	struct thread_name *t = tid && tid != parent_tid ? thread_add(pm, pid, tid) : NULL;
	if (t && !t->comm[0])
		t->parent_tid = parent_tid;
}

void thread_set_name(struct process_model *pm, uint32_t pid, uint32_t tid, const char *comm, size_t len)
{
	struct thread_name *t = tid ? thread_add(pm, pid, tid) : NULL;
	if (!t)
		return;
	t->parent_tid = 0;
	if (len >= sizeof t->comm)
		len = sizeof t->comm - 1;
	memcpy(t->comm, comm, len);
	t->comm[len] = 0;
}

const char *thread_get_name(const struct process_model *pm, uint32_t pid, uint32_t tid)
{
	if (!pm->threads_cap)
		return "";
	/* Follow creators up to a bound (a cycle is impossible but cheap to stop). */
	for (int hops = 0; hops < 64 && tid; hops++) {
		const struct thread_name *t = thread_slot(pm, tid);
		if (!t->tid)
			break;
		if (t->comm[0])
			return t->comm;
		tid = t->parent_tid;
	}
	/* Never seen: a thread of pid starts out with the name of its process's
	 * thread that made it; the main thread's is the best guess left. */
	if (pid) {
		const struct thread_name *main = thread_slot(pm, pid);
		if (main->tid && main->comm[0])
			return main->comm;
	}
	return "";
}

void threads_load_proc(struct process_model *pm, pid_t pid)
{
	char path[96];
	snprintf(path, sizeof path, "/proc/%d/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name);
		if (tid <= 0)
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%d/comm", pid, tid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		char comm[32];
		ssize_t n = read(fd, comm, sizeof comm - 1);
		close(fd);
		if (n > 0 && comm[n - 1] == '\n')
			n--;
		if (n > 0)
			thread_set_name(pm, (uint32_t)pid, (uint32_t)tid, comm, (size_t)n);
	}
	closedir(d);
}
