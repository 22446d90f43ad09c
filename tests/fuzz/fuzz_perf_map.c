/* fuzz.perf_map: the perf map reader (symbolizer/jit_map.c) on any text:
 * what it names, read whole or as the file grows, must agree (fuzz_jit.h). */
#include "fuzz_jit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", FUZZ_PERF_MAP_PID);
	fuzz_jit_run(FUZZ_PERF_MAP_PID, path, NULL, data, size);
	return 0;
}
