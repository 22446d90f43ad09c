/* Loading a profile: open the input once, tell the format from its first
 * bytes and hand it to the reader of that format (profile.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ember_file.h"
#include "input.h"
#include "readers.h"

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
