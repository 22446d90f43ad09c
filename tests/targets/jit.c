/* jit MODE [CPU-SECONDS] (default 1.5): generates a kernel at run time, as a
 * JIT compiler does -- machine code copied into anonymous memory made
 * executable -- and spends its time in it: main;outer_jit;<the kernel>.
 * The kernel has no CFI and a frame of its own (saved registers, a local
 * area), like oneDNN's JIT kernels.  MODE says how it is named:
 *
 *   map       /tmp/perf-PID.map names it "jit_spin_kernel" (oneDNN with
 *             ONEDNN_JIT_PROFILE=2, CPython's -X perf)
 *   nomap     no map: ember must call it "[jit]"
 *   named     no map, the mapping named with PR_SET_VMA_ANON_NAME:
 *             "[anon:ember-test-jit]" (kernel 5.17+, else "[jit]")
 *   symlink   /tmp/perf-PID.map is a symbolic link to a map naming it: a
 *             file ember must not follow
 *   foreign   the map belongs to another user (nobody): not trusted
 *   hostile   the map holds only 64 MiB of a line that never ends (what
 *             any program may write to a root ember): "[jit]", and every
 *             sample's lookup misses and reads the map again; MiB in place
 *             of 64 as a third argument
 *   jitdump   no map: /tmp/jit-PID.dump (mapped executable, as its writers
 *             do) loads the kernel as "jit_spin_kernel" and another piece
 *             of code, then moves that one MOVES times (default 200,000;
 *             third argument), each time a little further
 *
 * Prints "pid=PID" and "jit_code=ADDR" on stdout (and, named, whether the
 * kernel took the name: "anon_name=ok|unsupported").  Its files stay behind for the test
 * to check (the symlink's target is /tmp/ember-jit-real-PID.map). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "common.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

/* The kernel's machine code, copied out at run time (position
 * independent: no PC-relative operand).  x86-64: assembled with the
 * program. */
#if defined(__x86_64__)
extern const unsigned char jit_template[], jit_template_end[];
__asm__(".section .rodata\n"
	".globl jit_template\n"
	"jit_template:\n"
	"	push %rbx\n"
	"	push %r12\n"
	"	sub $0x48, %rsp\n"
	"	mov %rdi, %rax\n"
	"	mov %rdi, %r12\n"
	"1:	imul %rax, %rax\n"
	"	mov %rax, 8(%rsp)\n"
	"	dec %r12\n"
	"	jnz 1b\n"
	"	add $0x48, %rsp\n"
	"	pop %r12\n"
	"	pop %rbx\n"
	"	ret\n"
	".globl jit_template_end\n"
	"jit_template_end:\n"
	".text\n");
#define JIT_CODE jit_template
#define JIT_LEN ((size_t)(jit_template_end - jit_template))
#elif defined(__aarch64__)
/* AArch64: the same kernel as A64 instruction words, as a JIT emits them
 * (little-endian, like the machine). */
static const uint32_t jit_words[] = {
	0xa9bf53f3,   /* stp  x19, x20, [sp, #-16]! */
	0xd10103ff,   /* sub  sp, sp, #0x40 */
	0xaa0003e1,   /* mov  x1, x0 */
	0xaa0003f3,   /* mov  x19, x0 */
	0x9b017c21,   /* 1: mul x1, x1, x1 */
	0xf90007e1,   /* str  x1, [sp, #8] */
	0xf1000673,   /* subs x19, x19, #1 */
	0x54ffffa1,   /* b.ne 1b */
	0xaa0103e0,   /* mov  x0, x1 */
	0x910103ff,   /* add  sp, sp, #0x40 */
	0xa8c153f3,   /* ldp  x19, x20, [sp], #16 */
	0xd65f03c0,   /* ret */
};
#define JIT_CODE ((const unsigned char *)jit_words)
#define JIT_LEN sizeof jit_words
#else
#error "jit: no kernel machine code for this architecture"
#endif

typedef uint64_t (*kernel_fn)(uint64_t);
static volatile uint64_t sink;
static char map_path[64];
static long argc_mib;        /* hostile: MiB of the endless line; jitdump: moves */

static void put(unsigned char **p, const void *v, size_t n)
{
	memcpy(*p, v, n);
	*p += n;
}

/* A jitdump record's prefix: id, total size, timestamp, pid, tid. */
static void jd_prefix(unsigned char **p, uint32_t id, uint32_t size)
{
	uint32_t pid = (uint32_t)getpid();
	uint64_t ts = 0;
	put(p, &id, 4), put(p, &size, 4), put(p, &ts, 8), put(p, &pid, 4), put(p, &pid, 4);
}

/* /tmp/jit-PID.dump naming the len bytes at mem, then moves moves of other
 * code, mapped executable so that the profiler learns its path. */
