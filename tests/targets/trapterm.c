/* trapterm MARKER [AFTER_S]: catches SIGTERM and SIGINT; on one, writes its
 * number to MARKER, burns AFTER_S (default 0.5) seconds of CPU in
 * after_signal(), then exits 42. Until then it burns CPU in before_signal();
 * with no signal within 20 s it exits 3. For the test of a stop signal
 * passed on by `ember record`. */
#include <signal.h>

#include "common.h"

static volatile sig_atomic_t got;

static void on_signal(int sig)
{
	got = sig;
}

TGT_FRAME static void before_signal(void)
{
	double t0 = tgt_now();
	while (!got && tgt_now() - t0 < 20.0)
		;
}

TGT_FRAME static double after_signal(double seconds)
{
	double t0 = tgt_cpu_now(), x = 0;
	while (tgt_cpu_now() - t0 < seconds)
		x += 1.0;
	return x;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	before_signal();
	if (!got)
		return 3;
	FILE *f = fopen(argv[1], "w");
	if (f) {
		fprintf(f, "%d\n", (int)got);
		fclose(f);
	}
	after_signal(tgt_seconds(argc, argv, 2, 0.5));
	return 42;
}
