/* Unit tests for sampler/: the ELF view of the test binary and load bias
 * against what the dynamic loader says; the process model (module builds,
 * JIT mappings, thread names) across forks and what ended tasks left
 * unsampled; the rings drained in time order across CPUs.  The unwinder's
 * tests are in test_unwind.c. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "arch_insn.h"
#include "check.h"
#include "perf_ring.h"
#include "proc.h"
#include "unwinder.h"

/* ---- ELF files (common/elf_view.h) as the unwinder reads them, and load bias ---- */

struct loaded { const char *name_part; uintptr_t bias; bool found; };

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct loaded *l = arg;
	const char *name = info->dlpi_name;
	bool is_exe = !name[0];
	if ((l->name_part == NULL && is_exe) || (l->name_part && strstr(name, l->name_part))) {
		l->bias = info->dlpi_addr;
		l->found = true;
		return 1;
	}
	return 0;
}

static void test_elf_view_self(void)
{
	struct ember_elf img;
	CHECK(ember_elf_open(&img, "/proc/self/exe") == 0);
	CHECK(img.nloads >= 2);
	CHECK(img.eh_frame_hdr != 0);
	CHECK(img.fde_count > 10);
	CHECK(img.build_id_len == 20);
	CHECK(img.exec_hi > img.exec_lo);
	/* The bytes of a function, read through the image, are the bytes the
	 * loader mapped. */
	struct loaded exe = { NULL, 0, false };
	dl_iterate_phdr(find_object, &exe);
	CHECK(exe.found);
	uint8_t from_file[32];
	uint64_t vaddr = (uintptr_t)test_elf_view_self - exe.bias;
	CHECK(ember_elf_read(&img, vaddr, from_file, sizeof from_file));
	CHECK(memcmp(from_file, (const void *)(uintptr_t)test_elf_view_self, sizeof from_file) == 0);
	CHECK(!ember_elf_read(&img, img.max_vaddr + 4096, from_file, 8));
	ember_elf_close(&img);
	CHECK(ember_elf_open(&img, "/proc/self/status") != 0);   /* not ELF */
	CHECK(ember_elf_open(&img, "/nonexistent/file") != 0);
}

static void test_bias_matches_loader(void)
{
	struct process_model pm;
	CHECK(process_model_init(&pm) == 0);
	struct process *self = process_get(&pm, getpid(), true);
	CHECK(self != NULL);
	CHECK(process_load_proc_maps(&pm, self, true) == 0);
	CHECK(self->nloads >= 3);   /* the test, libc, ld.so at least */

	const char *names[] = { NULL, "libc.so", "ld-linux" };
	/* gnu_get_libc_version: a libc function no sanitizer intercepts. */
	uintptr_t probes[] = { (uintptr_t)test_bias_matches_loader, (uintptr_t)gnu_get_libc_version, 0 };
	for (int i = 0; i < 2; i++) {
		struct loaded l = { names[i], 0, false };
		dl_iterate_phdr(find_object, &l);
		CHECK(l.found);
		const struct module_load *ml = process_find(self, probes[i]);
		CHECK(ml != NULL);
		if (ml)
			CHECK(ml->bias == l.bias);
		if (ml && ml->bias != l.bias)
			fprintf(stderr, "  %s: bias %#lx, loader says %#lx (%s)\n", names[i] ? names[i] : "exe",
				(unsigned long)ml->bias, (unsigned long)l.bias, ml->mod->path);
	}
	/* Sorted and non-overlapping. */
	for (size_t i = 1; i < self->nloads; i++)
		CHECK(self->loads[i - 1].hi <= self->loads[i].lo);
	CHECK(process_find(self, 0x10) == NULL);
	/* The vDSO is a module too, read from ember's own copy. */
	uintptr_t vdso = (uintptr_t)dlsym(RTLD_DEFAULT, "__vdso_clock_gettime");
	(void)vdso;
	process_model_free(&pm);
}

/* Executable memory without a file is JIT code: a module of its process
 * ("[jit]", or the name the process gave the mapping), one load per
 * mapping, addresses absolute; a jitdump file mapped is noted, not loaded. */
