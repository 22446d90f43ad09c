/* Writing a profile to every requested output, by format.
 *
 * Every output is checked before a run starts, so that a bad path fails in
 * a second, not after an hour of profiling. A regular file (or a name not
 * yet taken) is never written in place: the profile goes to a temporary
 * file next to it, NAME.ember-tmp.XXXXXX, created exclusively with the mode
 * a plain create would give (0666 less the umask; an existing file's own
 * mode), and renamed over NAME once complete. The previous file of that
 * name stays whole until then, whatever happens to ember; a failed write
 * removes the temporary file. The temporary file exists only while a
 * profile is being written (the check at the start creates one and removes
 * it at once), so only a kill that gives ember no chance to clean up
 * (SIGKILL) during a write can leave one behind. Devices, FIFOs and files
 * ember already has open as a descriptor (-o /dev/stdout with stdout
 * redirected to a file) are opened at the start and written in place:
 * there is nothing to rename over them. Another user's symlink in a
 * sticky, world-writable directory is refused before anything is opened
 * (foreign_link). */
#define _GNU_SOURCE
#include <dirent.h>
#include <libgen.h>
#include <pwd.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

typedef int (*writer_fn)(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o);

static const writer_fn writers[FORMAT_COUNT] = {
	[FORMAT_FOLDED] = ember_write_folded,
	[FORMAT_SVG] = ember_write_svg,
	[FORMAT_PSTATS] = ember_write_pstats,
	[FORMAT_SPEEDSCOPE] = ember_write_speedscope,
	[FORMAT_PPROF] = ember_write_pprof,
	[FORMAT_CHROME] = ember_write_chrome_trace,
	/* FORMAT_EMBER: ember_profile_save, by path (gzip) */
};

#define TMP_TAG ".ember-tmp."
#define TMP_BASE_MAX 200    /* of the name's last component, so the temporary name fits NAME_MAX */

/* Is the file st one of ember's own open descriptors (its stdout, a
 * descriptor the shell passed as /dev/fd/N)? Then the user handed ember
 * that file to write through, and it is written in place. */
static bool open_in_ember(const struct stat *st)
{
	DIR *d = opendir("/proc/self/fd");
	bool found = false;
	if (!d)
		return false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		struct stat fst;
		int fd = atoi(e->d_name);
		if (e->d_name[0] != '.' && fd != dirfd(d) && fstat(fd, &fst) == 0)
			found = fst.st_dev == st->st_dev && fst.st_ino == st->st_ino;
	}
	closedir(d);
	return found;
}

/* Six random name characters (the pid and the clock when getrandom fails). */
static void random_suffix(char out[7])
{
	static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	uint64_t v;
	if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
	}
	for (int i = 0; i < 6; i++, v /= sizeof abc - 1)
		out[i] = abc[v % (sizeof abc - 1)];
	out[6] = 0;
}

/* A replacement keeps the mode of the file it replaces and, where allowed,
 * its owner, as writing the file in place would. */
static void keep_mode(int fd, const char *target)
{
	struct stat st;
	/* lstat: a link at a default name, planted after the names were
	 * checked, is replaced, and must not lend its target's owner */
	if (lstat(target, &st) != 0 || !S_ISREG(st.st_mode))
		return;   /* a new file: 0666 less the umask */
	if (fchmod(fd, st.st_mode & 07777) != 0) {
		/* not fatal: the mode a plain create gives */
	}
	if ((st.st_uid != geteuid() || st.st_gid != getegid()) && fchown(fd, st.st_uid, st.st_gid) != 0) {
		/* only root (or the owner, for a group it is in) may */
	}
}

/* Create TARGET's temporary file in TARGET's directory, exclusively, mode
 * 0666 less the umask (or the mode of the file it replaces). The
 * descriptor, or -1 with errno set. */
static int create_tmp(const char *target, char **tmp)
{
	const char *slash = strrchr(target, '/');
	int dirlen = slash ? (int)(slash - target + 1) : 0;
	int baselen = (int)strlen(target + dirlen);
	baselen = baselen > TMP_BASE_MAX ? TMP_BASE_MAX : baselen;
	for (int tries = 0; tries < 100; tries++) {
		char sfx[7];
		random_suffix(sfx);
		if (asprintf(tmp, "%.*s%.*s" TMP_TAG "%s", dirlen, target, baselen, target + dirlen, sfx) < 0) {
			*tmp = NULL;
			errno = ENOMEM;
			return -1;
		}
		int fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0) {
			keep_mode(fd, target);
			return fd;
		}
		int e = errno;
		free(*tmp);
		*tmp = NULL;
		errno = e;
		if (e != EEXIST)
			return -1;
	}
	return -1;
}

