/* What several unit tests need around files: a scratch directory removed
 * at the end, paths inside it, writing a file whole, and counting a
 * substring in a written output. */
#ifndef EMBER_TEST_FILES_H
#define EMBER_TEST_FILES_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static char test_dir[64];

/* Make /tmp/ember-test-TAG-XXXXXX; false if it cannot be made. */
static inline bool test_dir_make(const char *tag)
{
	snprintf(test_dir, sizeof test_dir, "/tmp/ember-test-%s-XXXXXX", tag);
	return mkdtemp(test_dir) != NULL;
}

/* Remove it and all it holds; false if that failed. */
static inline bool test_dir_remove(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", test_dir);
	return system(cmd) == 0;
}

/* NAME inside the scratch directory (the last four results stay valid). */
static inline const char *tmp(const char *name)
{
	static char path[4][256];
	static int k;
	k = (k + 1) % 4;
	snprintf(path[k], sizeof path[k], "%s/%s", test_dir, name);
	return path[k];
}

static inline void write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(data, 1, n, f) == n);
	if (f)
		fclose(f);
}

/* Occurrences of needle in s, in one pass (a strstr per match would read
 * the rest of s each time under the sanitizers: quadratic on big SVGs). */
static inline int count_of(const char *s, const char *needle)
{
	size_t len = strlen(needle);
	int n = 0;

	for (; *s; s++)
		if (*s == *needle && strncmp(s, needle, len) == 0)
			n++;
	return n;
}

#endif
