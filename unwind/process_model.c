/* What the sampler knows about its targets (process_model.h): for each
 * process, which ELF modules are loaded where (fed by MMAP2 records and
 * /proc/PID/maps).  Modules are shared between processes.  Thread names are
 * thread_names.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "grow.h"
#include "hash.h"
#include "proc.h"
#include "process_model.h"

/* /proc/PID/maps is reread at most this often per process, unless forced. */
#define MAPS_RELOAD_NS (50 * 1000000ull)
/* The loader maps segments at page granularity. */
#define LOAD_PAGE 0x1000ULL
/* A mapped file's path (PATH_MAX) under a /proc/PID/root or map_files prefix. */
#define MODULE_PATH_LEN 4200

/* ---- the model ---- */

struct vdso_find {
	uint64_t base, size;
};

static bool find_vdso(void *arg, const struct ember_proc_map *m)
{
	struct vdso_find *v = arg;
	if (strcmp(m->path, "[vdso]") == 0 && m->lo == v->base)
		v->size = m->hi - m->lo;
	return true;
}

/* The vDSO has no file.  Every process on this kernel maps the same image, so
 * ember's own copy stands in for the target's: put it in a memfd so that both
 * the unwinder and the symbolizer can open it by path. */
static void dump_vdso(struct process_model *pm)
{
	struct vdso_find v = { .base = getauxval(AT_SYSINFO_EHDR) };
	if (!v.base || ember_proc_maps(0, find_vdso, &v) != 0)
		return;
	int fd = v.size ? memfd_create("ember-vdso", MFD_CLOEXEC) : -1;
	if (fd < 0)
		return;
	if (write(fd, (const void *)(uintptr_t)v.base, v.size) != (ssize_t)v.size) {
		close(fd);
		return;
	}
	snprintf(pm->vdso_path, sizeof pm->vdso_path, "/proc/self/fd/%d", fd);
	/* fd stays open for the sampler's life; closed in process_model_free. */
}

static void module_free(struct module *m)
{
	if (m->elf_ok)
		ember_elf_close(&m->elf);
	free(m->path);
	free(m->open_path);
	free(m->root);
	free(m);
}

int process_model_init(struct process_model *pm)
{
	memset(pm, 0, sizeof *pm);
	if (ember_idtab_init(&pm->proc_index) != 0 || ember_idtab_init(&pm->mod_index) != 0 ||
	    ember_idtab_init(&pm->thread_index) != 0) {
		process_model_free(pm);
		return -1;
	}
	ember_proc_link(0, "ns/mnt", pm->self_mnt_ns, sizeof pm->self_mnt_ns);
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
	for (size_t i = 0; i < pm->nroots; i++)
		close(pm->roots[i].fd);
	free(pm->roots);
	for (size_t i = 0; i < pm->nmods; i++)
		module_free(pm->mods[i]);
	free(pm->mods);
	free(pm->threads);
	ember_idtab_free(&pm->proc_index);
	ember_idtab_free(&pm->mod_index);
	ember_idtab_free(&pm->thread_index);
	int fd;
	if (pm->vdso_path[0] && sscanf(pm->vdso_path, "/proc/self/fd/%d", &fd) == 1)
		close(fd);
	memset(pm, 0, sizeof *pm);
}

/* ---- processes ---- */

/* The held descriptor of the root directory at path (/proc/PID/root), or
 * -1 (gone, no permission, out of memory: files are then reached through
 * the mapped file's own descriptor only). */
static int root_dir_fd(struct process_model *pm, const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return -1;
	for (size_t i = 0; i < pm->nroots; i++)
		if (pm->roots[i].dev == st.st_dev && pm->roots[i].ino == st.st_ino)
			return pm->roots[i].fd;
	if (EMBER_GROW(pm->roots, pm->roots_cap, pm->nroots + 1) != 0)
		return -1;
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		pm->roots[pm->nroots++] = (struct root_dir){ .dev = st.st_dev, .ino = st.st_ino, .fd = fd };
	return fd;
}

/* Paths in the maps of a process in another mount namespace (a container,
 * `unshare -m`) or under another root directory (chroot) mean nothing
 * here: those files are opened under /proc/PID/root. */
static void check_root(struct process_model *pm, struct process *p)
{
	char path[64], ns[64], root[8];
	ssize_t n = ember_proc_link(p->pid, "ns/mnt", ns, sizeof ns);
	ssize_t r = ember_proc_link(p->pid, "root", root, sizeof root);
	/* Unknown (no permission, already gone): assume ours, the common case. */
	p->same_root = (n <= 0 || strcmp(ns, pm->self_mnt_ns) == 0) && (r <= 0 || strcmp(root, "/") == 0);
	snprintf(path, sizeof path, "/proc/%d/root", p->pid);
	p->root_fd = p->same_root ? -1 : root_dir_fd(pm, path);
}

static bool proc_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct process_model *pm = ctx;
	return pm->procs[id]->pid == *(const pid_t *)key;
}

