/* Reading inputs once: folded stacks and .ember files through pipes, a
 * FIFO and standard input give what the file gives; input that cannot be a
 * profile (gzip bombs, /dev/zero, binary data, overlong lines) fails early
 * with one line; damaged gzip layers are named; NUL bytes in frame names
 * and counts near 2^64 are read as docs/cli.md says. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "test_files.h"
#include "exporters.h"
#include "profile.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A child writing data[0..n) to fd, repeat times (forever when repeat is
 * 0), then exiting; SIGPIPE ends it when the reader stops first. */
static pid_t writer(int fd, const void *data, size_t n, int repeat)
{
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		for (int i = 0; repeat == 0 || i < repeat; i++)
			for (size_t off = 0; off < n;) {
				ssize_t w = write(fd, (const char *)data + off, n - off);
				if (w <= 0)
					_exit(0);
				off += (size_t)w;
			}
		_exit(0);
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/* Load data[0..n) (repeat times; 0 = endlessly) through a pipe. */
static int load_pipe(struct ember_profile *p, const void *data, size_t n, int repeat, struct ember_load_warnings *w,
		     char *err)
{
	int fds[2];
	CHECK(pipe(fds) == 0);
	pid_t pid = writer(fds[1], data, n, repeat);
	close(fds[1]);
	ember_profile_init(p);
	int rc = ember_profile_load_fd(p, fds[0], "pipe", 1, w, err, 512);
	close(fds[0]);
	reap(pid);
	return rc;
}

static int load_path(struct ember_profile *p, const char *path, struct ember_load_warnings *w, char *err)
{
	ember_profile_init(p);
	return ember_profile_load(p, path, 1, w, err, 512);
}

static char *folded_of(const struct ember_profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ember_export_opts o = { 0 };
	ember_write_folded(f, p, &o);
	fclose(f);
	return buf;
}

/* Folded text of about 3 MB, lines of every length up to 40 KB, so that
 * lines straddle the reads of a pipe; its total is known. */
static char *big_folded(size_t *len, uint64_t *total)
{
	size_t cap = 4 << 20, n = 0;
	char *s = malloc(cap);
	*total = 0;
	for (int i = 0; n < cap - (64 << 10); i++) {
		n += (size_t)snprintf(s + n, cap - n, "main;run (app.py:%d)", i % 17);
		for (int d = 0; d < (i * 7919) % 4000; d++)
			n += (size_t)snprintf(s + n, cap - n, ";f%d", d % 13);
		n += (size_t)snprintf(s + n, cap - n, " %d\n", i % 5 + 1);
		*total += (uint64_t)(i % 5 + 1);
	}
	*len = n;
	return s;
}

static void test_folded_streams(void)
{
	struct ember_profile a, b;
	struct ember_load_warnings w;
	char err[512];
	size_t len;
	uint64_t total;
	char *text = big_folded(&len, &total);

	write_file(tmp("big.folded"), text, len);
	CHECK(load_path(&a, tmp("big.folded"), &w, err) == EMBER_LOAD_OK);
	CHECK(ember_profile_total(&a) == total);
	char *want = folded_of(&a);

	/* a pipe */
	CHECK(load_pipe(&b, text, len, 1, &w, err) == EMBER_LOAD_OK);
	CHECK(ember_profile_total(&b) == total && ember_profile_meta(&b)->samples == total);
	char *got = folded_of(&b);
	CHECK_STR(got, want);
	free(got);
	ember_profile_free(&b);

	/* standard input, as "-" */
	int fds[2], saved = dup(0);
	CHECK(pipe(fds) == 0);
	pid_t pid = writer(fds[1], text, len, 1);
	close(fds[1]);
	dup2(fds[0], 0);
	close(fds[0]);
	ember_profile_init(&b);
	CHECK(ember_profile_load(&b, "-", 1, &w, err, sizeof err) == EMBER_LOAD_OK);
	CHECK(ember_profile_total(&b) == total);
	dup2(saved, 0);
	close(saved);
	reap(pid);
	ember_profile_free(&b);
	CHECK_STR(ember_profile_input_name("-"), "<stdin>");

	/* a FIFO: opened once, so the writer's bytes all arrive */
	CHECK(mkfifo(tmp("fifo"), 0600) == 0);
	pid = fork();
	if (pid == 0) {
		int fd = open(tmp("fifo"), O_WRONLY);
		for (size_t off = 0; fd >= 0 && off < len;) {
			ssize_t k = write(fd, text + off, len - off);
			if (k <= 0)
				break;
			off += (size_t)k;
		}
		_exit(0);
	}
	CHECK(load_path(&b, tmp("fifo"), &w, err) == EMBER_LOAD_OK);
	CHECK(ember_profile_total(&b) == total);
	waitpid(pid, NULL, 0);
	ember_profile_free(&b);

	free(want);
	ember_profile_free(&a);
	free(text);
}

/* A 2,000,000-frame line reads (as a file and through a pipe); a line
 * over 64 MiB, /dev/zero and a stream of lines without counts fail
 * early, with the line they stopped at. */
static void test_folded_limits(void)
{
	struct ember_profile p;
	struct ember_load_warnings w;
	char err[512];
	size_t n = 2000000;
	char *deep = malloc(2 * n + 16);
	for (size_t i = 0; i < n; i++)
		memcpy(deep + 2 * i, "f;", 2);
	memcpy(deep + 2 * n - 1, " 7\n", 4);
	CHECK(load_pipe(&p, deep, 2 * n + 2, 1, &w, err) == EMBER_LOAD_OK);
	CHECK(ember_profile_total(&p) == 7 && ember_profile_nstacks(&p) == 1 && ember_profile_stack_depth(&p, 0) == n);
	ember_profile_free(&p);
	free(deep);

	/* 65 MiB without a newline, through a pipe */
	static char junk[1 << 16];
	memset(junk, 'x', sizeof junk);
	double t0 = now_s();
	CHECK(load_pipe(&p, junk, sizeof junk, 0, &w, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "pipe:1: not folded stacks: a line longer than 64 MiB") && !strstr(err, "NUL"));
	ember_profile_free(&p);
	CHECK(load_path(&p, "/dev/zero", &w, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "/dev/zero:1: not folded stacks") && strstr(err, "NUL bytes"));
	ember_profile_free(&p);

	/* endless lines without a count: judged on the first 1,000 of them
	 * (comments and blank lines are not counted) */
	for (size_t i = 0; i < sizeof junk; i += 8)
		memcpy(junk + i, i % 64 == 56 ? "# note\n\n" : "garbage\n", 8);
	CHECK(load_pipe(&p, junk, sizeof junk, 0, &w, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "pipe:1: not folded stacks") && strstr(err, "1000 of its first 1000 lines have no sample count"));
	ember_profile_free(&p);

	/* endless 2 MiB lines without a count: too few in the first MiB to
	 * judge, stopped after 16 MiB */
	size_t big = (size_t)2 << 20;
	char *line = malloc(big);
	CHECK(line != NULL);
	memset(line, 'x', big - 1);
	line[big - 1] = '\n';
	CHECK(load_pipe(&p, line, big, 0, &w, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "pipe:1: not folded stacks") && strstr(err, "first 16 MiB"));
	ember_profile_free(&p);
	free(line);
	double took = now_s() - t0;
	printf("overlong line, /dev/zero and 16 MiB of junk refused in %.2f s\n", took);
	CHECK(took < 10);
}

static void test_folded_nul_and_counts(void)
{
	struct ember_profile p;
	struct ember_load_warnings w;
	char err[512];
	static const char nul[] = "main;f\0oo;bar 3\nmain;f\0oo 2\nmain;\0 1\n";

	write_file(tmp("nul.folded"), nul, sizeof nul - 1);
	CHECK(load_path(&p, tmp("nul.folded"), &w, err) == EMBER_LOAD_OK);
	CHECK(ember_profile_total(&p) == 6 && w.nul_names == 2 && w.invalid_utf8 == 0);
	char *text = folded_of(&p);
	CHECK_STR(text, "main;f\xef\xbf\xbdoo 2\nmain;f\xef\xbf\xbdoo;bar 3\nmain;\xef\xbf\xbd 1\n");
	free(text);
	ember_profile_free(&p);

	/* the largest count, exactly */
	static const char max[] = "a 9223372036854775807\n";
	write_file(tmp("max.folded"), max, sizeof max - 1);
	CHECK(load_path(&p, tmp("max.folded"), &w, err) == EMBER_LOAD_OK && ember_profile_total(&p) == EMBER_COUNT_MAX);
	CHECK(!ember_profile_saturated(&p));
	ember_profile_free(&p);
	static const char sum[] = "a 9223372036854775806\nb 1\n";
	write_file(tmp("sum.folded"), sum, sizeof sum - 1);
	CHECK(load_path(&p, tmp("sum.folded"), &w, err) == EMBER_LOAD_OK && ember_profile_total(&p) == EMBER_COUNT_MAX);
	ember_profile_free(&p);
	/* one past it, in a count (also past 64 bits) and in the sum */
	static const char big[] = "a 1\nb 9223372036854775808\n";
	write_file(tmp("big.folded"), big, sizeof big - 1);
	CHECK(load_path(&p, tmp("big.folded"), &w, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "big.folded:2: sample count larger than 9223372036854775807") != NULL);
	ember_profile_free(&p);
	static const char huge[] = "a 1\nb 18446744073709551616\n";
	write_file(tmp("huge.folded"), huge, sizeof huge - 1);
	CHECK(load_path(&p, tmp("huge.folded"), &w, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "huge.folded:2: sample count larger than 9223372036854775807") != NULL);
	ember_profile_free(&p);
	static const char over[] = "a 9223372036854775807\nb 9223372036854775807\nc 9223372036854775807\n";
	write_file(tmp("over.folded"), over, sizeof over - 1);
	CHECK(load_path(&p, tmp("over.folded"), &w, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "over.folded:2: the sample counts add up to more than 9223372036854775807") != NULL);
	CHECK(strchr(err, '\n') == NULL);
	ember_profile_free(&p);
	/* a long digit run before the count is a frame name, not a count */
	static const char name[] = "a;99999999999999999999999 5\n";
	write_file(tmp("name.folded"), name, sizeof name - 1);
	CHECK(load_path(&p, tmp("name.folded"), &w, err) == EMBER_LOAD_OK && ember_profile_total(&p) == 5);
	ember_profile_free(&p);
}

/* ---- .ember ---- */

static void put_u(uint8_t *b, size_t *n, uint64_t v)
{
	do {
		b[(*n)++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

/* A gzip file of head[0..n) then zeros zero bytes. */
static void gzip_file(const char *path, const void *head, size_t n, size_t zeros)
{
	static uint8_t z[1 << 20];
	gzFile gz = gzopen(path, "wb9");
	gzwrite(gz, head, (unsigned)n);
	for (size_t done = 0; done < zeros; done += sizeof z)
		gzwrite(gz, z, (unsigned)(zeros - done < sizeof z ? zeros - done : sizeof z));
	gzclose(gz);
}

static int load_file_and_pipe(const char *path, char *err, char *perr)
{
	struct ember_profile p;
	struct ember_load_warnings w;
	int rc = load_path(&p, path, &w, err);
	ember_profile_free(&p);
	FILE *f = fopen(path, "rb");
	static uint8_t data[4 << 20];
	size_t n = fread(data, 1, sizeof data, f);
	fclose(f);
	int prc = load_pipe(&p, data, n, 1, &w, perr);
	ember_profile_free(&p);
	CHECK(prc == rc);
	return rc;
}

/* Gzip bombs: 100 MB of zeros right after a valid header, in a section
 * no reader knows, and in a string of the string table.  Each is refused
 * with one line, from a file and from a pipe, within a second or two. */
static void test_bombs(void)
{
	char err[512], perr[512];
	uint8_t head[64];
	size_t n = 0, zeros = 100u << 20;
	double took = 0, t0;

	memcpy(head, "EMBRPROF\x01", 9);
	gzip_file(tmp("zeros.ember"), head, 9, zeros);
	t0 = now_s();
	CHECK(load_file_and_pipe(tmp("zeros.ember"), err, perr) == EMBER_LOAD_BADDATA);
	took += now_s() - t0;
	CHECK(strstr(err, "zeros.ember: corrupt .ember file: bad section tag 0x00 near byte 9") != NULL);
	CHECK(strstr(perr, "pipe: corrupt .ember file: bad section tag 0x00") != NULL);

	n = 9;
	head[n++] = 'Z';
	put_u(head, &n, zeros);
	gzip_file(tmp("unknown.ember"), head, n, zeros);
	t0 = now_s();
	CHECK(load_file_and_pipe(tmp("unknown.ember"), err, perr) == EMBER_LOAD_BADDATA);
	took += now_s() - t0;
	CHECK(strstr(err, "unknown.ember: corrupt .ember: past 64 MiB") && strstr(err, "gzip bomb"));
	CHECK(strstr(perr, "gzip bomb") != NULL);

	n = 9;
	head[n++] = 'S';
	put_u(head, &n, zeros + 6);
	put_u(head, &n, 1);
	put_u(head, &n, zeros);
	gzip_file(tmp("strings.ember"), head, n, zeros);
	t0 = now_s();
	CHECK(load_file_and_pipe(tmp("strings.ember"), err, perr) == EMBER_LOAD_BADDATA);
	took += now_s() - t0;
	CHECK(strstr(err, "strings.ember: corrupt .ember: past 64 MiB") && strstr(err, "gzip bomb"));
	CHECK(strchr(err, '\n') == NULL);
	printf("gzip bombs refused in %.2f s (file and pipe, three bombs)\n", took);
	CHECK(took < 10);
}

/* The content of a small valid .ember file, and the file. */
static size_t good_content(uint8_t *raw, size_t cap, uint8_t *zipped, size_t *zn)
{
	struct ember_profile a;
	char err[512];
	ember_profile_init(&a);
	write_file(tmp("small.folded"), "main;a;b 3\nmain;c 4\n", 20);
	CHECK(ember_profile_load(&a, tmp("small.folded"), 1, NULL, err, sizeof err) == 0);
	CHECK(ember_profile_save(&a, tmp("good.ember"), err, sizeof err) == 0);
	ember_profile_free(&a);
	gzFile gz = gzopen(tmp("good.ember"), "rb");
	int n = gzread(gz, raw, (unsigned)cap);
	gzclose(gz);
	FILE *f = fopen(tmp("good.ember"), "rb");
	*zn = fread(zipped, 1, 1 << 16, f);
	fclose(f);
	return n > 0 ? (size_t)n : 0;
}

/* err after loading data[0..n) from a file named name: rc too. */
static int load_bytes(const char *name, const void *data, size_t n, char *err)
{
	struct ember_profile p;
	write_file(tmp(name), data, n);
	int rc = load_path(&p, tmp(name), NULL, err);
	CHECK(rc != EMBER_LOAD_OK || ember_profile_total(&p) == 7);
	ember_profile_free(&p);
	return rc;
}

static void test_damaged_gzip(void)
{
	static uint8_t raw[1 << 16], zipped[1 << 16], copy[1 << 17];
	char err[512];
	size_t zn;

	good_content(raw, sizeof raw, zipped, &zn);
	/* the CRC, the length, a byte of the compressed body */
	memcpy(copy, zipped, zn);
	copy[zn - 8] ^= 0xff;
	CHECK(load_bytes("crc.ember", copy, zn, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "crc.ember: corrupt .ember (gzip: CRC mismatch)") != NULL);
	memcpy(copy, zipped, zn);
	copy[zn - 3] ^= 0x01;
	CHECK(load_bytes("len.ember", copy, zn, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "len.ember: corrupt .ember (gzip: length mismatch)") != NULL);
	/* Every flipped byte of the compressed body (not the last, whose
	 * high bits may be padding) is named as damage to the gzip layer:
	 * of the .ember file once its magic has been decoded, of the gzip
	 * data when the damage shows before that; a flip that hides the end
	 * of the deflate stream reads as compressed data ending early. */
	int named = 0, as_ember = 0, total = 0;
	for (size_t at = 10; at < zn - 9; at++, total++) {
		memcpy(copy, zipped, zn);
		copy[at] ^= 0x10;
		int rc = load_bytes("flip.ember", copy, zn, err);
		bool ember = strstr(err, "flip.ember: corrupt .ember (gzip: ") != NULL;
		bool gz = ember || strstr(err, "flip.ember: corrupt gzip data (") != NULL ||
			  strstr(err, "flip.ember: truncated .ember file: the compressed data ends early") != NULL;
		named += rc == EMBER_LOAD_BADDATA && gz;
		as_ember += rc == EMBER_LOAD_BADDATA && ember;
		if (!(rc == EMBER_LOAD_BADDATA && gz))
			fprintf(stderr, "  flip at %zu of %zu: rc %d, %s\n", at, zn, rc, err);
	}
	printf("flipped compressed bytes named as gzip damage: %d of %d (%d as a corrupt .ember)\n", named,
	       total, as_ember);
	CHECK(named == total && total > 0 && as_ember > total / 2);
	CHECK(load_bytes("cut.ember", zipped, zn - 4, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "cut.ember: truncated .ember file: the compressed data ends early") != NULL);
}

/* Uncompressed content; two gzip members; bytes after the gzip stream (as
 * gzip -d, ignored); gzip holding folded text, which is not read. */
static void test_gzip_forms(void)
{
	static uint8_t raw[1 << 16], zipped[1 << 16], copy[1 << 17];
	char err[512];
	size_t zn, n = good_content(raw, sizeof raw, zipped, &zn);

	CHECK(load_bytes("raw.ember", raw, n, err) == EMBER_LOAD_OK);
	gzFile gz = gzopen(tmp("two.ember"), "wb");
	gzwrite(gz, raw, 20);
	gzclose(gz);
	gz = gzopen(tmp("two2.ember"), "wb");
	gzwrite(gz, raw + 20, (unsigned)(n - 20));
	gzclose(gz);
	FILE *f = fopen(tmp("two.ember"), "rb");
	size_t m1 = fread(copy, 1, sizeof copy, f);
	fclose(f);
	f = fopen(tmp("two2.ember"), "rb");
	m1 += fread(copy + m1, 1, sizeof copy - m1, f);
	fclose(f);
	CHECK(load_bytes("two.ember", copy, m1, err) == EMBER_LOAD_OK);
	memcpy(copy, zipped, zn);
	memcpy(copy + zn, "trailing", 8);
	CHECK(load_bytes("trail.ember", copy, zn + 8, err) == EMBER_LOAD_OK);

	/* gzip that holds no .ember file */
	gz = gzopen(tmp("folded.gz"), "wb");
	gzwrite(gz, "main;a 1\n", 9);
	gzclose(gz);
	struct ember_profile p;
	CHECK(load_path(&p, tmp("folded.gz"), NULL, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "folded.gz: not an .ember profile (gzip-compressed") != NULL);
	ember_profile_free(&p);
}

/* Content rules: junk after the end marker, a section twice, bytes after
 * a section's items, two rows of one stack and thread. */
static void test_content_rules(void)
{
	static uint8_t raw[1 << 16], zipped[1 << 16], copy[1 << 16];
	char err[512];
	size_t zn, n = good_content(raw, sizeof raw, zipped, &zn);

	memcpy(copy, raw, n);
	memcpy(copy + n, "E\x01\x07", 3);
	CHECK(load_bytes("after.ember", copy, n + 3, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "corrupt .ember file: data after the end marker") != NULL);

	/* the content as sections: find R (rows) and repeat its first row */
	size_t pos = 9, rows = 0, rows_len = 0;
	while (pos < n && raw[pos] != 'E') {
		uint8_t tag = raw[pos++];
		uint64_t len = 0;
		for (int sh = 0;; sh += 7) {
			len |= (uint64_t)(raw[pos] & 0x7f) << sh;
			if (!(raw[pos++] & 0x80))
				break;
		}
		if (tag == 'R')
			rows = pos, rows_len = len;
		pos += len;
	}
	CHECK(rows && rows_len >= 4 && rows_len < 127);
	/* R's body: count, then (stack, thread, count) per row, small here */
	size_t k = 0;
	memcpy(copy, raw, rows - 1);
	k = rows - 1;
	copy[k++] = (uint8_t)(rows_len + 1);   /* one byte more: after the items */
	memcpy(copy + k, raw + rows, rows_len);
	k += rows_len;
	copy[k++] = 0;
	memcpy(copy + k, raw + rows + rows_len, n - rows - rows_len);
	CHECK(load_bytes("extra.ember", copy, k + n - rows - rows_len, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "sample rows: bytes after its items") != NULL);

	/* the same row twice (its count then appears once more in the sum) */
	memcpy(copy, raw, rows);
	copy[rows] = (uint8_t)(raw[rows] + 1);
	k = rows + 1;
	memcpy(copy + k, raw + rows + 1, rows_len - 1);
	k += rows_len - 1;
	memcpy(copy + k, raw + rows + 1, 3);   /* the first row: 3 one-byte varints */
	k += 3;
	copy[rows - 1] = (uint8_t)(rows_len + 3);
	memcpy(copy + k, raw + rows + rows_len, n - rows - rows_len);
	CHECK(load_bytes("tworows.ember", copy, k + n - rows - rows_len, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "bad sample rows") != NULL);

	/* a second M section */
	memcpy(copy, raw, 9);
	memcpy(copy + 9, "M\x00", 2);
	memcpy(copy + 11, raw + 9, n - 9);
	CHECK(load_bytes("mm.ember", copy, n + 2, err) == EMBER_LOAD_BADDATA);
	CHECK(strstr(err, "a second 'M' section") != NULL);
}

/* Line ends read through a pipe, whose reads end anywhere, a CR at the end
 * of one included: a CR LF is one line end, a lone CR one too. */
static void test_folded_line_ends(void)
{
	struct ember_profile p;
	struct ember_load_warnings w;
	char err[512];
	const int n = 100000;

	CHECK(load_pipe(&p, "a;b 1\r\n", 7, n, &w, err) == EMBER_LOAD_OK);
	CHECK(ember_profile_total(&p) == (uint64_t)n && w.crlf == (uint64_t)n && w.cr_only == 0 && w.skipped == 0);
	ember_profile_free(&p);
	CHECK(load_pipe(&p, "a;b 1\ra;c 2\r", 12, n, &w, err) == EMBER_LOAD_OK);
	CHECK(ember_profile_total(&p) == 3ull * n && p.nstacks == 2 && w.cr_only == 2ull * n && w.crlf == 0);
	ember_profile_free(&p);
	CHECK(load_pipe(&p, "a;b 1\n\r", 7, n, &w, err) == EMBER_LOAD_OK);
	CHECK(ember_profile_total(&p) == (uint64_t)n && w.cr_only == (uint64_t)n && w.skipped == 0);
	ember_profile_free(&p);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (!test_dir_make("input"))
		return 1;
	test_folded_streams();
	test_folded_limits();
	test_folded_nul_and_counts();
	test_folded_line_ends();
	test_bombs();
	test_damaged_gzip();
	test_gzip_forms();
	test_content_rules();
	if (!test_dir_remove())
		return 1;
	return check_report();
}
