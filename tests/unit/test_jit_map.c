/* Unit tests for symbolizer/jit_map.c: perf maps and jitdump files written
 * here the way JIT compilers write them, read incrementally; the files ember
 * must refuse; and JIT modules in the symbolizer. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "jit_map.h"
#include "symbolizer.h"

static char map_path[64];

static void append(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	CHECK(fd >= 0 && write(fd, data, len) == (ssize_t)len);
	if (fd >= 0)
		close(fd);
}

static void append_str(const char *path, const char *s)
{
	append(path, s, strlen(s));
}

static void test_perf_map(void)
{
	pid_t pid = getpid();
	unlink(map_path);
	append_str(map_path, "1000 100 alpha\n"
			     "0x2000 0x80 beta gamma\n"
			     "not a line at all\n"
			     "1050 10 alpha_inner\n");
	struct ember_jit_map *jm = ember_jit_map_new();
	ember_jit_map_read(jm, pid, NULL);
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x1000, NULL), "alpha");
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x10ff, NULL), "alpha");
	CHECK(ember_jit_map_lookup(jm, pid, 0x1100, NULL) == NULL);
	CHECK(ember_jit_map_lookup(jm, pid, 0xfff, NULL) == NULL);
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x1055, NULL), "alpha_inner");   /* the later line wins */
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x1060, NULL), "alpha");
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x207f, NULL), "beta gamma");     /* names keep their spaces */
	uint64_t start = 0;
	CHECK(ember_jit_map_lookup(jm, pid, 0x2010, &start) && start == 0x2000);
	CHECK(ember_jit_map_lookup(jm, pid, 0x2080, NULL) == NULL);
	CHECK(ember_jit_map_lookup(jm, pid + 1, 0x1000, NULL) == NULL);

	/* Appended while the process runs: code replaced at 0x1000, and a
	 * line still being written. */
	append_str(map_path, "1000 100 alpha_v2\n3000 10 del");
	ember_jit_map_read(jm, pid, NULL);
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x1001, NULL), "alpha_v2");
	CHECK(ember_jit_map_lookup(jm, pid, 0x3000, NULL) == NULL);
	append_str(map_path, "ta\n");
	ember_jit_map_read(jm, pid, NULL);
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x3008, NULL), "delta");

	struct ember_jit_map_stats st;
	ember_jit_map_get_stats(jm, &st);
	CHECK(st.files == 1 && st.entries == 5 && st.refused == 0);

	CHECK(ember_jit_map_remove_perf_map(jm, pid));
	CHECK(access(map_path, F_OK) != 0);
	CHECK(!ember_jit_map_remove_perf_map(jm, pid));   /* gone: nothing to delete */
	ember_jit_map_free(jm);
}

/* jitdump records, in this machine's byte order. */
static void put32(uint8_t **p, uint32_t v) { memcpy(*p, &v, 4); *p += 4; }
static void put64(uint8_t **p, uint64_t v) { memcpy(*p, &v, 8); *p += 8; }

static size_t jd_header(uint8_t *b, uint32_t magic)
{
	uint8_t *p = b;
	put32(&p, magic);
	put32(&p, 1);
	put32(&p, 40);
	put32(&p, 62);
	put32(&p, 0);
	put32(&p, (uint32_t)getpid());
	put64(&p, 1);
	put64(&p, 0);
	return (size_t)(p - b);
}

static size_t jd_load(uint8_t *b, uint64_t addr, uint64_t size, const char *name)
{
	uint8_t *p = b;
	size_t total = 16 + 40 + strlen(name) + 1 + size;
	put32(&p, 0);
	put32(&p, (uint32_t)total);
	put64(&p, 2);
	put32(&p, (uint32_t)getpid());
	put32(&p, (uint32_t)getpid());
	put64(&p, addr);
	put64(&p, addr);
	put64(&p, size);
	put64(&p, addr);                        /* code_index: one per piece of code */
	memcpy(p, name, strlen(name) + 1);
	p += strlen(name) + 1;
	memset(p, 0x90, size);                  /* the code bytes */
	return total;
}

static size_t jd_move(uint8_t *b, uint64_t from, uint64_t to, uint64_t size)
{
	uint8_t *p = b;
	put32(&p, 1);
	put32(&p, 16 + 48);
	put64(&p, 3);
	put32(&p, (uint32_t)getpid());
	put32(&p, (uint32_t)getpid());
	put64(&p, to);
	put64(&p, from);
	put64(&p, to);
	put64(&p, size);
	put64(&p, from);                        /* the code_index it was loaded with */
	return 16 + 48;
}

