/* Unit tests for sampler/'s unwinder, on stacks copied in process as the
 * kernel copies them at a sample: a full unwind through a known call chain,
 * through frames without CFI (the stack scan), from a leaf sampled on its
 * return (a save rule below SP); the call-instruction decoders the scan
 * relies on; the frame probes the Python check reads. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch_insn.h"
#include "check.h"
#include "unwinder.h"

/* ---- unwinding a stack copied in process ---- */

#include "stack_snapshot.h"

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

/* A process model of this process, its mappings loaded, and an unwinder. */
static struct process *self_model(struct process_model *pm, struct unwinder *uw)
{
	process_model_init(pm);
	unwinder_init(uw);
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
	struct unwinder uw;
	struct process *self = self_model(&pm, &uw);
	struct unwind_input in = input_of(&snap);
	struct ember_frame_addr frames[64];
	uint32_t flags = 0;
	uint32_t n = unwind_sample(&uw, self, &in, frames, 64, &flags, NULL);
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
	uint32_t m = unwind_sample(&uw, self, &in, frames, 64, &flags, NULL);
	CHECK(m < n);
	CHECK(flags & EMBER_SAMPLE_TRUNCATED);

	/* The frame limit also marks truncation. */
	in.stack_len = snap.len;
	in.stack_reserved = snap.len + 8;
	flags = 0;
	CHECK(unwind_sample(&uw, self, &in, frames, 3, &flags, NULL) == 3);
	CHECK(flags & EMBER_SAMPLE_TRUNCATED);
	unwinder_free(&uw);
	process_model_free(&pm);
}

/* ---- frames without CFI: the stack scan ---- */

static bool reaches_main(const struct process *self, const struct ember_frame_addr *f, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(name_of(self, &f[i]), "main") == 0)
			return true;
	return false;
}

/* What the unwinder made of a sample, for a failed check. */
static void print_frames(const char *what, const struct process *self, const struct ember_frame_addr *f,
			 uint32_t n, uint32_t flags)
{
	fprintf(stderr, "  %s (sample flags %#x):", what, flags);
	for (uint32_t i = 0; i < n; i++)
		fprintf(stderr, " %s%s", name_of(self, &f[i]), (f[i].flags & EMBER_FRAME_SCANNED) ? "[scanned]" : "");
	fprintf(stderr, "\n");
}

/* The JIT function holding addr starts at the mapping's start. */
static bool jit_start_of(void *arg, uint32_t pid, uint64_t addr, uint64_t *start)
{
	(void)arg, (void)pid;
	*start = addr & ~4095ull;
	return true;
}