struct process *process_get(struct process_model *pm, pid_t pid, bool create)
{
	uint64_t h = ember_hash_mix((uint64_t)(uint32_t)pid);
	uint32_t id = ember_idtab_find(&pm->proc_index, h, proc_eq, pm, &pid);
	if (id != UINT32_MAX)
		return pm->procs[id];
	if (!create || EMBER_GROW(pm->procs, pm->procs_cap, pm->nprocs + 1) != 0)
		return NULL;
	struct process *p = calloc(1, sizeof *p);
	if (!p || ember_idtab_insert(&pm->proc_index, h, (uint32_t)pm->nprocs) != 0) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->index = (uint32_t)pm->nprocs;
	check_root(pm, p);
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

/* ---- modules ---- */

/* What names a module: its path, and the namespace it was read in (file
 * code) or its process (JIT code). */
struct module_key {
	const char *path;
	pid_t ns_pid, jit_pid;
};

static uint64_t module_hash(const struct module_key *k)
{
	return ember_hash_bytes(k->path, strlen(k->path),
				ember_hash_pair((uint64_t)(uint32_t)k->ns_pid, (uint64_t)(uint32_t)k->jit_pid));
}

static bool module_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct module *m = ((const struct process_model *)ctx)->mods[id];
	const struct module_key *k = key;
	return m->ns_pid == k->ns_pid && m->jit_pid == k->jit_pid && strcmp(m->path, k->path) == 0;
}

/* The first module (by id) named k, or NULL; the others follow it through
 * next_same_key. */
static struct module *module_lookup(const struct process_model *pm, const struct module_key *k)
{
	uint32_t id = ember_idtab_find(&pm->mod_index, module_hash(k), module_eq, pm, k);
	return id == UINT32_MAX ? NULL : pm->mods[id];
}

/* Give m (path, ns_pid and jit_pid set) the next id.  0, or -1 on OOM. */
static int module_add(struct process_model *pm, struct module *m)
{
	struct module_key k = { m->path, m->ns_pid, m->jit_pid };
	struct module *first = module_lookup(pm, &k);
	if (EMBER_GROW(pm->mods, pm->mods_cap, pm->nmods + 1) != 0 ||
	    (!first && ember_idtab_insert(&pm->mod_index, module_hash(&k), (uint32_t)pm->nmods) != 0))
		return -1;
	while (first && first->next_same_key)
		first = first->next_same_key;
	if (first)
		first->next_same_key = m;
	m->id = (uint32_t)pm->nmods;
	pm->mods[pm->nmods++] = m;
	return 0;
}

/* Open m's file from open_path, unless its build-id says it is not the
 * file mapped; then name how the symbolizer reaches it (m->open_path). */
static int module_open(const struct process_model *pm, struct module *m, const char *open_path,
		       const char *path, int root_fd, const uint8_t *build_id, size_t build_id_len)
{
	char buf[MODULE_PATH_LEN];
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
	/* Its debug files are under its own root: reachable through the
	 * descriptor held of that root (while its mounts last). */
	char root[32];
	snprintf(root, sizeof root, "/proc/self/fd/%d", root_fd);
	if (root_fd >= 0 && !(m->root = strdup(root)))
		return -1;
	return m->open_path ? 0 : -1;
}

/* The module of the file mapped at [start, end) in proc under path: one
 * known by that path in proc's mount namespace whose build-id does not
 * contradict the mapping's, else a new one.  NULL on OOM. */
static struct module *module_get(struct process_model *pm, struct process *proc, const char *path,
				 uint64_t start, uint64_t end, const uint8_t *build_id, size_t build_id_len)
{
	static const char deleted[] = " (deleted)";
	size_t plen = strlen(path);
	bool is_deleted = plen > sizeof deleted - 1 && strcmp(path + plen - (sizeof deleted - 1), deleted) == 0;

	/* The same path in another mount namespace may be another file. */
	struct module_key k = { .path = path, .ns_pid = proc->same_root ? 0 : proc->pid };
	/* A module made for another build-id at this path is not this one,
	 * also when its file did not open: a process that chroots (or enters a
	 * container) maps its new root's libc under the path of the old one's. */
	/* A mapping without a build-id (read from /proc/PID/maps) takes a
	 * module whose file opened; one whose file did not is taken only if
	 * the file at the path still does not open (it may be that other
	 * build's: the root's libc after a chroot). */
	struct module *failed = NULL;
	for (struct module *m = module_lookup(pm, &k); m; m = m->next_same_key) {
		if (build_id_len && m->map_build_id_len) {
			if (m->map_build_id_len == build_id_len && memcmp(m->map_build_id, build_id, build_id_len) == 0)
				return m;
			continue;
		}
		if (!build_id_len && !m->elf_ok) {
			failed = failed ? failed : m;
			continue;
		}
		if (!build_id_len || !m->elf_ok || !m->elf.build_id_len ||
		    (m->elf.build_id_len == build_id_len && memcmp(m->elf.build_id, build_id, build_id_len) == 0))
			return m;
	}
	struct module *m = calloc(1, sizeof *m);
	if (!m || !(m->path = strdup(path))) {
		free(m);
		return NULL;
	}
	m->ns_pid = k.ns_pid;
	if (build_id_len && build_id_len <= sizeof m->map_build_id) {
		memcpy(m->map_build_id, build_id, build_id_len);
		m->map_build_id_len = (uint8_t)build_id_len;
	}
	char buf[MODULE_PATH_LEN];
	const char *open_path = path;
	if (strcmp(path, "[vdso]") == 0) {
		open_path = pm->vdso_path;
	} else if (is_deleted) {
		/* The file on disk is gone or replaced; the mapping itself is still
		 * reachable (needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE). */
		snprintf(buf, sizeof buf, "/proc/%d/map_files/%lx-%lx", proc->pid,
			 (unsigned long)start, (unsigned long)end);
		open_path = buf;
	} else if (!proc->same_root) {
		snprintf(buf, sizeof buf, "/proc/%d/root%s", proc->pid, path);
		open_path = buf;
	}
	int rc = module_open(pm, m, open_path, path, proc->root_fd, build_id, build_id_len);
	if (rc == 0 && failed && !m->elf_ok) {
		module_free(m);   /* (the file still does not open: the module made before stands) */
		return failed;
	}
	if (rc != 0 || module_add(pm, m) != 0) {
		module_free(m);
		return NULL;
	}
	return m;
}