static size_t jd_other(uint8_t *b, uint32_t id)
{
	uint8_t *p = b;
	put32(&p, id);
	put32(&p, 16 + 24);
	put64(&p, 4);
	memset(p, 0, 24);
	return 16 + 24;
}

static void test_jitdump(const char *dir)
{
	pid_t pid = getpid();
	char path[256];
	snprintf(path, sizeof path, "%s/jit-%d.dump", dir, (int)pid);
	static uint8_t buf[8192];
	size_t n = jd_header(buf, 0x4a695444);
	n += jd_load(buf + n, 0x5000, 0x40, "jd_first");
	n += jd_other(buf + n, 2);                       /* debug info: skipped */
	n += jd_load(buf + n, 0x7000, 0x20, "jd_second");
	size_t whole = n;
	n += jd_move(buf + n, 0x5000, 0x6000, 0x40);
	append(path, buf, whole + 10);                   /* the move not written whole yet */
	struct ember_jit_map *jm = ember_jit_map_new();
	ember_jit_map_read(jm, pid, path);
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x5010, NULL), "jd_first");
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x701f, NULL), "jd_second");
	CHECK(ember_jit_map_lookup(jm, pid, 0x6010, NULL) == NULL);
	append(path, buf + whole + 10, n - whole - 10);
	ember_jit_map_read(jm, pid, path);
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x6010, NULL), "jd_first");    /* moved */
	struct ember_jit_map_stats st;
	ember_jit_map_get_stats(jm, &st);
	CHECK(st.files == 1 && st.entries == 3);
	CHECK(!ember_jit_map_remove_perf_map(jm, pid));   /* a jitdump is never deleted */
	CHECK(access(path, F_OK) == 0);
	ember_jit_map_free(jm);
	unlink(path);

	/* Another byte order (or no jitdump at all): nothing read, no crash. */
	n = jd_header(buf, 0x4454694a);
	n += jd_load(buf + n, 0x5000, 0x40, "swapped");
	append(path, buf, n);
	jm = ember_jit_map_new();
	ember_jit_map_read(jm, pid, path);
	ember_jit_map_read(jm, pid, path);
	CHECK(ember_jit_map_lookup(jm, pid, 0x5000, NULL) == NULL);
	ember_jit_map_free(jm);
	unlink(path);
}

/* Files ember must not read: a symbolic link, a FIFO (which would block a
 * plain open), another user's file. */
static void test_refused(const char *dir)
{
	pid_t pid = getpid();
	char real[256];
	snprintf(real, sizeof real, "%s/real.map", dir);
	append_str(real, "1000 100 secret\n");
	unlink(map_path);
	CHECK(symlink(real, map_path) == 0);
	struct ember_jit_map *jm = ember_jit_map_new();
	ember_jit_map_read(jm, pid, NULL);
	ember_jit_map_read(jm, pid, NULL);
	struct ember_jit_map_stats st;
	ember_jit_map_get_stats(jm, &st);
	CHECK(ember_jit_map_lookup(jm, pid, 0x1000, NULL) == NULL);
	CHECK(st.refused == 1 && st.files == 0);        /* counted once */
	CHECK_STR(st.refused_path, map_path);
	CHECK(!ember_jit_map_remove_perf_map(jm, pid));
	CHECK(access(real, F_OK) == 0);
	ember_jit_map_free(jm);
	unlink(map_path);

	CHECK(mkfifo(map_path, 0600) == 0);
	jm = ember_jit_map_new();
	ember_jit_map_read(jm, pid, NULL);             /* returns: O_NONBLOCK, then not a regular file */
	ember_jit_map_get_stats(jm, &st);
	CHECK(st.refused == 1 && ember_jit_map_lookup(jm, pid, 0x1000, NULL) == NULL);
	ember_jit_map_free(jm);
	unlink(map_path);

	if (geteuid() == 0) {
		append_str(map_path, "1000 100 foreign\n");
		CHECK(chown(map_path, 65534, 65534) == 0);
		jm = ember_jit_map_new();
		ember_jit_map_read(jm, pid, NULL);
		ember_jit_map_get_stats(jm, &st);
		CHECK(st.refused == 1 && ember_jit_map_lookup(jm, pid, 0x1000, NULL) == NULL);
		ember_jit_map_free(jm);
		unlink(map_path);
	} else {
		printf("SKIP (part): not root: cannot give a file to another user\n");
	}
}