void test_unwind_no_cfi(void);
void test_unwind_no_cfi(void)
{
	static struct snapshot snap;
	struct process_model pm;
	struct unwinder uw;
	struct process *self = self_model(&pm, &uw);
	struct ember_frame_addr frames[64];

	/* A leaf kernel: its caller is found by scanning, past stale return
	 * addresses of finished calls, through the register holding its SP. */
	kern_outer(&snap);
	struct unwind_input in = input_of(&snap);
	uint32_t flags = 0;
	uint32_t n = unwind_sample(&uw, self, &in, frames, 64, &flags, NULL);
	const char *want_k[] = { "kernel_no_cfi", "kern_caller", "kern_outer", "test_unwind_no_cfi" };
	if (n < 2 || strcmp(name_of(self, &frames[1]), "kern_caller") != 0)
		print_frames("kernel", self, frames, n, flags);
	CHECK(n >= 5);
	for (int i = 0; i < 4 && i < (int)n; i++)
		CHECK_STR(name_of(self, &frames[i]), want_k[i]);
	CHECK(frames[0].flags & EMBER_FRAME_SCANNED);
	CHECK(!(frames[1].flags & EMBER_FRAME_SCANNED));
	CHECK(reaches_main(self, frames, n));
	CHECK((flags & (EMBER_SAMPLE_NO_CFI | EMBER_SAMPLE_SCANNED)) == (EMBER_SAMPLE_NO_CFI | EMBER_SAMPLE_SCANNED));
	CHECK(!(flags & (EMBER_SAMPLE_UNWIND_ERROR | EMBER_SAMPLE_TRUNCATED)));

	/* The same kernel with the copy cut inside its buffer: the caller is
	 * above what was copied, so the stack is truncated, not complete. */
	in.stack_len = in.stack_reserved = 8192;
	flags = 0;
	n = unwind_sample(&uw, self, &in, frames, 64, &flags, NULL);
	if (n != 1) print_frames("kernel, copy cut", self, frames, n, flags);
	CHECK(n == 1);
	CHECK(flags & EMBER_SAMPLE_TRUNCATED);
	CHECK(!(frames[0].flags & EMBER_FRAME_SCANNED));

	/* A non-leaf without CFI between two C functions. */
	cb_outer(&snap);
	in = input_of(&snap);
	flags = 0;
	n = unwind_sample(&uw, self, &in, frames, 64, &flags, NULL);
	const char *want_c[] = { "?", "cb_leaf", "callback_no_cfi", "cb_outer", "test_unwind_no_cfi" };
	CHECK(n >= 6);
	for (int i = 1; i < 5 && i < (int)n; i++)
		CHECK_STR(name_of(self, &frames[i]), want_c[i]);
	CHECK(n > 2 && (frames[2].flags & EMBER_FRAME_SCANNED));
	CHECK(!(frames[1].flags & EMBER_FRAME_SCANNED));
	CHECK(reaches_main(self, frames, n));
	CHECK(!(flags & EMBER_SAMPLE_UNWIND_ERROR));

	/* The kernel as JIT code: no symbol, no file.  By the scan alone, and
	 * with its start known (a perf map's), from its prologue read in the
	 * target. */
	jit_kernel_fn = jit_kernel();
	CHECK(jit_kernel_fn != NULL);
	if (jit_kernel_fn) {
		jit_caller(&snap);
		process_load_proc_maps(&pm, self, true);
		const struct module_load *jl = process_find(self, (uint64_t)(uintptr_t)jit_kernel_fn);
		CHECK(jl && jl->mod->jit_pid == getpid());
		for (int with_start = 0; with_start < 2; with_start++) {
			uw.jit_start = with_start ? jit_start_of : NULL;
			in = input_of(&snap);
			flags = 0;
			uint64_t scans0 = uw.scans;
			n = unwind_sample(&uw, self, &in, frames, 64, &flags, NULL);
			CHECK(n >= 4 && frames[0].module == (jl ? jl->mod->id : 0) && (frames[0].flags & EMBER_FRAME_SCANNED));
			if (n < 2 || strcmp(name_of(self, &frames[1]), "jit_caller") != 0)
				print_frames(with_start ? "JIT kernel, its start known" : "JIT kernel, scan only", self,
					     frames, n, flags);
			CHECK(n >= 2 && !strcmp(name_of(self, &frames[1]), "jit_caller"));
			CHECK(n >= 3 && !strcmp(name_of(self, &frames[2]), "test_unwind_no_cfi"));
			CHECK(reaches_main(self, frames, n) && uw.scans == scans0 + 1);
			CHECK(!(flags & (EMBER_SAMPLE_UNWIND_ERROR | EMBER_SAMPLE_TRUNCATED)));
		}
		uw.jit_start = NULL;
	}

	/* A stack with CFI all the way scans nothing. */
	chain_a(&snap);
	in = input_of(&snap);
	flags = 0;
	n = unwind_sample(&uw, self, &in, frames, 64, &flags, NULL);
	CHECK(!(flags & (EMBER_SAMPLE_NO_CFI | EMBER_SAMPLE_SCANNED)));
	bool any = false;
	for (uint32_t i = 0; i < n; i++)
		any |= (frames[i].flags & EMBER_FRAME_SCANNED) != 0;
	CHECK(!any);
	unwinder_free(&uw);
	process_model_free(&pm);
}

/* ---- a leaf sampled on its return, after its epilogue ---- */

#if defined(__x86_64__)
/* epi_caller(s): a frame-pointer function (CFA = RBP + 16) calling
 * epi_leaf(s), whose epilogue pops RBP and keeps, as GCC's CFI does, RBP's
 * save rule up to the `ret`: the rule then points below SP.  epi_leaf
 * records its registers at the `ret` (stores only, the stack untouched),
 * and epi_caller copies the stack once it returned. */