static void test_jit_mappings(void)
{
	struct process_model pm;
	process_model_init(&pm);
	struct process *a = process_get(&pm, 100, true), *b = process_get(&pm, 200, true);
	process_add_mapping(&pm, a, 0x7f0000000000, 0x2000, 0, "//anon", NULL, 0);
	process_add_mapping(&pm, a, 0x7f0000010000, 0x1000, 0, "", NULL, 0);
	process_add_mapping(&pm, a, 0x7f0000020000, 0x1000, 0, "[anon:my-jit]", NULL, 0);
	process_add_mapping(&pm, b, 0x7f0000000000, 0x2000, 0, "//anon", NULL, 0);
	process_add_mapping(&pm, a, 0x7f0000030000, 0x1000, 0, "/root/.debug/jit/java-1/jit-100.dump", NULL, 0);
	process_add_mapping(&pm, a, 0x7f0000040000, 0x1000, 0, "[vvar]", NULL, 0);
	CHECK(a->nloads == 3 && b->nloads == 1);
	const struct module_load *x = process_find(a, 0x7f0000001fff), *y = process_find(a, 0x7f0000010000),
				 *z = process_find(a, 0x7f0000020010), *w = process_find(b, 0x7f0000000010);
	CHECK(x && y && z && w);
	if (x && y && z && w) {
		CHECK_STR(x->mod->path, "[jit]");
		CHECK(x->mod == y->mod && x->mod->jit_pid == 100 && x->bias == 0);
		CHECK(x->hi == 0x7f0000002000 && y->lo == 0x7f0000010000);      /* not widened into one */
		CHECK_STR(z->mod->path, "[anon:my-jit]");
		CHECK(w->mod != x->mod && w->mod->jit_pid == 200);            /* each process its own */
	}
	CHECK(process_find(a, 0x7f0000008000) == NULL);
	CHECK(a->jitdump && !strcmp(a->jitdump, "/root/.debug/jit/java-1/jit-100.dump"));
	CHECK(a->has_jit && a->jit_changed && !b->jitdump);
	/* The same mapping again (an mprotect) changes nothing. */
	uint32_t gen = a->code_gen;
	process_add_mapping(&pm, a, 0x7f0000010000, 0x1000, 0, "//anon", NULL, 0);
	CHECK(a->code_gen == gen && a->nloads == 3);
	/* Code mapped over code is another load (a new serial, which the
	 * unwinder's cache of JIT code bytes checks); code of another module
	 * there, or an exec, makes what was read from the old code stale. */
	uint64_t serial = process_find(a, 0x7f0000000000)->serial;
	uint32_t unmapped = a->unmap_gen;
	process_add_mapping(&pm, a, 0x7f0000000000, 0x1000, 0, "//anon", NULL, 0);
	CHECK(process_find(a, 0x7f0000000000)->serial != serial && a->unmap_gen == unmapped);
	process_add_mapping(&pm, a, 0x7f0000000000, 0x1000, 0, "[anon:other-jit]", NULL, 0);
	CHECK(a->unmap_gen == unmapped + 1);
	process_exec(&pm, a);
	CHECK(a->nloads == 0 && a->unmap_gen == unmapped + 2 && a->code_gen > gen);
	process_model_free(&pm);
}

/* A child starts with its parent's loads; a parent whose loads are not
 * known (yet) gives it none, and the child then reads its own maps. */
static void test_fork(void)
{
	struct process_model pm;
	process_model_init(&pm);
	struct process *parent = process_get(&pm, 400, true);
	process_add_mapping(&pm, parent, 0x7f0000000000, 0x2000, 0, "//anon", NULL, 0);
	process_fork(&pm, 400, 401);
	struct process *child = process_get(&pm, 401, false);
	CHECK(child && child->nloads == 1 && process_find(child, 0x7f0000001000));
	/* A process known by its pid alone (its mappings' records not read
	 * yet, or never made: forked before its own parent was known). */
	struct process *empty = process_get(&pm, 500, true);
	process_fork(&pm, 500, 501);
	struct process *grandchild = process_get(&pm, 501, false);
	CHECK(empty->nloads == 0 && grandchild && grandchild->nloads == 0 && !grandchild->loads);
	/* An unknown parent: the child exists, empty. */
	process_fork(&pm, 600, 601);
	CHECK(process_get(&pm, 601, false) && process_get(&pm, 601, false)->nloads == 0);
	process_model_free(&pm);
}

