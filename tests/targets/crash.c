/* crash MODE SECONDS [STATUS]: burns CPU in crash_burn() for SECONDS, then
 *   exit  -> exit(STATUS)         (default STATUS 3)
 *   kill  -> raise(SIGKILL)       (dies of signal 9)
 *   segv  -> stores through NULL  (dies of signal 11)
 *   abort -> abort()              (dies of signal 6) */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include "common.h"

static volatile uint64_t sink;
static int *volatile null_ptr;

__attribute__((noipa)) uint64_t crash_burn(double secs)
{
	double end = tgt_now() + secs;
	uint64_t x = 17;
	do {
		for (int i = 0; i < 20000; i++) {
			x = x * 0xD1342543DE82EF95ull + 1;
			__asm__ volatile("" : "+r"(x));
		}
	} while (tgt_now() < end);
	return x;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: crash exit|kill|segv|abort SECONDS [STATUS]\n");
		return 2;
	}
	sink = crash_burn(atof(argv[2]));
	fflush(stdout);
	if (strcmp(argv[1], "exit") == 0)
		return argc > 3 ? atoi(argv[3]) : 3;
	if (strcmp(argv[1], "kill") == 0)
		raise(SIGKILL);
	if (strcmp(argv[1], "segv") == 0)
		*null_ptr = 42;
	if (strcmp(argv[1], "abort") == 0)
		abort();
	fprintf(stderr, "crash: unknown mode %s\n", argv[1]);
	return 2;
}
