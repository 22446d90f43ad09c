/* fuzz.ember_file: the .ember reader (profile/ember_file_read.c) on any
 * bytes, through its one entry point, ember_profile_load, which takes a
 * path: the bytes are an in-memory file.  zlib reads a file that is not
 * gzip as it is, so the seeds are .ember content uncompressed (what the
 * parser sees; mutating compressed bytes would only ever reach the CRC
 * check) plus a few compressed files for the gzip error paths.  A
 * profile it accepts must be consistent, count in the top-N table and
 * survive a round trip through the writer. */
#include "fuzz_profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[512] = "";
	int fd = fuzz_memfd(data, size, path, sizeof path);
	if (fd < 0)
		return 0;
	struct ember_profile p;
	if (ember_profile_init(&p) == 0) {
		int rc = ember_profile_load(&p, path, 0, NULL, err, sizeof err);
		FUZZ_ASSERT(rc == EMBER_LOAD_OK || rc == EMBER_LOAD_BADDATA || rc == EMBER_LOAD_NOMEM);
		if (rc == EMBER_LOAD_OK) {
			fuzz_check_model(&p);
			fuzz_check_report(&p);
			fuzz_round_trip(&p);
		} else {
			fuzz_check_error(err);
		}
		ember_profile_free(&p);
	}
	close(fd);
	return 0;
}