/* The file the finished output replaces: PATH, or the regular file a
 * symlink at PATH leads to (the link stays a link). NULL on OOM. */
static char *replace_target(const char *path)
{
	struct stat lst;
	if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
		char *real = realpath(path, NULL);
		if (real)
			return real;
	}
	return strdup(path);
}

/* Open output o in place: a device, FIFO, one of ember's descriptors, a
 * dangling symlink, or a file in a directory ember may not write. */
static int open_in_place(struct output_spec *o)
{
	o->in_place = true;
	o->file = fopen(o->path, "we");
	return o->file ? 0 : errno;
}

/* The kernel's protected_symlinks rule, applied whatever the sysctl says:
 * a symlink at PATH inside a sticky, world-writable directory is followed
 * only when it belongs to ember's effective user or to the directory's
 * owner. Anyone may plant a link there, and following another user's link
 * would let them choose what ember (perhaps root) overwrites or creates.
 * True, with one line said, when PATH must not be used. */
static bool foreign_link(const char *path)
{
	struct stat lst, dst;
	if (lstat(path, &lst) != 0 || !S_ISLNK(lst.st_mode))
		return false;
	char *copy = strdup(path);
	if (!copy)
		return false;
	bool bad = stat(dirname(copy), &dst) == 0 && (dst.st_mode & S_ISVTX) && (dst.st_mode & S_IWOTH) &&
		lst.st_uid != dst.st_uid && lst.st_uid != geteuid();
	free(copy);
	if (bad) {
		struct passwd *pw = getpwuid(lst.st_uid);
		fprintf(stderr, "ember: cannot write '%s': it is a symlink owned by %s (uid %u) in a sticky "
			"world-writable directory, and ember does not follow another user's link there\n",
			path, pw ? pw->pw_name : "another user", (unsigned)lst.st_uid);
	}
	return bad;
}

/* Check output o before the run: open it when it is written in place, else
 * create and remove a temporary file beside what it replaces. 0, or an
 * errno value. */
static int output_check(struct output_spec *o)
{
	struct stat st, lst;
	bool exists = stat(o->path, &st) == 0;
	bool dangling = !exists && lstat(o->path, &lst) == 0 && S_ISLNK(lst.st_mode);
	/* A file the user may not write stays unwritten, as with a plain open. */
	if (dangling || (exists && (!S_ISREG(st.st_mode) || open_in_ember(&st) || access(o->path, W_OK) != 0)))
		return open_in_place(o);
	if (!(o->target = replace_target(o->path)))
		return ENOMEM;
	int fd = create_tmp(o->target, &o->tmp);
	if (fd < 0 && errno == EACCES && exists)
		return open_in_place(o);   /* the file is writable, its directory is not: as before */
	if (fd < 0)
		return errno;
	close(fd);
	unlink(o->tmp);
	free(o->tmp);
	o->tmp = NULL;
	return 0;
}

int outputs_open(struct output_set *set)
{
	for (int i = 0; i < set->noutputs; i++) {
		struct output_spec *o = &set->outputs[i];
		if (o->ready)
			continue;
		if (foreign_link(o->path)) {
			outputs_close(set);
			return EMBER_EXIT_CANTCREAT;
		}
		int e = output_check(o);
		if (e) {
			fprintf(stderr, "ember: cannot write '%s': %s\n", o->path, strerror(e));
			outputs_close(set);
			return EMBER_EXIT_CANTCREAT;
		}
		o->ready = true;
	}
	return 0;
}

/* Create o's temporary file and open it as o->file. 0 or an errno value. */
static int open_tmp(struct output_spec *o)
{
	int fd = create_tmp(o->target, &o->tmp);
	if (fd < 0)
		return errno;
	if (!(o->file = fdopen(fd, "w"))) {
		int e = errno;
		close(fd);
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
		return e;
	}
	return 0;
}

int output_begin(struct output_spec *o)
{
	if (o->file || o->in_place)
		return o->file ? 0 : EMBER_EXIT_CANTCREAT;
	int e = open_tmp(o);
	if (e == 0)
		return 0;
	fprintf(stderr, "ember: writing '%s' failed: %s\n", o->path, strerror(e));
	o->ready = false;
	return EMBER_EXIT_CANTCREAT;
}