/* What tasks that ended left unsampled: their CPU time (over every CPU's
 * event) beyond one period per sample; never less than nothing. */
static void test_unsampled(void)
{
	struct process_model pm;
	process_model_init(&pm);
	const uint64_t period = 10000000;   /* 100 Hz */
	thread_ended_time(&pm, 10, 10, 9000000);               /* shorter than a period: no sample */
	thread_sampled(&pm, 11, 11);                            /* 2.5 periods over two CPUs, 2 samples */
	thread_sampled(&pm, 11, 11);
	thread_ended_time(&pm, 11, 11, 15000000);
	thread_ended_time(&pm, 11, 11, 10000000);
	thread_sampled(&pm, 12, 12);                            /* its clock ran a little fast */
	thread_ended_time(&pm, 12, 12, 9990000);
	thread_sampled(&pm, 13, 13);                            /* still running: not counted */
	uint64_t tasks, ns;
	thread_unsampled(&pm, period, &tasks, &ns);
	CHECK(tasks == 3);
	CHECK(ns == 9000000 + 5000000);
	/* A tid reused by another process starts afresh. */
	thread_set_parent(&pm, 20, 10, 20);
	thread_unsampled(&pm, period, &tasks, &ns);
	CHECK(tasks == 2 && ns == 5000000);
	process_model_free(&pm);
}

/* ---- the rings, drained in time order across CPUs ---- */

#define RING_DATA 4096

/* A ring in plain memory as the kernel lays it out: the control page, then
 * the data. */
struct fake_ring {
	struct perf_event_mmap_page pg;
	uint8_t pad[4096 - sizeof(struct perf_event_mmap_page)];
	uint8_t data[RING_DATA];
};

/* Append a record of type and size with time t where ember's layout has
 * it (a sample: after ip and pid/tid; else the sample_id trailer's time,
 * 16 bytes before the end), pid in its first 4 bytes after the header for
 * the other records.  Written byte by byte: it may wrap. */
static void put_record(struct fake_ring *f, uint16_t type, uint16_t size, uint64_t t, uint32_t tag)
{
	uint8_t rec[256] = { 0 };
	struct perf_event_header h = { .type = type, .size = size };
	memcpy(rec, &h, sizeof h);
	memcpy(rec + (type == PERF_RECORD_SAMPLE ? 24 : size - 16), &t, 8);
	memcpy(rec + (type == PERF_RECORD_SAMPLE ? 16 : 8), &tag, 4);
	for (uint16_t i = 0; i < size; i++)
		f->data[(f->pg.data_head + i) % RING_DATA] = rec[i];
	f->pg.data_head += size;
}

struct seen {
	uint32_t tags[16];
	int n;
};

static void collect(void *arg, const struct perf_event_header *h)
{
	struct seen *s = arg;
	uint32_t tag;
	memcpy(&tag, (const uint8_t *)(h + 1) + (h->type == PERF_RECORD_SAMPLE ? 8 : 0), 4);
	if (s->n < 16)
		s->tags[s->n++] = tag;
}

static void test_rings_in_time_order(void)
{
	static struct fake_ring f[3];
	static uint8_t scratch[PERF_RECORD_MAX];
	memset(f, 0, sizeof f);
	struct perf_ring rings[3];
	for (int i = 0; i < 3; i++)
		rings[i] = (struct perf_ring){ .base = (uint8_t *)&f[i], .data = f[i].data, .data_size = RING_DATA };
	rings[2].base = NULL;   /* a CPU whose ring is not mapped */
	/* CPU 0 saw a process fork and its child run; CPU 1 saw that process
	 * exec and map its code first.  Its mapping record wraps around the end. */
	put_record(&f[0], PERF_RECORD_FORK, 48, 300, 3);
	put_record(&f[0], PERF_RECORD_SAMPLE, 64, 400, 4);
	put_record(&f[0], PERF_RECORD_SAMPLE, 64, 700, 7);
	f[1].pg.data_head = f[1].pg.data_tail = RING_DATA - 80;
	put_record(&f[1], PERF_RECORD_COMM, 48, 100, 1);
	put_record(&f[1], PERF_RECORD_MMAP2, 48, 200, 2);
	put_record(&f[1], PERF_RECORD_SAMPLE, 64, 500, 5);
	put_record(&f[1], PERF_RECORD_EXIT, 48, 600, 6);
	int active[3];
	struct seen s = { .n = 0 };
	size_t n = perf_rings_drain(rings, 3, active, scratch, collect, &s);
	CHECK(n == 7 && s.n == 7);
	for (int i = 0; i < s.n; i++)
		CHECK(s.tags[i] == (uint32_t)i + 1);
	CHECK(f[0].pg.data_tail == f[0].pg.data_head && f[1].pg.data_tail == f[1].pg.data_head);
	/* Nothing new: nothing drained. */
	s.n = 0;
	CHECK(perf_rings_drain(rings, 3, active, scratch, collect, &s) == 0 && s.n == 0);
}

