/* cli/outputs.c: an output replaces its file whole or not at all.
 *
 * - the check before a run leaves nothing behind; a write goes to
 *   NAME.ember-tmp.XXXXXX beside NAME, mode 0666 less the umask, and is
 *   renamed over NAME when complete;
 * - a write that fails (the writer's error, as from a full disk) or is
 *   abandoned (outputs_close before the end) leaves the old file as it was
 *   and no temporary file;
 * - a replaced file keeps its mode; a file the user may not write fails the
 *   check (not as root: root may write anything);
 * - /dev/null (a device) is written in place;
 * - a checkpoint's files are new temporary files for the regular outputs
 *   only, removed by outputs_close when no one finished them. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cli.h"

static char dir[] = "/tmp/ember-unit-outputs-XXXXXX";

/* Files in dir whose name contains s. */
static int count_named(const char *s)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += strstr(e->d_name, s) != NULL;
	if (d)
		closedir(d);
	return n;
}

static char *slurp(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	return f ? buf : NULL;
}

static void spit(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "we");
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_mode & 07777 : 0;
}

static void one_output(struct output_set *set, const char *path)
{
	memset(set, 0, sizeof *set);
	set->outputs[0].path = path;
	set->outputs[0].format = FORMAT_FOLDED;
	set->noutputs = 1;
}

static void test_new_file(const char *path)
{
	struct output_set set;
	one_output(&set, path);
	CHECK(outputs_open(&set) == 0);
	CHECK(set.outputs[0].ready && !set.outputs[0].in_place);
	CHECK(count_named(".ember-tmp.") == 0 && access(path, F_OK) != 0);   /* the check leaves nothing */
	CHECK(output_begin(&set.outputs[0]) == 0);
	CHECK(count_named("new.folded.ember-tmp.") == 1);
	CHECK(mode_of(set.outputs[0].tmp) == 0640);   /* umask 027 */
	fputs("a;b 1\n", set.outputs[0].file);
	CHECK(output_finish(&set.outputs[0], 0, 0, NULL) == 0);
	CHECK_STR(slurp(path), "a;b 1\n");
	CHECK(mode_of(path) == 0640);
	CHECK(count_named(".ember-tmp.") == 0);
	outputs_close(&set);
}

static void test_failed_write(const char *path)
{
	struct output_set set;
	spit(path, "old\n", 0604);
	one_output(&set, path);
	CHECK(outputs_open(&set) == 0 && output_begin(&set.outputs[0]) == 0);
	CHECK(mode_of(set.outputs[0].tmp) == 0604);   /* the mode of the file it replaces */
	fputs("half a profile", set.outputs[0].file);
	fprintf(stderr, "(an error line is expected next)\n");
	CHECK(output_finish(&set.outputs[0], -1, ENOSPC, NULL) == EMBER_EXIT_CANTCREAT);
	CHECK_STR(slurp(path), "old\n");
	CHECK(count_named(".ember-tmp.") == 0);
	outputs_close(&set);

	/* abandoned: the run failed to start after the check */
	one_output(&set, path);
	CHECK(outputs_open(&set) == 0 && output_begin(&set.outputs[0]) == 0);
	fputs("never finished", set.outputs[0].file);
	outputs_close(&set);
	CHECK_STR(slurp(path), "old\n");
	CHECK(count_named(".ember-tmp.") == 0);

	one_output(&set, path);
	CHECK(outputs_open(&set) == 0 && output_begin(&set.outputs[0]) == 0);
	fputs("new\n", set.outputs[0].file);
	CHECK(output_finish(&set.outputs[0], 0, 0, NULL) == 0);
	CHECK_STR(slurp(path), "new\n");
	CHECK(mode_of(path) == 0604);
	outputs_close(&set);
}

static void test_unwritable(const char *path)
{
	struct output_set set;
	if (geteuid() == 0) {
		printf("note: running as root: the unwritable-file check is not exercised\n");
		return;
	}
	spit(path, "keep\n", 0444);
	one_output(&set, path);
	fprintf(stderr, "(an error line is expected next)\n");
	CHECK(outputs_open(&set) == EMBER_EXIT_CANTCREAT);
	CHECK_STR(slurp(path), "keep\n");
	outputs_close(&set);
}

static void test_device_and_checkpoint(const char *path)
{
	struct output_set set, ck;
	memset(&set, 0, sizeof set);
	set.outputs[0] = (struct output_spec){ .path = "/dev/null", .format = FORMAT_FOLDED };
	set.outputs[1] = (struct output_spec){ .path = path, .format = FORMAT_FOLDED };
	set.noutputs = 2;
	CHECK(outputs_open(&set) == 0);
	CHECK(set.outputs[0].in_place && set.outputs[0].file && !set.outputs[1].in_place);
	CHECK(outputs_checkpoint_open(&set, &ck) == 1);   /* /dev/null is left alone */
	CHECK(ck.outputs[0].file && count_named("ck.folded.ember-tmp.") == 1);
	outputs_release(&ck);    /* as the parent does after the fork */
	CHECK(count_named("ck.folded.ember-tmp.") == 1);
	outputs_close(&ck);      /* no one finished it */
	CHECK(count_named(".ember-tmp.") == 0);
	fputs("x 1\n", set.outputs[0].file);
	CHECK(output_finish(&set.outputs[0], 0, 0, NULL) == 0);
	CHECK(access("/dev/null", W_OK) == 0);
	outputs_close(&set);
	CHECK(count_named(".ember-tmp.") == 0);
}

int main(void)
{
	char path[128];
	if (!mkdtemp(dir))
		return 2;
	umask(027);
	snprintf(path, sizeof path, "%s/new.folded", dir);
	test_new_file(path);
	snprintf(path, sizeof path, "%s/old.folded", dir);
	test_failed_write(path);
	snprintf(path, sizeof path, "%s/ro.folded", dir);
	test_unwritable(path);
	snprintf(path, sizeof path, "%s/ck.folded", dir);
	test_device_and_checkpoint(path);
	char cmd[160];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return check_report();
}
