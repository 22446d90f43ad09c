/* Unit tests for common/: the id table against a plain model under random
 * inserts and removals, array growth, the interner, the /proc reader on
 * ember's own process, and the ELF view on the test's own executable
 * against what the dynamic loader and the compiler say. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "elf_view.h"
#include "grow.h"
#include "hash.h"
#include "varint.h"
#include "idtab.h"
#include "proc.h"
#include "strtab.h"

/* ---- idtab: keys are uint64 values in an array, ids index it ---- */

static bool key_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const uint64_t *)ctx)[id] == *(const uint64_t *)key;
}

/* Few distinct hashes on purpose: long probe runs, removals inside them. */
static uint64_t weak_hash(uint64_t k)
{
	return k % 97 * 0x10001;
}

static void test_idtab(void)
{
	enum { N = 4000 };
	static uint64_t keys[N];
	static bool present[N];
	struct ember_idtab t;
	CHECK(ember_idtab_init(&t) == 0);
	uint64_t rng = 12345;
	int bad = 0;
	for (int step = 0; step < 60000; step++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t id = (uint32_t)(rng >> 33) % N;
		keys[id] = id * 7 + 3;
		uint32_t found = ember_idtab_find(&t, weak_hash(keys[id]), key_eq, keys, &keys[id]);
		bad += (found != UINT32_MAX) != present[id] || (present[id] && found != id);
		if (present[id] && (rng & 0x100)) {
			CHECK(ember_idtab_remove(&t, weak_hash(keys[id]), id));
			present[id] = false;
		} else if (!present[id]) {
			CHECK(ember_idtab_insert(&t, weak_hash(keys[id]), id) == 0);
			present[id] = true;
		}
	}
	size_t count = 0;
	for (int i = 0; i < N; i++) {
		count += present[i];
		uint32_t found = ember_idtab_find(&t, weak_hash(keys[i]), key_eq, keys, &keys[i]);
		bad += present[i] ? found != (uint32_t)i : found != UINT32_MAX;
	}
	CHECK(bad == 0);
	CHECK(t.count == count);
	CHECK(!ember_idtab_remove(&t, weak_hash(999999), 999999 % N + N));
	ember_idtab_clear(&t);
	CHECK(t.count == 0 && ember_idtab_find(&t, weak_hash(keys[0]), key_eq, keys, &keys[0]) == UINT32_MAX);
	ember_idtab_free(&t);
}

