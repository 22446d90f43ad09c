/* A small image pipeline, the kind of native code ember is for: synthetic
 * frames go through a separable box blur, a Sobel edge filter and a
 * histogram, on two named worker threads.  Built -O2 without frame pointers,
 * like a distribution's libraries.
 *
 *   pipeline [SECONDS]   (default 2) */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define W 640
#define H 480

struct frame {
	float px[H][W];
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void synthesize(struct frame *f, unsigned seed)
{
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			f->px[y][x] = (float)(((x * 7 + y * 13 + (int)seed) & 255) ^ ((x / 32 + y / 32) & 1 ? 0 : 64));
}

static inline float clampf(float v, float lo, float hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

__attribute__((noinline)) static void box_blur(const struct frame *in, struct frame *tmp, struct frame *out, int r)
{
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			float s = 0;
			for (int k = -r; k <= r; k++)
				s += in->px[y][(int)clampf((float)(x + k), 0, W - 1)];
			tmp->px[y][x] = s / (float)(2 * r + 1);
		}
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			float s = 0;
			for (int k = -r; k <= r; k++)
				s += tmp->px[(int)clampf((float)(y + k), 0, H - 1)][x];
			out->px[y][x] = s / (float)(2 * r + 1);
		}
}

__attribute__((noinline)) static void sobel(const struct frame *in, struct frame *out)
{
	memset(out, 0, sizeof *out);
	for (int y = 1; y < H - 1; y++)
		for (int x = 1; x < W - 1; x++) {
			float gx = in->px[y - 1][x + 1] + 2 * in->px[y][x + 1] + in->px[y + 1][x + 1] -
				   in->px[y - 1][x - 1] - 2 * in->px[y][x - 1] - in->px[y + 1][x - 1];
			float gy = in->px[y + 1][x - 1] + 2 * in->px[y + 1][x] + in->px[y + 1][x + 1] -
				   in->px[y - 1][x - 1] - 2 * in->px[y - 1][x] - in->px[y - 1][x + 1];
			out->px[y][x] = sqrtf(gx * gx + gy * gy);
		}
}

__attribute__((noinline)) static unsigned histogram(const struct frame *in, unsigned bins[64])
{
	memset(bins, 0, 64 * sizeof *bins);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			bins[(unsigned)clampf(in->px[y][x] / 16.0f, 0, 63)]++;
	unsigned best = 0;
	for (unsigned i = 1; i < 64; i++)
		if (bins[i] > bins[best])
			best = i;
	return best;
}

struct worker {
	const char *name;
	double seconds;
	unsigned frames;
	unsigned checksum;
};

static void *run_worker(void *arg)
{
	struct worker *w = arg;
	pthread_setname_np(pthread_self(), w->name);
	struct frame *a = malloc(sizeof *a), *b = malloc(sizeof *b), *c = malloc(sizeof *c);
	unsigned bins[64];
	if (!a || !b || !c)
		exit(1);
	double end = now() + w->seconds;
	while (now() < end) {
		synthesize(a, w->frames);
		box_blur(a, b, c, 3);
		sobel(c, a);
		w->checksum += histogram(a, bins);
		w->frames++;
	}
	free(a), free(b), free(c);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	struct worker ws[2] = { { "filter-0", seconds, 0, 0 }, { "filter-1", seconds, 0, 0 } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, run_worker, &ws[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("pipeline: %u frames in %.1f s (checksum %u)\n", ws[0].frames + ws[1].frames, seconds,
	       ws[0].checksum + ws[1].checksum);
	return 0;
}
