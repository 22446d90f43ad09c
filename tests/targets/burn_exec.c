/* burn_exec SECONDS CMD [ARGS...]: spin for SECONDS of its CPU time, then exec
 * CMD in the same process (what a wrapper that ends in `exec python ...`
 * does): the profiler meets a native program that becomes Python later. */
#include <stdint.h>
#include <unistd.h>
#include "common.h"

static volatile uint64_t sink;

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: burn_exec SECONDS CMD [ARGS...]\n");
		return 2;
	}
	double end = tgt_cpu_now() + tgt_seconds(argc, argv, 1, 0);
	uint64_t x = 1;
	while (tgt_cpu_now() < end)
		for (int i = 0; i < 4096; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
	execvp(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