/* One module per path and namespace, unless the build-ids in the mappings
 * say the file was replaced: then one per build, found by its build-id. */
static void test_module_builds(void)
{
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	struct ember_elf e;
	CHECK(len > 0 && ember_elf_open(&e, "/proc/self/exe") == 0 && e.build_id_len == 20);
	if (len <= 0 || e.build_id_len != 20)
		return;
	exe[len] = 0;
	uint8_t mine[20], other[20];
	memcpy(mine, e.build_id, 20);
	memset(other, 0xab, sizeof other);
	ember_elf_close(&e);
	struct process_model pm;
	process_model_init(&pm);
	struct process *p = process_get(&pm, 300, true), *q = process_get(&pm, 301, true);
	process_add_mapping(&pm, p, 0x10000000, 0x1000, 0, exe, mine, 20);
	process_add_mapping(&pm, q, 0x10000000, 0x1000, 0, exe, other, 20);
	process_add_mapping(&pm, q, 0x20000000, 0x1000, 0, exe, NULL, 0);
	const struct module_load *a = process_find(p, 0x10000000), *b = process_find(q, 0x10000000),
				 *c = process_find(q, 0x20000000);
	CHECK(a && b && c && pm.nmods == 2);
	if (a && b && c) {
		CHECK(a->mod != b->mod && a->mod->elf_ok && !b->mod->elf_ok);   /* the other build: no file */
		CHECK(c->mod == a->mod);                                        /* no build-id: the first */
	}
	process_add_mapping(&pm, p, 0x30000000, 0x1000, 0, exe, other, 20);
	CHECK(process_find(p, 0x30000000) && b && process_find(p, 0x30000000)->mod == b->mod && pm.nmods == 2);
	process_model_free(&pm);

	/* The first build seen at a path did not open (the file there is
	 * another build: a process that chroots maps its new root's libc under
	 * the path of the old root's); the file's own build, mapped next, is a
	 * module of its own, with its CFI. */
	process_model_init(&pm);
	struct process *r = process_get(&pm, 302, true);
	process_add_mapping(&pm, r, 0x10000000, 0x1000, 0, exe, other, 20);
	process_add_mapping(&pm, r, 0x20000000, 0x1000, 0, exe, mine, 20);
	const struct module_load *d = process_find(r, 0x10000000), *f = process_find(r, 0x20000000);
	CHECK(d && f && d->mod != f->mod && !d->mod->elf_ok && f->mod->elf_ok && pm.nmods == 2);
	process_model_free(&pm);

	/* The same, with the file's own build mapped next as /proc/PID/maps
	 * gives it (no build-id): a module whose file opens, not the failed
	 * one; a second time, that same module. */
	process_model_init(&pm);
	r = process_get(&pm, 303, true);
	process_add_mapping(&pm, r, 0x10000000, 0x1000, 0, exe, other, 20);
	process_add_mapping(&pm, r, 0x20000000, 0x1000, 0, exe, NULL, 0);
	process_add_mapping(&pm, r, 0x30000000, 0x1000, 0, exe, NULL, 0);
	d = process_find(r, 0x10000000), f = process_find(r, 0x20000000);
	const struct module_load *g = process_find(r, 0x30000000);
	CHECK(d && f && g && d->mod != f->mod && !d->mod->elf_ok && f->mod->elf_ok && g->mod == f->mod &&
	      pm.nmods == 2);
	process_model_free(&pm);
}

