/* pthreadpool_stages [SECONDS] (default 2): main runs two stages on a
 * pthreadpool of two threads (the pool PyTorch's XNNPACK and QNNPACK use)
 * and a serial one in turn for SECONDS of wall time.  Each pool stage is
 * one pthreadpool_parallelize_1d over its own kernel, its range shared by
 * the pool's worker and main.  Each stage measures the process's CPU time
 * it took (every thread's: tgt_process_cpu_now), the truth a profile is
 * held against, printed at the end as "stage NAME SECONDS".  Built by
 * e2e.pools where libpthreadpool-dev is installed (cc ... -lpthreadpool). */
#include <math.h>
#include <pthreadpool.h>
#include <stdio.h>
#include "common.h"

#define N (1 << 14)

static double buf[N];
static volatile unsigned regions;   /* counted after each region: a stage is no tail call */

TGT_FRAME static void kernel_sin(void *ctx, size_t i)
{
	(void)ctx;
	double x = (double)i;
	for (int k = 0; k < 160; k++)
		x = sin(x) + 1.0;
	buf[i] = x;
}

TGT_FRAME static void kernel_sqrt(void *ctx, size_t i)
{
	(void)ctx;
	double x = (double)i + 2;
	for (int k = 0; k < 240; k++)
		x = sqrt(x) * 1.5 + 1;
	buf[i] += x;
}

TGT_FRAME void stage_sin(pthreadpool_t pool)
{
	pthreadpool_parallelize_1d(pool, kernel_sin, NULL, N, 0);
	regions++;
}

TGT_FRAME void stage_sqrt(pthreadpool_t pool)
{
	pthreadpool_parallelize_1d(pool, kernel_sqrt, NULL, N, 0);
	regions++;
}

TGT_FRAME void stage_serial(void)
{
	double x = 0;
	for (int i = 0; i < N * 64; i++)
		x += sqrt(i);
	buf[0] = x;
}

int main(int argc, char **argv)
{
	double secs = tgt_seconds(argc, argv, 1, 2.0), t_sin = 0, t_sqrt = 0, t_serial = 0, t;
	pthreadpool_t pool = pthreadpool_create(2);
	if (!pool) {
		fprintf(stderr, "pthreadpool_create failed\n");
		return 1;
	}
	double end = tgt_now() + secs;
	while (tgt_now() < end) {
		t = tgt_process_cpu_now();
		stage_sin(pool);
		t_sin += tgt_process_cpu_now() - t;
		t = tgt_process_cpu_now();
		stage_sqrt(pool);
		t_sqrt += tgt_process_cpu_now() - t;
		t = tgt_process_cpu_now();
		stage_serial();
		t_serial += tgt_process_cpu_now() - t;
	}
	pthreadpool_destroy(pool);
	printf("stage stage_sin %.6f\nstage stage_sqrt %.6f\nstage stage_serial %.6f\n", t_sin, t_sqrt, t_serial);
	return 0;
}