static void test_grow_and_strtab(void)
{
	int *v = NULL;
	size_t cap = 0;
	CHECK(EMBER_GROW(v, cap, 1) == 0 && cap == 16);
	CHECK(EMBER_GROW(v, cap, 1000) == 0 && cap == 1024);
	v[999] = 7;
	CHECK(EMBER_GROW(v, cap, 10) == 0 && cap == 1024 && v[999] == 7);
	CHECK(ember_grow((void **)&v, &cap, 1u << 30, SIZE_MAX / 2) == -1 && cap == 1024);
	free(v);

	struct ember_strtab *st = ember_strtab_new();
	const char *a = ember_strtab_intern(st, "alpha beta", 5), *b = ember_strtab_cstr(st, "alpha");
	CHECK(a && a == b && !strcmp(a, "alpha"));
	CHECK(ember_strtab_cstr(st, NULL) == ember_strtab_intern(st, "", 0));
	const char *first = ember_strtab_cstr(st, "stays");
	char name[32];
	for (int i = 0; i < 100000; i++) {   /* the table and the arena grow: pointers stay */
		snprintf(name, sizeof name, "s%d", i);
		ember_strtab_cstr(st, name);
	}
	CHECK(first == ember_strtab_cstr(st, "stays") && !strcmp(first, "stays"));
	CHECK(ember_strtab_count(st) == 100000 + 3);
	ember_strtab_free(st);
	CHECK(ember_hash_pair(1, 2) != ember_hash_pair(2, 1));
	/* the sequence hash: order counts, and stacks that differ in one frame
	 * (addresses 16 bytes apart, the usual case) land in different buckets
	 * of a 4096-slot table after the final mix */
	CHECK(ember_hash_step(ember_hash_step(0, 1), 2) != ember_hash_step(ember_hash_step(0, 2), 1));
	{
		static bool used[4096];
		int collisions = 0;
		for (uint64_t i = 0; i < 1024; i++) {
			uint64_t h = 7;
			for (uint64_t f = 0; f < 40; f++)
				h = ember_hash_step(h, 0x7f0000001000ULL + 0x40 * f + (f == 20 ? 16 * i : 0));
			uint32_t slot = (uint32_t)ember_hash_mix(h) & 4095;
			collisions += used[slot];
			used[slot] = true;
		}
		/* 1024 random keys in 4096 slots collide ~118 times on average */
		CHECK(collisions < 170);
	}
	/* varints: round trips at the edges, and reads that must fail */
	{
		static const uint64_t vals[] = { 0, 1, 127, 128, 16383, 16384, UINT32_MAX, UINT64_MAX - 1, UINT64_MAX };
		uint8_t buf[EMBER_VARINT_MAX], ten[11];
		uint64_t v;
		for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
			size_t n = ember_varint_put(buf, vals[i]);
			CHECK(n >= 1 && n <= EMBER_VARINT_MAX && ember_varint_get(buf, n, &v) == n && v == vals[i]);
			CHECK(ember_varint_get(buf, n - 1, &v) == 0);   /* cut short */
		}
		memset(ten, 0x80, sizeof ten);                          /* runs past 64 bits */
		CHECK(ember_varint_get(ten, sizeof ten, &v) == 0);
		static const int64_t ds[] = { 0, -1, 1, INT64_MIN, INT64_MAX };
		for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
			CHECK(ember_unzigzag(ember_zigzag(ds[i])) == ds[i]);
		CHECK(ember_zigzag(-1) == 1 && ember_zigzag(1) == 2);
	}
	uint64_t t0 = ember_now_ns();
	CHECK(ember_now_ns() >= t0 && ember_cpu_ns() > 0);
}

/* ---- proc ---- */

struct find_map {
	uint64_t addr;
	char path[256];
	char perms[5];
	int lines;
};

static bool on_map(void *arg, const struct ember_proc_map *m)
{
	struct find_map *f = arg;
	f->lines++;
	if (f->addr >= m->lo && f->addr < m->hi) {
		snprintf(f->path, sizeof f->path, "%s", m->path);
		memcpy(f->perms, m->perms, sizeof f->perms);
	}
	return true;
}

static void test_proc(void)
{
	struct find_map f = { .addr = (uint64_t)(uintptr_t)test_proc };
	char exe[256], buf[256];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = 0;
	CHECK(ember_proc_maps(0, on_map, &f) == 0 && f.lines > 5);
	CHECK_STR(f.path, exe);
	CHECK(f.perms[2] == 'x');
	struct find_map g = { .addr = (uint64_t)(uintptr_t)test_proc };
	CHECK(ember_proc_maps(getpid(), on_map, &g) == 0 && !strcmp(g.path, exe));
	CHECK(ember_proc_maps(0x7ffffffe, on_map, &g) < 0);          /* no such process */
	/* comm as this process set it (under an emulator the process is the
	 * emulator, so not its file name). */
	CHECK(prctl(PR_SET_NAME, "ember-comm") == 0);
	CHECK(ember_proc_read(0, "comm", buf, sizeof buf) > 0 && !strncmp(buf, "ember-comm", 10));
	CHECK(ember_proc_read(0, "cmdline", buf, 4) == 3 && buf[3] == 0);   /* cut, terminated */
	CHECK(ember_proc_status(0, "Uid", buf, sizeof buf) && (unsigned)atoi(buf) == getuid());
	CHECK(ember_proc_status(getpid(), "NSpid", buf, sizeof buf) && atoi(buf) > 0);
	CHECK(!ember_proc_status(0, "NoSuchField", buf, sizeof buf));
}

