/* Slowdown target: a fixed number of xorshift iterations (pure user-mode CPU,
 * no syscalls, no allocation).  Prints the CPU time of the work itself and the
 * whole process's CPU (getrusage at exit, startup included).
 * usage: spin [ITERATIONS] */
#include <stdlib.h>

#include "burn.h"

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 500000000UL;
	double t0 = cpu_now();
	unsigned long s = burn(n);
	report(cpu_now() - t0, s);
	return 0;
}