/* The executable mapping of the test binary in /proc/self/maps. */
struct exe_range { char path[4096]; uint64_t lo, hi, off; };

static bool find_exe_text(void *arg, const struct ember_proc_map *m)
{
	struct exe_range *r = arg;
	if (m->perms[2] == 'x' && strcmp(m->path, r->path) == 0) {
		r->lo = m->lo;
		r->hi = m->hi;
		r->off = m->offset;
		return false;
	}
	return true;
}

/* A file that maps a page of its own code again, right after another
 * library (libffi's trampolines): that page's load, widened to its file's
 * other segments, must not take the neighbour's addresses -- the neighbour
 * then lost its load at every rereading of the maps, and its samples their
 * module.  Here the test binary is both, under two paths. */
static void test_widening_kept_off_neighbours(void)
{
	struct exe_range r = { .lo = 0 };
	ssize_t len = readlink("/proc/self/exe", r.path, sizeof r.path - 1);
	CHECK(len > 0);
	if (len <= 0)
		return;
	r.path[len] = 0;
	CHECK(ember_proc_maps(getpid(), find_exe_text, &r) == 0 && r.hi > r.lo);
	struct process_model pm;
	process_model_init(&pm);
	struct process *p = process_get(&pm, 401, true);
	process_add_mapping(&pm, p, r.lo, r.hi - r.lo, r.off, r.path, NULL, 0);
	const struct module_load *l = process_find(p, r.lo);
	CHECK(l && l->mod->elf_ok && l->hi > r.hi);       /* widened past the text */
	if (!l || !l->mod->elf_ok) {
		process_model_free(&pm);
		return;
	}
	struct module *lib = l->mod;
	uint64_t span_lo = l->lo, span_hi = l->hi, page = (span_hi + 0xfff) & ~0xfffull;
	for (int pass = 0; pass < 2; pass++) {   /* the second: the maps read again */
		process_add_mapping(&pm, p, r.lo, r.hi - r.lo, r.off, r.path, NULL, 0);
		process_add_mapping(&pm, p, page, 0x1000, r.off, "/proc/self/exe", NULL, 0);
		l = process_find(p, r.lo);
		CHECK(l && l->mod == lib && l->lo == span_lo && l->hi == span_hi);
		l = process_find(p, span_hi - 1);
		CHECK(l && l->mod == lib);
		l = process_find(p, page);
		CHECK(l && l->mod != lib && l->mod->elf_ok && l->lo >= span_hi);
		CHECK(p->nloads == 2);
	}
	process_model_free(&pm);
}

static void test_thread_names(void)
{
	struct process_model pm;
	process_model_init(&pm);
	thread_set_name(&pm, 100, 100, "main", 4);
	thread_set_parent(&pm, 100, 101, 100);        /* created by main */
	thread_set_parent(&pm, 100, 102, 101);        /* created by 101 */
	CHECK_STR(thread_get_name(&pm, 100, 102), "main");
	thread_set_name(&pm, 100, 101, "worker-a", 8);
	CHECK_STR(thread_get_name(&pm, 100, 102), "worker-a");
	CHECK_STR(thread_get_name(&pm, 100, 999), "main");  /* unknown thread of pid 100 */
	CHECK_STR(thread_get_name(&pm, 7, 7), "");
	thread_set_name(&pm, 100, 103, "a-name-longer-than-15", 21);
	CHECK(strlen(thread_get_name(&pm, 100, 103)) == 15);
	for (uint32_t t = 1000; t < 3000; t++)       /* growth keeps entries */
		thread_set_name(&pm, 100, t, "x", 1);
	CHECK_STR(thread_get_name(&pm, 100, 101), "worker-a");
	process_model_free(&pm);
}

int main(void)
{
	test_elf_view_self();
	test_bias_matches_loader();
	test_thread_names();
	test_module_builds();
	test_widening_kept_off_neighbours();
	test_jit_mappings();
	test_fork();
	test_unsampled();
	test_rings_in_time_order();
	return check_report();
}
