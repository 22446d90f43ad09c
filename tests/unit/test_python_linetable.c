/* Line tables: for every code object compiled from an interpreter's standard
 * library (nested ones included), the line of every instruction offset from
 * python-stacks' decoders must equal CPython's own (co_lines() on 3.10+,
 * dis.findlinestarts() before).  The interpreter dumps tables and expected
 * lines once (tests/python/dump_linetables.py); this program compares.
 *
 *   test_python_linetable PYTHON DUMP_SCRIPT OUT_FILE
 * Exit 77 (skip) when PYTHON does not exist. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "py_read.h"

static int run(char *const argv[])
{
	pid_t p = fork();
	if (p == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	if (p < 0 || waitpid(p, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(sz > 0 ? sz : 1);
	if (b && fread(b, 1, sz, f) != (size_t)sz) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*n = (size_t)sz;
	return b;
}

#define TAKE(dst, len) do { if (pos + (len) > n) goto corrupt; memcpy((dst), buf + pos, (len)); pos += (len); } while (0)

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s PYTHON DUMP_SCRIPT OUT\n", argv[0]);
		return 2;
	}
	if (access(argv[1], X_OK) != 0) {
		printf("SKIP: %s not installed\n", argv[1]);
		return 77;
	}
	char *cmd[] = { argv[1], argv[2], argv[3], NULL };
	if (run(cmd) != 0) {
		fprintf(stderr, "%s %s failed\n", argv[1], argv[2]);
		return 1;
	}
	size_t n, pos = 8;
	uint8_t *buf = slurp(argv[3], &n);
	if (!buf || n < 16 || memcmp(buf, "EMBERLT1", 8) != 0) {
		fprintf(stderr, "bad dump %s\n", argv[3]);
		return 1;
	}
	uint32_t major, minor;
	TAKE(&major, 4);
	TAKE(&minor, 4);
	enum py_linetable_kind k = major == 2 ? PY_LT_LNOTAB_UNSIGNED : minor <= 9 ? PY_LT_LNOTAB :
				   minor == 10 ? PY_LT_310 : PY_LT_LOCATIONS;
	int step = major == 2 ? 1 : 2;
	uint64_t codes = 0, offsets = 0, direct_checked = 0, bad_runs = 0, bad_direct = 0, noline = 0;
	while (pos < n) {
		int32_t first;
		uint32_t tlen, ncode, nruns;
		TAKE(&first, 4);
		TAKE(&tlen, 4);
		if (pos + tlen > n)
			goto corrupt;
		const uint8_t *table = buf + pos;
		pos += tlen;
		TAKE(&ncode, 4);
		TAKE(&nruns, 4);
		if (pos + (uint64_t)nruns * 8 > n)
			goto corrupt;
		const uint8_t *runs = buf + pos;
		pos += (size_t)nruns * 8;

		struct py_lines lines;
		CHECK(py_lines_build(&lines, k, table, tlen, first) == 0);
		CHECK(py_lines_lookup(&lines, -1) == first);
		CHECK(py_line_direct(k, table, tlen, first, -1) == first);
		/* the direct decoder walks the table per lookup: check every
		 * offset of small tables, every 16th of big ones */
		int dstep = (uint64_t)ncode * tlen > 4000000 ? 16 * step : step;
		for (uint32_t r = 0; r < nruns; r++) {
			uint32_t start, end;
			int32_t want;
			memcpy(&start, runs + 8 * r, 4);
			memcpy(&want, runs + 8 * r + 4, 4);
			if (r + 1 < nruns)
				memcpy(&end, runs + 8 * (r + 1), 4);
			else
				end = ncode;
			for (uint32_t off = start; off < end; off += step) {
				int got = py_lines_lookup(&lines, (int)off);
				offsets++;
				noline += want == -1;
				if (got != want) {
					if (bad_runs++ < 10)
						fprintf(stderr, "runs: code #%llu (first line %d) offset %u: got %d, want %d\n",
							(unsigned long long)codes, first, off, got, want);
				}
				if (off % dstep == 0) {
					direct_checked++;
					int d = py_line_direct(k, table, tlen, first, (int)off);
					if (d != want && bad_direct++ < 10)
						fprintf(stderr, "direct: code #%llu offset %u: got %d, want %d\n",
							(unsigned long long)codes, off, d, want);
				}
			}
		}
		py_lines_free(&lines);
		codes++;
	}
	printf("CPython %u.%u: %llu code objects, %llu offsets (%llu without a line): %llu mismatches (pre-decoded runs); "
	       "%llu offsets via the direct decoder: %llu mismatches\n", major, minor,
	       (unsigned long long)codes, (unsigned long long)offsets, (unsigned long long)noline,
	       (unsigned long long)bad_runs, (unsigned long long)direct_checked, (unsigned long long)bad_direct);
	CHECK(codes > 1000);
	CHECK(bad_runs == 0);
	CHECK(bad_direct == 0);
	free(buf);
	unlink(argv[3]);
	return check_report();
corrupt:
	fprintf(stderr, "dump truncated at %zu\n", pos);
	return 1;
}