void epi_caller(struct snapshot *s);
void epi_leaf(struct snapshot *s);
extern const uint8_t epi_ret[], epi_after_leaf[];
__asm__(".text\n"
	".globl epi_leaf\n"
	".type epi_leaf, @function\n"
	"epi_leaf:\n"
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	pop %rbp\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	lea epi_ret(%rip), %rax\n"
	"	mov %rax, 64(%rdi)\n"       /* regs[IP] */
	"	mov %rsp, 56(%rdi)\n"       /* regs[SP] */
	"	mov %rbp, 48(%rdi)\n"
	"	mov %rbx, 8(%rdi)\n"
	"	mov %r12, 128(%rdi)\n"
	"	mov %r13, 136(%rdi)\n"
	"	mov %r14, 144(%rdi)\n"
	"	mov %r15, 152(%rdi)\n"
	".globl epi_ret\n"
	".hidden epi_ret\n"           /* (dladdr names the function) */
	"epi_ret:\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size epi_leaf, .-epi_leaf\n"
	".globl epi_caller\n"
	".type epi_caller, @function\n"
	"epi_caller:\n"
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	push %rbx\n"
	"	.cfi_offset %rbx, -24\n"
	"	sub $8, %rsp\n"
	"	mov %rdi, %rbx\n"
	"	call epi_leaf\n"
	".globl epi_after_leaf\n"
	".hidden epi_after_leaf\n"
	"epi_after_leaf:\n"
	"	mov %rbx, %rdi\n"
	"	call snapshot_copy\n"
	"	mov -8(%rbp), %rbx\n"
	"	leave\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size epi_caller, .-epi_caller\n");

void test_unwind_epilogue(void);
void test_unwind_epilogue(void)
{
	static struct snapshot snap;
	memset(snap.regs, 0, sizeof snap.regs);
	epi_caller(&snap);
	/* The copy was taken after the leaf returned: its return address slot
	 * holds the next call's.  Put back the one it held at the `ret`. */
	uint64_t ra = (uint64_t)(uintptr_t)epi_after_leaf;
	memcpy(snap.stack, &ra, sizeof ra);
	CHECK(snap.regs[EMBER_REG_PC] == (uint64_t)(uintptr_t)epi_ret);

	struct process_model pm;
	struct unwinder uw;
	struct process *self = self_model(&pm, &uw);
	struct unwind_input in = input_of(&snap);
	struct ember_frame_addr frames[64];
	uint32_t flags = 0;
	uint32_t n = unwind_sample(&uw, self, &in, frames, 64, &flags, NULL);
	const char *want[] = { "epi_leaf", "epi_caller", "test_unwind_epilogue" };
	bool ok = n >= 3 && reaches_main(self, frames, n) &&
		  !(flags & (EMBER_SAMPLE_NO_CFI | EMBER_SAMPLE_UNWIND_ERROR | EMBER_SAMPLE_TRUNCATED));
	for (uint32_t i = 0; ok && i < 3; i++)
		ok = strcmp(name_of(self, &frames[i]), want[i]) == 0 && !(frames[i].flags & EMBER_FRAME_SCANNED);
	CHECK(ok);
	if (!ok)
		print_frames("leaf on its ret, RBP's rule below SP", self, frames, n, flags);
	unwinder_free(&uw);
	process_model_free(&pm);
}
#endif

/* ---- call instructions: the scan's test of a return address ---- */

/* Every form of call, as the assembler encodes it, then instructions that
 * are no call: bytes, so the x86-64 decoder is tested on every host. */
