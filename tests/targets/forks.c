/* forks N MS (defaults 50, 10): forks N children one after another; each
 * runs child_work(), which burns MS milliseconds of its own CPU time, and
 * exits; the parent waits for each before forking the next.  Then it prints
 * "cpu_seconds=X" on stdout: the CPU time of the parent and every child
 * (user + sys), which is all the time a profiler of the program can sample.
 *
 * Children shorter than a sampling period (10.1 ms at 99 Hz) are what a
 * per-task sampling clock misses: it starts a full period away. */
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

static volatile uint64_t sink;

static double own_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((noipa)) uint64_t child_work(double secs)
{
	double end = own_cpu_s() + secs;
	uint64_t x = 5;
	do {
		for (int i = 0; i < 4096; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			__asm__ volatile("" : "+r"(x));
		}
	} while (own_cpu_s() < end);
	return x;
}

static double rusage_s(int who)
{
	struct rusage ru;
	getrusage(who, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 50;
	double secs = (argc > 2 ? atof(argv[2]) : 10) / 1000.0;
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			sink = child_work(secs);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
	printf("cpu_seconds=%.3f\n", rusage_s(RUSAGE_SELF) + rusage_s(RUSAGE_CHILDREN));
	return 0;
}
