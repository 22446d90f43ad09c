/* Minimal assertion helpers for ember's C unit tests.  A test program runs
 * its checks, prints "N passed, N failed" and exits non-zero on any failure. */
#ifndef EMBER_CHECK_H
#define EMBER_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond) do { \
	if (cond) { check_passed++; } \
	else { check_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)

/* CHECK, naming the case (a string) when it fails. */
#define CHECK_MSG(cond, what) do { \
	if (cond) { check_passed++; } \
	else { check_failed++; fprintf(stderr, "%s:%d: CHECK failed (%s): %s\n", __FILE__, __LINE__, (what), #cond); } \
} while (0)

#define CHECK_STR(a, b) do { \
	const char *check_a_ = (a), *check_b_ = (b); \
	if (check_a_ && check_b_ && strcmp(check_a_, check_b_) == 0) { check_passed++; } \
	else { check_failed++; fprintf(stderr, "%s:%d: CHECK_STR failed: %s = \"%s\", expected \"%s\"\n", \
		__FILE__, __LINE__, #a, check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)"); } \
} while (0)

static inline int check_report(void)
{
	printf("%d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
