/* Spends its CPU time inside functions of stripped system libraries, for
 * the tests of debug files found by build-id and of samples that end in
 * code without symbols.
 *
 *   syslibs memchr SECONDS   memchr() over a 1 MiB buffer: libc's own
 *                            implementation (__memchr_avx2 and the like, a
 *                            local symbol only the debug file names)
 *   syslibs deflate SECONDS  zlib's compress2() at level 9: deflate's
 *                            static helpers (longest_match, deflate_slow)
 *   syslibs dlopen SECONDS LIB SYMBOL
 *                            calls LIB's `unsigned long SYMBOL(unsigned long)`
 *                            over and over
 * Each mode runs until the thread has used SECONDS of CPU time. */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "common.h"

static int run_memchr(double secs)
{
	size_t n = 1u << 20;
	unsigned char *buf = malloc(n);
	if (!buf)
		return 1;
	memset(buf, 'a', n);
	/* The needle comes from outside so no call can be folded away. */
	volatile int needle = 'z';
	size_t found = 0;
	double end = tgt_cpu_now() + secs;
	while (tgt_cpu_now() < end)
		for (int i = 0; i < 64; i++)
			found += memchr(buf, needle, n) != NULL;
	free(buf);
	printf("found=%zu\n", found);
	return 0;
}

static int run_deflate(double secs)
{
	uLong n = 256u << 10;
	unsigned char *src = malloc(n);
	uLongf cap = compressBound(n);
	unsigned char *dst = malloc(cap);
	if (!src || !dst)
		return 1;
	/* Text-like bytes with long-range repeats: the match search works hard. */
	uint32_t x = 12345;
	for (uLong i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		src[i] = (unsigned char)('a' + (x >> 16) % 8);
	}
	uLong total = 0;
	double end = tgt_cpu_now() + secs;
	while (tgt_cpu_now() < end) {
		uLongf len = cap;
		if (compress2(dst, &len, src, n, 9) != Z_OK)
			return 1;
		total += len;
	}
	printf("compressed=%lu\n", total);
	free(src);
	free(dst);
	return 0;
}

static int run_dlopen(double secs, const char *lib, const char *name)
{
	void *h = dlopen(lib, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "syslibs: %s\n", dlerror());
		return 1;
	}
	unsigned long (*fn)(unsigned long) = (unsigned long (*)(unsigned long))dlsym(h, name);
	if (!fn) {
		fprintf(stderr, "syslibs: %s\n", dlerror());
		return 1;
	}
	unsigned long acc = 0;
	double end = tgt_cpu_now() + secs;
	while (tgt_cpu_now() < end)
		acc += fn(acc);
	printf("acc=%lu\n", acc);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	double secs = tgt_seconds(argc, argv, 2, 1.0);
	if (strcmp(mode, "memchr") == 0)
		return run_memchr(secs);
	if (strcmp(mode, "deflate") == 0)
		return run_deflate(secs);
	if (strcmp(mode, "dlopen") == 0 && argc > 4)
		return run_dlopen(secs, argv[3], argv[4]);
	fprintf(stderr, "usage: syslibs memchr|deflate SECONDS | syslibs dlopen SECONDS LIB SYMBOL\n");
	return 64;
}