/* Whether /proc/self/stat shows no CPU time (utime and stime, fields 14
 * and 15) after this process burnt some: a file an emulator wrote. */
static bool stat_emulated(void)
{
	char line[1024];
	FILE *f = fopen("/proc/self/stat", "re");
	bool got = f && fgets(line, sizeof line, f);
	if (f)
		fclose(f);
	const char *p = got ? strrchr(line, ')') : NULL;
	unsigned long utime = 0, stime = 0;
	/* after the comm: fields 3..13, then utime and stime */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
		return false;
	return utime == 0 && stime == 0;
}

/* CPU time and resident memory from /proc/PID/stat, against getrusage and
 * VmRSS, with a comm holding blanks and parentheses. */
static void test_proc_usage(void)
{
	struct ember_proc_usage u0, u1;
	struct rusage ru;
	char buf[64];
	volatile uint64_t x = 1;
	CHECK(prctl(PR_SET_NAME, "a) b (c") == 0);
	CHECK(ember_proc_usage(0, &u0));
	/* burn 0.3 s of CPU */
	struct timespec ts;
	double start, now;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	start = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	do {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + 1;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
		now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	} while (now - start < 0.3);
	CHECK(ember_proc_usage(getpid(), &u1));
	CHECK(getrusage(RUSAGE_SELF, &ru) == 0);
	double ru_s = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	if (stat_emulated()) {
		/* qemu-user answers /proc/self/stat itself, with zeros for the
		 * times and sizes: nothing to compare the reader against. */
		fprintf(stderr, "NOT CHECKED: CPU time and RSS from /proc/PID/stat -- this process's stat file "
				"has no times (written by an emulator, not the kernel)\n");
	} else {
		CHECK_MSG(u1.cpu_s - u0.cpu_s > 0.2 && u1.cpu_s - u0.cpu_s < 0.6, "0.3 s of CPU burnt");
		CHECK_MSG(u1.cpu_s <= ru_s + 0.05 && u1.cpu_s > ru_s - 0.1, "stat's CPU time agrees with getrusage");
		CHECK(ember_proc_status(0, "VmRSS", buf, sizeof buf));
		long vmrss = atol(buf);
		CHECK_MSG(u1.rss_kib > 0 && u1.rss_kib > vmrss * 3 / 4 && u1.rss_kib < vmrss * 5 / 4 + 64,
			  "stat's resident memory agrees with VmRSS");
	}
	CHECK(!ember_proc_usage(0x7ffffffe, &u1));   /* no such process */
	CHECK(prctl(PR_SET_NAME, "test_common") == 0);
}

/* ---- the ELF view on this executable ---- */

static int find_exe(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (!info->dlpi_name[0]) {
		*(uintptr_t *)arg = info->dlpi_addr;
		return 1;
	}
	return 0;
}

__attribute__((noinline)) int elf_probe_function(int x);
__attribute__((noinline)) int elf_probe_function(int x)
{
	return x * 3 + 1;
}