static const uint8_t x86_code[] = {
	0xe8, 0xfb, 0xff, 0xff, 0xff,                   /* call x86_code */
	0xff, 0xd0,                                     /* call *%rax */
	0x41, 0xff, 0xd3,                               /* call *%r11 */
	0xff, 0x50, 0x08,                               /* call *8(%rax) */
	0xff, 0x93, 0x78, 0x56, 0x34, 0x12,             /* call *0x12345678(%rbx) */
	0xff, 0x14, 0xd8,                               /* call *(%rax,%rbx,8) */
	0xff, 0x54, 0x24, 0x10,                         /* call *0x10(%rsp) */
	0xff, 0x94, 0x24, 0x34, 0x12, 0x00, 0x00,       /* call *0x1234(%rsp) */
	0xff, 0x15, 0xd9, 0xff, 0xff, 0xff,             /* call *x86_code(%rip) */
	0xff, 0x14, 0xcd, 0x40, 0x00, 0x00, 0x00,       /* call *0x40(,%rcx,8) */
	0x3e, 0xff, 0xd0,                               /* notrack call *%rax */
	0x64, 0xff, 0x14, 0x25, 0x28, 0x00, 0x00, 0x00, /* call *%fs:0x28 */
	0x41, 0xff, 0x55, 0x00,                         /* call *(%r13) */
	0xb8, 0x78, 0x56, 0x34, 0x12,                   /* mov $0x12345678, %eax */
	0xff, 0xe0,                                     /* jmp *%rax */
	0x55,                                           /* push %rbp */
	0x48, 0x8b, 0x44, 0x24, 0x08,                   /* mov 8(%rsp), %rax */
	0x48, 0x83, 0xc4, 0x10,                         /* add $0x10, %rsp */
	0xff, 0x60, 0x10,                               /* jmp *0x10(%rax) */
};
/* Where each instruction above ends: the calls, then the others. */
static const uint32_t x86_call_ends[] = { 0x05, 0x07, 0x0a, 0x0d, 0x13, 0x16, 0x1a, 0x21, 0x27,
					   0x2e, 0x31, 0x39, 0x3d, 0 };
static const uint32_t x86_other_ends[] = { 0x42, 0x44, 0x45, 0x4a, 0x4e, 0x51, 0 };

static void test_call_decoding_x86(void)
{
	for (int i = 0; x86_call_ends[i]; i++) {
		uint32_t end = x86_call_ends[i];
		size_t n = end < CALL_INSN_MAX ? end : CALL_INSN_MAX;
		uint64_t ra = (uint64_t)(uintptr_t)(x86_code + end), target = 0;
		enum call_kind k = call_before_x86_64(x86_code + end - n, n, ra, &target);
		CHECK(k == (i == 0 ? CALL_DIRECT : CALL_INDIRECT));
		if (k != (i == 0 ? CALL_DIRECT : CALL_INDIRECT))
			fprintf(stderr, "  call %d (ends at +%u): decoded as %d\n", i, end, k);
		if (i == 0)
			CHECK(target == (uint64_t)(uintptr_t)x86_code);
	}
	for (int i = 0; x86_other_ends[i]; i++) {
		uint32_t end = x86_other_ends[i];
		uint64_t target;
		enum call_kind k = call_before_x86_64(x86_code + end - CALL_INSN_MAX, CALL_INSN_MAX,
						      (uint64_t)(uintptr_t)(x86_code + end), &target);
		CHECK(k == CALL_NONE);
		if (k != CALL_NONE)
			fprintf(stderr, "  instruction %d (ends at +%u): decoded as a call\n", i, end);
	}
	/* Too few bytes before: nothing is read before them. */
	uint64_t target;
	CHECK(call_before_x86_64(x86_code + 1, 1, 0, &target) == CALL_NONE);
	static const uint8_t plt[] = { 0xff, 0x25, 1, 2, 3, 4 }, plt_ibt[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0 },
			     fn[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5 };
	CHECK(plt_stub_x86_64(plt, sizeof plt));
	CHECK(plt_stub_x86_64(plt_ibt, sizeof plt_ibt));
	CHECK(!plt_stub_x86_64(fn, sizeof fn));
}

