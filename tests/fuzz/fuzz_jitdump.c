/* fuzz.jitdump: the jitdump reader (symbolizer/jit_map.c) on any bytes:
 * what it names, read whole or as the file grows, must agree (fuzz_jit.h). */
#include "fuzz_jit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/ember-fuzz-jit-%d.dump", (int)getpid());
	fuzz_jit_run(FUZZ_JITDUMP_PID, path, path, data, size);
	return 0;
}
