/* Reading an input once (input.h): a regular file mapped, anything else
 * through a window of what is not consumed yet. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