/* The child of test_other_namespace: a /tmp of its own (tmpfs, in its own
 * mount namespace, as in a container), its perf map there; exits when told. */
static void ns_child(int ready, int go)
{
	char path[64], c = 1;
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("tmpfs", "/tmp", "tmpfs", 0, "size=64k") != 0)
		c = 0;
	int fd = c ? open(path, O_WRONLY | O_CREAT | O_EXCL, 0644) : -1;
	if (fd < 0 || write(fd, "1000 100 in_its_ns\n", 19) != 19)
		c = 0;
	if (write(ready, &c, 1) != 1 || read(go, &c, 1) < 0)
		_exit(1);
	_exit(0);
}

/* A process in another mount namespace whose /tmp is its own: its perf map
 * is read through /proc/PID/root, and deleted after the process and its
 * namespace are gone (through /proc/PID/root it could not be, and ember left
 * the map it had asked oneDNN for in a container's /tmp). */
static void test_other_namespace(void)
{
	if (geteuid() != 0) {
		printf("SKIP (part): not root: no mount namespace of a child's own\n");
		return;
	}
	int ready[2], go[2];
	CHECK(pipe(ready) == 0 && pipe(go) == 0);
	pid_t child = fork();
	if (child == 0)
		ns_child(ready[1], go[0]);
	char ok = 0, path[64];
	CHECK(child > 0 && read(ready[0], &ok, 1) == 1);
	if (!ok) {
		printf("SKIP (part): no mount namespace with a tmpfs /tmp for the child\n");
	} else {
		snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)child);
		struct ember_jit_map *jm = ember_jit_map_new();
		ember_jit_map_read(jm, child, NULL);
		CHECK_STR(ember_jit_map_lookup(jm, child, 0x1010, NULL), "in_its_ns");
		CHECK(access(path, F_OK) != 0);                 /* not in ember's /tmp */
		CHECK(write(go[1], &ok, 1) == 1);
		CHECK(waitpid(child, NULL, 0) == child);
		CHECK(ember_jit_map_remove_perf_map(jm, child));
		CHECK(!ember_jit_map_remove_perf_map(jm, child));   /* it is gone */
		ember_jit_map_free(jm);
	}
	if (!ok && child > 0) {
		CHECK(write(go[1], &ok, 1) == 1);
		waitpid(child, NULL, 0);
	}
	close(ready[0]), close(ready[1]), close(go[0]), close(go[1]);
}

/* JIT modules in the symbolizer: named from the map, else by the mapping. */
static void test_symbolizer_jit(void)
{
	pid_t pid = getpid();
	unlink(map_path);
	append_str(map_path, "7f0000001000 80 _ZN4dnnl4impl3cpu3x6413jit_generatorD2Ev\n"
			     "7f0000002000 80 py::work:/app/main.py\n");
	struct ember_jit_map *jm = ember_jit_map_new();
	ember_jit_map_read(jm, pid, NULL);
	struct ember_symbolizer *sym = ember_symbolizer_new();
	CHECK(ember_symbolizer_add_jit_module(sym, 3, "[jit]", (uint32_t)pid, jm) == 0);
	CHECK(ember_symbolizer_add_jit_module(sym, 4, "[anon:my-jit]", (uint32_t)pid, NULL) == 0);
	struct ember_sym_frame f[4];
	CHECK(ember_symbolize(sym, 3, 0x7f0000001010, f, 4) == 1);
	CHECK_STR(f[0].function, "dnnl::impl::cpu::x64::jit_generator::~jit_generator()");   /* demangled */
	CHECK_STR(f[0].module, "[jit]");
	CHECK(f[0].has_symbol);
	CHECK(ember_symbolize(sym, 3, 0x7f0000002000, f, 4) == 1);
	CHECK_STR(f[0].function, "py::work:/app/main.py");
	CHECK(ember_symbolize(sym, 3, 0x7f0000009000, f, 4) == 1);
	CHECK_STR(f[0].function, "[jit]");                        /* no entry: the mapping's name */
	CHECK(!f[0].has_symbol);
	CHECK(ember_symbolize(sym, 4, 0x7f0000001010, f, 4) == 1);
	CHECK_STR(f[0].function, "[anon:my-jit]");
	CHECK_STR(f[0].module, "[jit]");
	ember_symbolizer_free(sym);
	ember_jit_map_free(jm);
	unlink(map_path);
}

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long max_rss_kib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* The profiled program writes its perf map and jitdump and ember may run as
 * root: what a file costs must be bounded whatever is in it. */