void output_set_path(struct output_spec *o, const char *path)
{
	char *t = o->in_place ? NULL : strdup(path);
	if (!o->in_place && !t)
		return;   /* out of memory: it keeps its provisional name */
	o->path = path;
	if (t) {
		free(o->target);
		o->target = t;
	}
}

/* Drop output o's unfinished temporary file, if any, and its names. */
static void output_discard(struct output_spec *o)
{
	if (o->file) {
		fclose(o->file);
		o->file = NULL;
	}
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->target);
	o->tmp = o->target = NULL;
	o->ready = false;
}

void outputs_close(struct output_set *set)
{
	for (int i = 0; i < set->noutputs; i++)
		output_discard(&set->outputs[i]);
}

void outputs_release(struct output_set *set)
{
	for (int i = 0; i < set->noutputs; i++)
		if (set->outputs[i].file) {
			fclose(set->outputs[i].file);
			set->outputs[i].file = NULL;
		}
}

/* An error message from a writer that names the temporary file names the
 * output instead. */
static const char *without_tmp_name(const struct output_spec *o, const char *err)
{
	size_t n = o->tmp ? strlen(o->tmp) : 0;
	return n && strncmp(err, o->tmp, n) == 0 && err[n] == ':' ? err + n + 1 + (err[n + 1] == ' ') : err;
}

int output_finish(struct output_spec *o, int w, int e, const char *err)
{
	if (o->file) {
		/* On disk before the rename, so that a crash of the machine does
		 * not leave the new name on an empty file either. */
		if (w == 0 && (fflush(o->file) != 0 || (!o->in_place && fdatasync(fileno(o->file)) != 0)))
			w = -1, e = errno;
		if (fclose(o->file) != 0 && w == 0)
			w = -1, e = errno;
		o->file = NULL;
	}
	if (w == 0 && !o->in_place && rename(o->tmp, o->target) != 0)
		w = -1, e = errno, err = NULL;
	if (w == 0) {
		free(o->tmp);   /* renamed: nothing to remove any more */
		o->tmp = NULL;
	}
	output_discard(o);
	if (w == 0)
		return 0;
	if (err && *err)
		fprintf(stderr, "ember: writing '%s' failed: %s\n", o->path, err);
	else
		fprintf(stderr, "ember: writing '%s' failed: %s\n", o->path, strerror(e ? e : EIO));
	return EMBER_EXIT_CANTCREAT;
}

int outputs_write(struct output_set *set, const struct ember_profile *p, bool quiet)
{
	int rc = 0;
	for (int i = 0; i < set->noutputs; i++) {
		struct output_spec *o = &set->outputs[i];
		char err[512] = "";
		int w;
		if (!o->ready)
			continue;   /* not checked (a failed start), or a checkpoint leaves it alone */
		if (output_begin(o) != 0) {
			rc = EMBER_EXIT_CANTCREAT;
			continue;
		}
		errno = 0;
		if (o->format == FORMAT_EMBER)   /* gzip writes by path; o->file stays open to sync the result */
			w = ember_profile_save(p, o->in_place ? o->path : o->tmp, err, sizeof err);
		else
			w = writers[o->format](o->file, p, &set->export);
		if (output_finish(o, w, errno, without_tmp_name(o, err)) != 0)
			rc = EMBER_EXIT_CANTCREAT;
		else if (!quiet)
			fprintf(stderr, "ember: wrote %s (%s)\n", o->path, format_name(o->format));
	}
	return rc;
}

int outputs_checkpoint_open(const struct output_set *set, struct output_set *ck)
{
	memset(ck, 0, sizeof *ck);
	ck->export = set->export;
	for (int i = 0; i < set->noutputs; i++) {
		const struct output_spec *o = &set->outputs[i];
		if (o->in_place || !o->ready)
			continue;   /* a stream gets one profile, at the end */
		struct output_spec *c = &ck->outputs[ck->noutputs++];
		*c = (struct output_spec){ .path = o->path, .format = o->format, .ready = true };
		int e = (c->target = strdup(o->target)) ? open_tmp(c) : ENOMEM;
		if (e) {
			outputs_close(ck);
			errno = e;
			return -1;
		}
	}
	return ck->noutputs;
}
