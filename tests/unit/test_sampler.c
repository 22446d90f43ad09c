/* Unit tests for sampler/: ELF image parsing and load bias against what the
 * dynamic loader says, and a full unwind of a stack copy taken in process
 * through a known call chain. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sampler_internal.h"

/* ---- ELF image and bias ---- */

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

static void test_elf_image_self(void)
{
	struct elf_image img;
	CHECK(elf_image_open(&img, "/proc/self/exe") == 0);
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
	uint64_t vaddr = (uintptr_t)test_elf_image_self - exe.bias;
	CHECK(elf_image_read(&img, vaddr, from_file, sizeof from_file));
	CHECK(memcmp(from_file, (const void *)(uintptr_t)test_elf_image_self, sizeof from_file) == 0);
	CHECK(!elf_image_read(&img, img.max_vaddr + 4096, from_file, 8));
	elf_image_close(&img);
	CHECK(elf_image_open(&img, "/proc/self/status") != 0);   /* not ELF */
	CHECK(elf_image_open(&img, "/nonexistent/file") != 0);
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

/* ---- unwinding a stack copied in process ---- */

struct snapshot {
	uint64_t regs[PERF_REGS_COUNT];
	uint8_t stack[16384];
	uint64_t len;
};

/* Copying other frames' stack bytes is what a sampler does; ASan would see
 * it as an out-of-bounds read of those frames' locals. */
__attribute__((no_sanitize_address, noinline)) static void copy_stack(uint8_t *dst, uint64_t sp, uint64_t len)
{
	const volatile uint8_t *src = (const volatile uint8_t *)(uintptr_t)sp;
	for (uint64_t i = 0; i < len; i++)
		dst[i] = src[i];
}

/* Take the registers libunwind needs, and a copy of the stack above SP, as
 * the kernel would at a sample landing in this function. */
__attribute__((noinline)) static void leaf_snapshot(struct snapshot *s)
{
	uint64_t ip, sp, bp, bx, r12, r13, r14, r15;
	__asm__ volatile("lea 0(%%rip), %0\n\t"
			 "mov %%rsp, %1\n\t"
			 "mov %%rbp, %2\n\t"
			 "mov %%rbx, %3\n\t"
			 "mov %%r12, %4\n\t"
			 "mov %%r13, %5\n\t"
			 "mov %%r14, %6\n\t"
			 "mov %%r15, %7\n\t"
			 : "=r"(ip), "=r"(sp), "=r"(bp), "=r"(bx), "=r"(r12), "=r"(r13), "=r"(r14), "=r"(r15));
	memset(s->regs, 0, sizeof s->regs);
	s->regs[PERF_REG_IP] = ip;
	s->regs[PERF_REG_SP] = sp;
	s->regs[PERF_REG_BP] = bp;
	s->regs[1] = bx;
	s->regs[16] = r12, s->regs[17] = r13, s->regs[18] = r14, s->regs[19] = r15;
	/* Like the kernel, copy no further than the end of the stack mapping. */
	s->len = sizeof s->stack;
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned long lo, hi;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && sp >= lo && sp < hi && hi - sp < s->len)
			s->len = hi - sp;
	if (f)
		fclose(f);
	copy_stack(s->stack, sp, s->len);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void chain_c(struct snapshot *s) { leaf_snapshot(s); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void chain_b(struct snapshot *s) { chain_c(s); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void chain_a(struct snapshot *s) { chain_b(s); __asm__ volatile("" ::: "memory"); }

static const char *name_of(const struct process *proc, const struct ember_frame_addr *f)
{
	if (f->module == EMBER_NO_MODULE)
		return "?";
	for (size_t i = 0; i < proc->nloads; i++)
		if (proc->loads[i].mod->id == f->module) {
			Dl_info di;
			if (dladdr((void *)(uintptr_t)(f->addr + proc->loads[i].bias), &di) && di.dli_sname)
				return di.dli_sname;
		}
	return "?";
}

/* A process model of this process, its mappings loaded. */
static struct process *self_model(struct process_model *pm)
{
	process_model_init(pm);
	struct process *self = process_get(pm, getpid(), true);
	process_load_proc_maps(pm, self, true);
	return self;
}

/* The snapshot as the sampler would hand it to the unwinder (copy not full). */
static struct unwind_input input_of(const struct snapshot *s)
{
	return (struct unwind_input){ .regs = s->regs, .stack = s->stack, .stack_len = s->len,
				      .stack_reserved = s->len + 8 };
}

void test_unwind_in_process(void);
void test_unwind_in_process(void)
{
	static struct snapshot snap;
	chain_a(&snap);

	struct process_model pm;
	struct process *self = self_model(&pm);
	struct unwind_input in = input_of(&snap);
	struct ember_frame_addr frames[64];
	uint32_t flags = 0;
	uint32_t n = unwind_sample(&pm, self, &in, frames, 64, &flags, NULL);
	CHECK(n >= 5);
	const char *want[] = { "?", "chain_c", "chain_b", "chain_a", "test_unwind_in_process" };
	for (int i = 1; i < 5 && i < (int)n; i++)
		CHECK_STR(name_of(self, &frames[i]), want[i]);
	bool saw_main = false;
	for (uint32_t i = 0; i < n; i++)
		saw_main |= strcmp(name_of(self, &frames[i]), "main") == 0;
	CHECK(saw_main);
	CHECK(!(flags & EMBER_SAMPLE_TRUNCATED));

	/* The same stack cut to 64 bytes, with the copy "full": the walk must
	 * end early and say the stack was truncated, never look complete. */
	in.stack_len = 64;
	in.stack_reserved = 64;
	flags = 0;
	uint32_t m = unwind_sample(&pm, self, &in, frames, 64, &flags, NULL);
	CHECK(m < n);
	CHECK(flags & EMBER_SAMPLE_TRUNCATED);

	/* The frame limit also marks truncation. */
	in.stack_len = snap.len;
	in.stack_reserved = snap.len + 8;
	flags = 0;
	CHECK(unwind_sample(&pm, self, &in, frames, 3, &flags, NULL) == 3);
	CHECK(flags & EMBER_SAMPLE_TRUNCATED);
	process_model_free(&pm);
}

/* ---- frame probes: what a frame held at the sample ---- */

#define HELD_IN_REG 0x5eed0000cafe0001ull
#define HELD_ON_STACK 0x5eed0000cafe0002ull

/* Keeps one value in callee-saved r15 across the call and one in its own
 * stack frame, as an interpreter keeps its instruction pointer. */
__attribute__((noinline)) void probe_holder(struct snapshot *s)
{
	volatile uint64_t on_stack = HELD_ON_STACK;
	register uint64_t held __asm__("r15") = HELD_IN_REG;
	__asm__ volatile("" : "+r"(held));
	chain_c(s);
	__asm__ volatile("" ::"r"(held));
	(void)on_stack;
}

struct probe_pick {
	uint64_t lo, hi;
	unsigned asked;
};

static bool pick_holder(void *arg, uint32_t pid, uint64_t pc)
{
	struct probe_pick *p = arg;
	(void)pid;
	p->asked++;
	return pc >= p->lo && pc < p->hi;
}

void test_frame_probes(void);
void test_frame_probes(void)
{
	static struct snapshot snap;
	probe_holder(&snap);

	struct process_model pm;
	struct process *self = self_model(&pm);
	struct unwind_input in = input_of(&snap);
	/* probe_holder's extent: from its symbol, generously (it is small) */
	Dl_info di;
	CHECK(dladdr((void *)(uintptr_t)probe_holder, &di) && di.dli_saddr);
	struct probe_pick pick = { (uint64_t)(uintptr_t)di.dli_saddr, (uint64_t)(uintptr_t)di.dli_saddr + 256, 0 };
	static struct ember_frame_probe out[EMBER_MAX_PROBES];
	struct unwind_probes pr = { .fn = pick_holder, .arg = &pick, .out = out };
	struct ember_frame_addr frames[64];
	uint32_t flags = 0;
	uint32_t n = unwind_sample(&pm, self, &in, frames, 64, &flags, &pr);
	CHECK(n >= 4);
	CHECK(pick.asked >= n - 1);          /* asked for every frame */
	CHECK(pr.n == 1);
	if (pr.n == 1) {
		CHECK(!out[0].leaf);
		CHECK_STR(name_of(self, &frames[out[0].frame]), "probe_holder");
		CHECK(out[0].cand[14] == HELD_IN_REG);       /* r15, as the unwinder restored it */
		CHECK(out[0].cand[0] == 0);                  /* rax: not callee-saved, unknown */
		bool found = false;
		for (uint32_t k = EMBER_PROBE_REGS; k < out[0].ncand; k++)
			found |= out[0].cand[k] == HELD_ON_STACK;
		CHECK(out[0].ncand > EMBER_PROBE_REGS && found);
	}
	process_model_free(&pm);
}

int main(void)
{
	test_frame_probes();
	test_elf_image_self();
	test_bias_matches_loader();
	test_thread_names();
	test_unwind_in_process();
	return check_report();
}