/* The JIT module of proc named name ("[jit]", "[anon:NAME]"), made on first use. */
static struct module *jit_module_get(struct process_model *pm, const struct process *proc, const char *name)
{
	struct module_key k = { .path = name, .jit_pid = proc->pid };
	struct module *m = module_lookup(pm, &k);
	if (m)
		return m;
	m = calloc(1, sizeof *m);
	if (!m || !(m->path = strdup(name)) || !(m->open_path = strdup(""))) {
		if (m)
			free(m->path);
		free(m);
		return NULL;
	}
	m->jit_pid = proc->pid;
	if (module_add(pm, m) != 0) {
		module_free(m);
		return NULL;
	}
	return m;
}

/* ---- loads ---- */

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
				proc->unmap_gen++;   /* other code at its addresses */
			continue;
		}
		proc->loads[w++] = *l;
	}
	proc->nloads = w;
	if (EMBER_GROW(proc->loads, proc->loads_cap, proc->nloads + 1) != 0)
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

/* Keep the part of ml beyond the mapping reported ([start, end): the other
 * segments of its file, which ml is widened to) off the loads of other
 * code: a file may map a page of itself again apart from its library
 * (libffi's trampolines, placed right after whatever library was mapped
 * last), and that page's load would then span the neighbour's segments.
 * Code at the mapping's own addresses still replaces what was there. */
static void clip_widening(const struct process *proc, struct module_load *ml, uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < proc->nloads; i++) {
		const struct module_load *l = &proc->loads[i];
		if ((l->mod == ml->mod && l->bias == ml->bias) || l->hi <= ml->lo || l->lo >= ml->hi)
			continue;
		if (l->lo >= end)
			ml->hi = l->lo < ml->hi ? l->lo : ml->hi;
		else if (l->hi <= start)
			ml->lo = l->hi > ml->lo ? l->hi : ml->lo;
	}
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
		ml.lo = ml.bias + (mod->elf.min_vaddr & ~(LOAD_PAGE - 1));
		ml.hi = ml.bias + mod->elf.max_vaddr;
		if (start < ml.lo)
			ml.lo = start;
		if (start + len > ml.hi)
			ml.hi = start + len;
		clip_widening(proc, &ml, start, start + len);
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
	/* A search of ranges that stops at the load holding addr, not
	 * common/sorted.h's upper bound: this runs for every frame of every
	 * sample, and the bound's every step to the end cost the unwinder 19%
	 * more instructions here (callgrind). */
	size_t lo = 0, hi = proc->nloads;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
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

static bool add_proc_map(void *arg, const struct ember_proc_map *m)
{
	struct process_model *pm = ((void **)arg)[0];
	struct process *proc = ((void **)arg)[1];
	if (m->perms[2] == 'x')
		process_add_mapping(pm, proc, m->lo, m->hi - m->lo, m->offset, m->path, NULL, 0);
	return true;
}

int process_load_proc_maps(struct process_model *pm, struct process *proc, bool force)
{
	uint64_t now = ember_now_ns();
	if (!force && now - proc->last_maps_reload_ns < MAPS_RELOAD_NS)
		return 0;
	proc->last_maps_reload_ns = now;
	void *arg[2] = { pm, proc };
	return ember_proc_maps(proc->pid, add_proc_map, arg) == 0 ? 0 : -1;
}

void process_exec(struct process_model *pm, struct process *proc)
{
	/* unshare(1), chroot(1) and container runtimes switch namespaces or
	 * the root, then exec. */
	check_root(pm, proc);
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
	/* Nothing to copy from a parent whose mappings are not known (yet):
	 * the child's first sample reads its own /proc/PID/maps. */
	if (!pp || !cp || cp->nloads || !pp->nloads)
		return;
	if (EMBER_GROW(cp->loads, cp->loads_cap, pp->nloads) != 0)
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