static bool write_jitdump(const unsigned char *mem, size_t len, long moves)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/jit-%d.dump", (int)getpid());
	FILE *f = fopen(path, "w+");
	if (!f)
		return false;
	unsigned char rec[256], *p = rec;
	uint32_t u32[6] = { 0x4a695444, 1, 40, 62, 0, (uint32_t)getpid() };
	uint64_t u64[2] = { 0, 0 };
	put(&p, u32, sizeof u32), put(&p, u64, sizeof u64);
	bool ok = fwrite(rec, 1, (size_t)(p - rec), f) == (size_t)(p - rec);
	static const char name[] = "jit_spin_kernel";
	uint64_t addr = (uintptr_t)mem, size = len, index = 1;
	p = rec;
	jd_prefix(&p, 0, (uint32_t)(16 + 40 + sizeof name));
	put(&p, &addr, 8), put(&p, &addr, 8), put(&p, &size, 8), put(&p, &index, 8), put(&p, name, sizeof name);
	ok = ok && fwrite(rec, 1, (size_t)(p - rec), f) == (size_t)(p - rec);
	static const char decoy[] = "jit_moved_around";
	uint64_t daddr = 0x10000000, dsize = 64, dindex = 2;
	p = rec;
	jd_prefix(&p, 0, (uint32_t)(16 + 40 + sizeof decoy));
	put(&p, &daddr, 8), put(&p, &daddr, 8), put(&p, &dsize, 8), put(&p, &dindex, 8), put(&p, decoy, sizeof decoy);
	ok = ok && fwrite(rec, 1, (size_t)(p - rec), f) == (size_t)(p - rec);
	for (long i = 0; ok && i < moves; i++) {
		uint64_t other = 2, from = 0x10000000 + (uint64_t)i * 64, to = from + 64, sz = 64;
		p = rec;
		jd_prefix(&p, 1, 16 + 48);
		put(&p, &to, 8), put(&p, &from, 8), put(&p, &to, 8), put(&p, &sz, 8), put(&p, &other, 8);
		ok = fwrite(rec, 1, (size_t)(p - rec), f) == (size_t)(p - rec);
	}
	ok = ok && fflush(f) == 0;
	void *m = ok ? mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(f), 0) : MAP_FAILED;
	fclose(f);
	return m != MAP_FAILED;
}

static kernel_fn make_kernel(const char *mode)
{
	size_t len = JIT_LEN, size = 4096;
	unsigned char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return NULL;
	memcpy(mem, JIT_CODE, len);
	__builtin___clear_cache((char *)mem, (char *)mem + len);   /* AArch64: the instruction cache */
	if (mprotect(mem, size, PROT_READ | PROT_EXEC) != 0)
		return NULL;
	if (strcmp(mode, "named") == 0)
		printf("anon_name=%s\n", prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)mem, size,
						 (unsigned long)"ember-test-jit") == 0 ? "ok" : "unsupported");
	snprintf(map_path, sizeof map_path, "/tmp/perf-%d.map", (int)getpid());
	char line[128];
	int n = snprintf(line, sizeof line, "%lx %zx jit_spin_kernel\n", (unsigned long)(uintptr_t)mem, len);
	if (strcmp(mode, "map") == 0 || strcmp(mode, "foreign") == 0 || strcmp(mode, "hostile") == 0) {
		FILE *f = fopen(map_path, "w");
		bool hostile = strcmp(mode, "hostile") == 0;
		if (!f || (!hostile && fwrite(line, 1, (size_t)n, f) != (size_t)n))
			return NULL;
		static char junk[1 << 16];
		memset(junk, 'x', sizeof junk);
		long mib = argc_mib > 0 ? argc_mib : 64;
		for (long i = 0; hostile && i < mib * 16; i++)
			if (fwrite(junk, 1, sizeof junk, f) != sizeof junk)
				return NULL;
		if (fclose(f) != 0)
			return NULL;
		if (strcmp(mode, "foreign") == 0 && chown(map_path, 65534, 65534) != 0)
			return NULL;
	} else if (strcmp(mode, "symlink") == 0) {
		char real[80];
		snprintf(real, sizeof real, "/tmp/ember-jit-real-%d.map", (int)getpid());
		FILE *f = fopen(real, "w");
		if (!f || fwrite(line, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0 || symlink(real, map_path) != 0)
			return NULL;
	}
	if (strcmp(mode, "jitdump") == 0 && !write_jitdump(mem, len, argc_mib > 0 ? argc_mib : 200000))
		return NULL;
	printf("pid=%d\njit_code=%lx\n", (int)getpid(), (unsigned long)(uintptr_t)mem);
	fflush(stdout);
	return (kernel_fn)(uintptr_t)mem;
}

__attribute__((noipa)) uint64_t outer_jit(kernel_fn k, double secs)
{
	double end = tgt_cpu_now() + secs;
	uint64_t x = 0;
	do {
		x += k(1u << 20);
	} while (tgt_cpu_now() < end);
	return x ^ 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "map";
	static const char *const modes[] = { "map", "nomap", "named", "symlink", "foreign", "hostile", "jitdump" };
	bool known = false;
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
		known |= strcmp(mode, modes[i]) == 0;
	argc_mib = argc > 3 ? atol(argv[3]) : 0;
	kernel_fn k = known ? make_kernel(mode) : NULL;
	if (!k) {
		fprintf(stderr, "usage: jit map|nomap|named|symlink|foreign|hostile|jitdump [CPU-SECONDS [MIB|MOVES]] (or setup failed)\n");
		return 2;
	}
	sink = outer_jit(k, tgt_seconds(argc, argv, 2, 1.5));
	tgt_report_cpu();
	return 0;
}
