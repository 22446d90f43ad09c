/* omp_stages [SECONDS] (default 2): main runs two OpenMP stages and a
 * serial one in turn for SECONDS of wall time.  Each OpenMP stage is one
 * parallel loop (`#pragma omp parallel for`) over its own kernel, so the
 * pool's workers run stage_sin._omp_fn.0 and stage_sqrt._omp_fn.0 while
 * main runs its share of the same.  Each stage measures the process's CPU
 * time it took (every thread's: tgt_process_cpu_now), the truth a
 * profile is held against, printed at the end as "stage NAME SECONDS". */
#include <math.h>
#include <stdio.h>
#include "common.h"

#define N (1 << 16)

static double buf[N];
static volatile unsigned regions;   /* counted after each region: a stage is no tail call of GOMP_parallel */

TGT_FRAME double kernel_sin(int i)
{
	double x = i;
	for (int k = 0; k < 40; k++)
		x = sin(x) + 1.0;
	return x;
}

TGT_FRAME double kernel_sqrt(int i)
{
	double x = i + 2;
	for (int k = 0; k < 60; k++)
		x = sqrt(x) * 1.5 + 1;
	return x;
}

TGT_FRAME void stage_sin(void)
{
#pragma omp parallel for
	for (int i = 0; i < N; i++)
		buf[i] = kernel_sin(i);
	regions++;
}

TGT_FRAME void stage_sqrt(void)
{
#pragma omp parallel for
	for (int i = 0; i < N; i++)
		buf[i] += kernel_sqrt(i);
	regions++;
}

TGT_FRAME void stage_serial(void)
{
	double x = 0;
	for (int i = 0; i < N * 16; i++)
		x += sqrt(i);
	buf[0] = x;
}

int main(int argc, char **argv)
{
	double secs = tgt_seconds(argc, argv, 1, 2.0), t_sin = 0, t_sqrt = 0, t_serial = 0, t;
	double end = tgt_now() + secs;
	while (tgt_now() < end) {
		t = tgt_process_cpu_now();
		stage_sin();
		t_sin += tgt_process_cpu_now() - t;
		t = tgt_process_cpu_now();
		stage_sqrt();
		t_sqrt += tgt_process_cpu_now() - t;
		t = tgt_process_cpu_now();
		stage_serial();
		t_serial += tgt_process_cpu_now() - t;
	}
	printf("stage stage_sin %.6f\nstage stage_sqrt %.6f\nstage stage_serial %.6f\n", t_sin, t_sqrt, t_serial);
	return 0;
}
