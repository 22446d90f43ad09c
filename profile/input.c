/* Reading an input once (input.h), and telling an .ember file from folded
 * stacks by its first bytes (ember_profile_load). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ember_file.h"
#include "input.h"
#include "profile_internal.h"

/* What one read asks for: large enough that a pipe is drained in few calls. */
#define INPUT_CHUNK ((size_t)1 << 20)

int ember_input_begin(struct ember_input *in, int fd, const char *name, char *err, size_t errlen)
{
	struct stat st;

	memset(in, 0, sizeof *in);
	in->fd = fd;
	in->name = name;
	if (fstat(fd, &st) != 0) {
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: %s", name, strerror(EISDIR));
		return -1;
	}
	/* A regular file is parsed in place, never copied.  An empty one (as
	 * files under /proc claim to be) is read like a pipe. */
	if (S_ISREG(st.st_mode) && st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED) {
			madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
			in->data = m;
			in->len = (size_t)st.st_size;
			in->mapped = in->eof = true;
		}
	}
	return 0;
}

void ember_input_end(struct ember_input *in)
{
	if (in->mapped)
		munmap((void *)in->data, in->len);
	free(in->buf);
	in->data = in->buf = NULL;
}

long long ember_input_fill(struct ember_input *in, size_t want)
{
	while (!in->eof && in->len - in->pos < want) {
		if (in->pos) {
			memmove(in->buf, in->buf + in->pos, in->len - in->pos);
			in->offset += in->pos;
			in->len -= in->pos;
			in->pos = 0;
		}
		size_t need = in->len + INPUT_CHUNK > want ? in->len + INPUT_CHUNK : want;
		if ((in->cap < want || in->cap - in->len < INPUT_CHUNK / 2) &&
		    ember_grow((void **)&in->buf, &in->cap, 1, need) < 0) {
			in->read_errno = ENOMEM;
			return -1;
		}
		in->data = in->buf;
		/* Never more than asked for (and a chunk): memory follows want. */
		size_t room = in->cap - in->len, ask = want - in->len > INPUT_CHUNK ? want - in->len : INPUT_CHUNK;
		ssize_t got = read(in->fd, in->buf + in->len, ask < room ? ask : room);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			in->read_errno = errno;
			return -1;
		}
		in->len += (size_t)got;
		in->eof = got == 0;
	}
	return (long long)(in->len - in->pos);
}

const char *ember_profile_input_name(const char *path)
{
	return strcmp(path, EMBER_STDIN_PATH) == 0 ? EMBER_STDIN_NAME : path;
}

int ember_profile_load_fd(struct ember_profile *p, int fd, const char *name, int column,
			  struct ember_load_warnings *w, char *err, size_t errlen)
{
	struct ember_input in;
	int rc;

	if (w)
		memset(w, 0, sizeof *w);
	if (ember_input_begin(&in, fd, name, err, errlen) < 0)
		return EMBER_LOAD_NOINPUT;
	/* The first bytes say the format: gzip (an .ember file as ember writes
	 * it), the .ember magic (one decompressed by hand), else folded text. */
	long long n = ember_input_fill(&in, 8);
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", name, strerror(in.read_errno));
		rc = EMBER_LOAD_NOINPUT;
	} else if (ember_input_is_gzip(in.data + in.pos, (size_t)n)) {
		rc = ember_read_ember(p, &in, true, err, errlen);
	} else if (n >= 8 && memcmp(in.data + in.pos, EMBER_FILE_MAGIC, 8) == 0) {
		rc = ember_read_ember(p, &in, false, err, errlen);
	} else {
		rc = ember_read_folded(p, &in, column, w, err, errlen);
	}
	ember_input_end(&in);
	return rc;
}

int ember_profile_load(struct ember_profile *p, const char *path, int column,
		       struct ember_load_warnings *w, char *err, size_t errlen)
{
	const char *name = ember_profile_input_name(path);

	if (name != path)
		return ember_profile_load_fd(p, STDIN_FILENO, name, column, w, err, errlen);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (w)
			memset(w, 0, sizeof *w);
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return EMBER_LOAD_NOINPUT;
	}
	int rc = ember_profile_load_fd(p, fd, path, column, w, err, errlen);
	close(fd);
	return rc;
}
