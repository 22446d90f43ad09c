/* fuzz.folded: the folded-stacks reader (profile/folded_read.c) on any
 * text, through ember_profile_load (a path: the bytes are an in-memory
 * file, which the reader maps).  Both columns of two-column lines are
 * read.  What it accepts must be consistent, count in the top-N table and
 * survive a round trip through the .ember writer and reader; the warning
 * counts must add up. */
#include "fuzz_profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void load(const char *path, int column)
{
	char err[512] = "";
	struct ember_profile p;
	struct ember_load_warnings w;
	if (ember_profile_init(&p) != 0)
		return;
	int rc = ember_profile_load(&p, path, column, &w, err, sizeof err);
	FUZZ_ASSERT(rc == EMBER_LOAD_OK || rc == EMBER_LOAD_BADDATA || rc == EMBER_LOAD_NOMEM);
	if (rc == EMBER_LOAD_OK) {
		fuzz_check_model(&p);
		fuzz_check_report(&p);
		fuzz_round_trip(&p);
		if (!ember_profile_is_ember_file(path)) {
			FUZZ_ASSERT(w.skipped <= w.lines && w.crlf + w.cr_only <= w.lines && w.two_column <= w.lines);
			FUZZ_ASSERT(p.meta.samples == ember_profile_total(&p) && p.meta.samples > 0);
		}
	} else {
		fuzz_check_error(err);
	}
	ember_profile_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_memfd(data, size, path, sizeof path);
	if (fd < 0)
		return 0;
	load(path, 0);
	load(path, 1);
	close(fd);
	return 0;
}