/* A64 encodings from the architecture's instruction tables. */
static void test_call_decoding_aarch64(void)
{
	static const struct {
		uint32_t insn;
		enum call_kind kind;
		int64_t target;          /* from the instruction's own address, for BL */
	} cases[] = {
		{ 0x94000000, CALL_DIRECT, 0 },          /* bl . */
		{ 0x97ffffff, CALL_DIRECT, -4 },         /* bl .-4 */
		{ 0x94000010, CALL_DIRECT, 64 },         /* bl .+64 */
		{ 0xd63f0100, CALL_INDIRECT, 0 },        /* blr x8 */
		{ 0xd63f083f, CALL_INDIRECT, 0 },        /* blraaz x1 */
		{ 0xd73f0c22, CALL_INDIRECT, 0 },        /* blrab x1, x2 */
		{ 0xd61f0200, CALL_NONE, 0 },            /* br x16 */
		{ 0xd65f03c0, CALL_NONE, 0 },            /* ret */
		{ 0x14000010, CALL_NONE, 0 },            /* b .+64 */
		{ 0xd503201f, CALL_NONE, 0 },            /* nop */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint8_t b[8] = { 0 };
		memcpy(b + 4, &cases[i].insn, 4);
		uint64_t ra = 0x400000 + 8, target = 0;
		enum call_kind k = call_before_aarch64(b, sizeof b, ra, &target);
		CHECK(k == cases[i].kind);
		if (k == CALL_DIRECT)
			CHECK(target == ra - 4 + (uint64_t)cases[i].target);
	}
	uint64_t target;
	CHECK(call_before_aarch64((const uint8_t *)"\x00\x00\x94", 3, 0, &target) == CALL_NONE);
	static const uint32_t plt[] = { 0x90000090, 0xf9400211 }, plt_bti[] = { 0xd503245f, 0xb0000010 },
			      fn[] = { 0xa9bf7bfd, 0x910003fd };
	CHECK(plt_stub_aarch64((const uint8_t *)plt, sizeof plt));
	CHECK(plt_stub_aarch64((const uint8_t *)plt_bti, sizeof plt_bti));
	CHECK(!plt_stub_aarch64((const uint8_t *)fn, sizeof fn));
}

/* ---- frame probes: what a frame held at the sample ---- */

#define HELD_IN_REG 0x5eed0000cafe0001ull
#define HELD_ON_STACK 0x5eed0000cafe0002ull

/* A callee-saved register (DWARF number HELD_DWARF) and one that calls do
 * not preserve (UNKEPT_DWARF). */
#if defined(__x86_64__)
#define HELD_REG "r15"
#define HELD_DWARF 15
#define UNKEPT_DWARF 0     /* rax */
#elif defined(__aarch64__)
#define HELD_REG "x28"
#define HELD_DWARF 28
#define UNKEPT_DWARF 0     /* x0 */
#endif

/* Keeps one value in a callee-saved register across the call and one in
 * its own stack frame, as an interpreter keeps its instruction pointer. */
__attribute__((noinline)) void probe_holder(struct snapshot *s)
{
	volatile uint64_t on_stack = HELD_ON_STACK;
	register uint64_t held __asm__(HELD_REG) = HELD_IN_REG;
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
	struct unwinder uw;
	struct process *self = self_model(&pm, &uw);
	struct unwind_input in = input_of(&snap);
	/* probe_holder's extent: from its symbol, generously (it is small) */
	Dl_info di;
	CHECK(dladdr((void *)(uintptr_t)probe_holder, &di) && di.dli_saddr);
	struct probe_pick pick = { (uint64_t)(uintptr_t)di.dli_saddr, (uint64_t)(uintptr_t)di.dli_saddr + 256, 0 };
	static struct ember_frame_probe out[EMBER_MAX_PROBES];
	struct unwind_probes pr = { .fn = pick_holder, .arg = &pick, .out = out };
	struct ember_frame_addr frames[64];
	uint32_t flags = 0;
	uint32_t n = unwind_sample(&uw, self, &in, frames, 64, &flags, &pr);
	CHECK(n >= 4);
	CHECK(pick.asked >= n - 1);          /* asked for every frame */
	CHECK(pr.n == 1);
	if (pr.n == 1) {
		CHECK(!out[0].leaf);
		CHECK_STR(name_of(self, &frames[out[0].frame]), "probe_holder");
		/* the callee-saved register as the unwinder restored it; the other unknown */
		CHECK(out[0].cand[ember_probe_cand_of_dwarf(HELD_DWARF)] == HELD_IN_REG);
		CHECK(out[0].cand[ember_probe_cand_of_dwarf(UNKEPT_DWARF)] == 0);
		bool found = false;
		for (uint32_t k = EMBER_PROBE_REGS; k < out[0].ncand; k++)
			found |= out[0].cand[k] == HELD_ON_STACK;
		CHECK(out[0].ncand > EMBER_PROBE_REGS && found);
	}
	unwinder_free(&uw);
	process_model_free(&pm);
}

int main(void)
{
	test_frame_probes();
	test_unwind_in_process();
	test_call_decoding_aarch64();
	test_call_decoding_x86();
	test_unwind_no_cfi();
#if defined(__x86_64__)
	test_unwind_epilogue();
#endif
	return check_report();
}