static void test_hostile_perf_map(void)
{
	pid_t pid = getpid();
	unlink(map_path);
	/* A name over EMBER_JIT_NAME_MAX is skipped, the lines around it kept. */
	static char big[EMBER_JIT_NAME_MAX + 200];
	memset(big, 'n', sizeof big - 1);
	append_str(map_path, "1000 10 before\n4000 10 ");
	append_str(map_path, big);
	append_str(map_path, "\n5000 10 after\n");
	/* A last line that never ends, 32 MiB of it: read in linear time
	 * and bounded memory, not buffered whole and scanned again at each
	 * chunk. */
	size_t chunk = 1 << 20;
	char *junk = malloc(chunk);
	memset(junk, 'x', chunk);
	append_str(map_path, "6000 10 ");
	for (int i = 0; i < 32; i++)
		append(map_path, junk, chunk);
	long rss0 = max_rss_kib();
	double t0 = cpu_seconds();
	struct ember_jit_map *jm = ember_jit_map_new();
	ember_jit_map_read(jm, pid, NULL);
	double took = cpu_seconds() - t0;
	CHECK(took < 2.0);
	CHECK(max_rss_kib() - rss0 < 16 * 1024);
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x1000, NULL), "before");
	CHECK(ember_jit_map_lookup(jm, pid, 0x4000, NULL) == NULL);
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x5000, NULL), "after");
	/* The long line ends; what follows it is read. */
	append_str(map_path, "\n7000 10 later\n");
	ember_jit_map_read(jm, pid, NULL);
	CHECK(ember_jit_map_lookup(jm, pid, 0x6000, NULL) == NULL);
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x7000, NULL), "later");
	struct ember_jit_map_stats st;
	ember_jit_map_get_stats(jm, &st);
	CHECK(st.entries == 3 && st.skipped == 2);
	if (took >= 2.0)
		fprintf(stderr, "reading a 32 MiB line took %.2f s of CPU\n", took);
	ember_jit_map_free(jm);
	free(junk);
	unlink(map_path);
}

static void test_hostile_jitdump(const char *dir)
{
	pid_t pid = getpid();
	char path[256];
	snprintf(path, sizeof path, "%s/jit-hostile-%d.dump", dir, (int)pid);
	unlink(path);
	size_t moves = 200000, cap = 4096 + moves * 64 + 2 * (EMBER_JIT_NAME_MAX + 200);
	uint8_t *buf = malloc(cap);
	size_t n = jd_header(buf, 0x4a695444);
	char name[EMBER_JIT_NAME_MAX + 100];
	memset(name, 'j', sizeof name - 1);
	name[sizeof name - 1] = 0;
	n += jd_load(buf + n, 0x9000, 0x10, name);          /* a name over the bound: skipped */
	n += jd_load(buf + n, 0x10000, 0x40, "hopper");
	/* 200,000 moves of one piece of code: each a lookup by its index. */
	for (size_t i = 0; i < moves; i++)
		n += jd_move(buf + n, 0x10000, 0x100000 + i * 0x40, 0x40);
	append(path, buf, n);
	double t0 = cpu_seconds();
	struct ember_jit_map *jm = ember_jit_map_new();
	ember_jit_map_read(jm, pid, path);
	double took = cpu_seconds() - t0;
	CHECK(took < 2.0);
	if (took >= 2.0)
		fprintf(stderr, "200,000 moves took %.2f s of CPU\n", took);
	CHECK(ember_jit_map_lookup(jm, pid, 0x9000, NULL) == NULL);
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x100000 + (moves - 1) * 0x40 + 8, NULL), "hopper");
	CHECK_STR(ember_jit_map_lookup(jm, pid, 0x100000 + 8, NULL), "hopper");
	struct ember_jit_map_stats st;
	ember_jit_map_get_stats(jm, &st);
	CHECK(st.entries == moves + 1 && st.skipped == 1);
	ember_jit_map_free(jm);
	free(buf);
	unlink(path);
}

int main(void)
{
	snprintf(map_path, sizeof map_path, "/tmp/perf-%d.map", (int)getpid());
	char dir[] = "/tmp/ember-jit-test-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_perf_map();
	test_jitdump(dir);
	test_hostile_perf_map();
	test_hostile_jitdump(dir);
	test_refused(dir);
	test_symbolizer_jit();
	test_other_namespace();
	char real[256];
	snprintf(real, sizeof real, "%s/real.map", dir);
	unlink(real);
	rmdir(dir);
	unlink(map_path);
	return check_report();
}