static void test_elf_view(void)
{
	struct ember_elf e;
	uintptr_t bias = 0;
	dl_iterate_phdr(find_exe, &bias);
	CHECK(ember_elf_open(&e, "/proc/self/exe") == 0);
	CHECK(e.nloads >= 2 && e.exec_hi > e.exec_lo && e.build_id_len == 20);
	CHECK(e.machine == EM_X86_64 || e.machine == EM_AARCH64);
	uint64_t fn = (uint64_t)(uintptr_t)elf_probe_function - bias, size = 0, start = 0, next = 0;
	/* the bytes through the view are the bytes the loader mapped */
	CHECK(ember_elf_at(&e, fn, 16) && !memcmp(ember_elf_at(&e, fn, 16), (const void *)(uintptr_t)elf_probe_function, 16));
	CHECK(ember_elf_symbol(&e, "elf_probe_function", &size) == fn && size > 0);
	CHECK(ember_elf_symbol(&e, "no_such_symbol_anywhere", NULL) == 0);
	/* many names at once: the same answers as one by one */
	const char *names[] = { "elf_probe_function", "no_such_symbol_anywhere", "main", "test_elf_view" };
	uint64_t vals[4], sizes[4];
	CHECK(ember_elf_symbols(&e, names, 4, vals, sizes) == 3);
	for (int i = 0; i < 4; i++) {
		uint64_t one_size = 0, one = ember_elf_symbol(&e, names[i], &one_size);
		CHECK(vals[i] == one && sizes[i] == one_size);
	}
	CHECK(vals[0] == fn && vals[1] == 0);
	CHECK(ember_elf_func_start(&e, fn + 3, &start) && start == fn);
	CHECK(ember_elf_fde_start(&e, fn, &next) && next > fn);
	CHECK(!ember_elf_fde_start(&e, fn + 1, &next));
	uint64_t text_size = 0, text = ember_elf_section(&e, ".text", &text_size);
	CHECK(text && fn >= text && fn < text + text_size);
	/* a build-id mapped with the note: the bytes there are the build-id */
	const uint8_t *note = ember_elf_at(&e, e.build_id_vaddr, e.build_id_len);
	CHECK(e.build_id_vaddr && note && !memcmp(note, e.build_id, e.build_id_len));
	uint64_t b = ember_elf_bias(&e, e.loads[0].vaddr + bias, e.loads[0].offset);
	CHECK(b == bias);
	ember_elf_close(&e);
	CHECK(ember_elf_open(&e, "/proc/self/status") < 0);
	CHECK(ember_elf_open(&e, "/nonexistent") < 0);
}

/* ---- /proc/PID/task ---- */

struct seen_tasks {
	uint32_t tids[64];
	int n, stop_after;
};

static bool note_task(void *arg, uint32_t tid)
{
	struct seen_tasks *s = arg;
	if (s->n < 64)
		s->tids[s->n++] = tid;
	return s->n != s->stop_after;
}

static bool has_tid(const struct seen_tasks *s, uint32_t tid)
{
	for (int i = 0; i < s->n; i++)
		if (s->tids[i] == tid)
			return true;
	return false;
}

static pthread_mutex_t task_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t task_cond = PTHREAD_COND_INITIALIZER;
static uint32_t task_tid;
static bool task_done;

static void *task_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&task_lock);
	task_tid = (uint32_t)syscall(SYS_gettid);
	pthread_cond_broadcast(&task_cond);
	while (!task_done)
		pthread_cond_wait(&task_cond, &task_lock);
	pthread_mutex_unlock(&task_lock);
	return NULL;
}

/* Every thread of this process, each once; fn's false stops the walk; a
 * process that does not exist is -ENOENT. */
static void test_proc_tasks(void)
{
	pthread_t th;
	CHECK(pthread_create(&th, NULL, task_main, NULL) == 0);
	pthread_mutex_lock(&task_lock);
	while (!task_tid)
		pthread_cond_wait(&task_cond, &task_lock);
	pthread_mutex_unlock(&task_lock);

	struct seen_tasks all = { .stop_after = -1 };
	int n = ember_proc_tasks(getpid(), note_task, &all);
	CHECK(n == all.n && n >= 2);
	CHECK(has_tid(&all, (uint32_t)getpid()) && has_tid(&all, task_tid));
	for (int i = 0; i < all.n; i++)
		for (int j = i + 1; j < all.n; j++)
			CHECK(all.tids[i] != all.tids[j]);
	struct seen_tasks one = { .stop_after = 1 };
	CHECK(ember_proc_tasks(0, note_task, &one) == 1 && one.n == 1);
	CHECK(ember_proc_tasks(0x7ffffffe, note_task, &one) == -ENOENT);

	pthread_mutex_lock(&task_lock);
	task_done = true;
	pthread_cond_broadcast(&task_cond);
	pthread_mutex_unlock(&task_lock);
	pthread_join(th, NULL);
}

int main(void)
{
	test_idtab();
	test_grow_and_strtab();
	test_proc();
	test_proc_usage();
	test_proc_tasks();
	test_elf_view();
	return check_report();
}
