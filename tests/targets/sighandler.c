/* sighandler [SECONDS] (default 1.5): main -> interrupted_loop spins for
 * SECONDS of its CPU time, and a SIGPROF every 10 ms of CPU runs on_sigprof ->
 * handler_burn for 8 ms of CPU.  Both loops count the thread's CPU clock, not
 * the wall clock, so however loaded the machine is about 80 % of the samples
 * land in the handler, and their stacks must unwind through
 * the kernel's signal frame (glibc's __restore_rt) back into interrupted_loop
 * and main: main;interrupted_loop;...;on_sigprof;handler_burn. */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include "common.h"

static volatile uint64_t sink;

__attribute__((noipa)) static void handler_burn(void)
{
	double end = tgt_cpu_now() + 0.008;
	uint64_t x = 1;
	while (tgt_cpu_now() < end)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink += x;
}

__attribute__((noipa)) static void on_sigprof(int sig)
{
	(void)sig;
	handler_burn();
	sink++;
}

__attribute__((noipa)) static void interrupted_loop(double secs)
{
	double end = tgt_cpu_now() + secs;
	uint64_t x = 7;
	while (tgt_cpu_now() < end)
		for (int i = 0; i < 200; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			__asm__ volatile("" : "+r"(x));
		}
	sink += x;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigprof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } };
	setitimer(ITIMER_PROF, &it, NULL);
	interrupted_loop(tgt_seconds(argc, argv, 1, 1.5));
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	tgt_report_cpu();
	return 0;
}
