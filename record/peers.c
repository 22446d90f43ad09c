/* A pool's worker and its peer (peers.h): per process, the thread that
 * last called into each pool library, and each worker's library. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "peers.h"
#include "pools.h"

#define MAX_TRACKED 1024   /* dispatchers and workers kept; more are not given peers */

/* A library that is a pool's, and the thread of a process that called into it last. */
struct dispatcher {
	uint32_t pid, module, tid;
};

struct worker {
	uint32_t pid, tid, module, peer;
};

struct pool_watch {
	uint8_t *kind;             /* per module id: 0 not looked at yet, else its pool kind + 1 */
	size_t nkind, kind_cap;
	struct dispatcher *d;
	size_t nd, d_cap;
	struct worker *w;
	size_t nw, w_cap;
};

struct pool_watch *pool_watch_new(void)
{
	return calloc(1, sizeof(struct pool_watch));
}

void pool_watch_free(struct pool_watch *pw)
{
	if (!pw)
		return;
	free(pw->kind);
	free(pw->d);
	free(pw->w);
	free(pw);
}

/* Whether module m is a pool's library (classified once, by its file name). */
static bool pool_module(struct pool_watch *pw, const struct ember_sampler *sampler, uint32_t m)
{
	if (m == EMBER_NO_MODULE)
		return false;
	if (m >= pw->nkind) {
		if (EMBER_GROW(pw->kind, pw->kind_cap, (size_t)m + 1) != 0)
			return false;
		memset(pw->kind + pw->nkind, 0, m + 1 - pw->nkind);
		pw->nkind = (size_t)m + 1;
	}
	if (!pw->kind[m]) {
		struct ember_module_info mi;
		ember_sampler_module(sampler, m, &mi);
		const char *base = mi.path ? strrchr(mi.path, '/') : NULL;
		pw->kind[m] = (uint8_t)(1 + ember_pool_of_module(base ? base + 1 : mi.path));
	}
	return pw->kind[m] > 1;
}

static struct dispatcher *find_dispatcher(struct pool_watch *pw, uint32_t pid, uint32_t module)
{
	for (size_t i = 0; i < pw->nd; i++)
		if (pw->d[i].pid == pid && pw->d[i].module == module)
			return &pw->d[i];
	return NULL;
}

static struct worker *find_worker(const struct pool_watch *pw, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < pw->nw; i++)
		if (pw->w[i].pid == pid && pw->w[i].tid == tid)
			return &pw->w[i];
	return NULL;
}

/* Give every worker of (pid, module) the peer tid. */
static void repeer(struct pool_watch *pw, uint32_t pid, uint32_t module, uint32_t tid, pool_watch_peer_fn set_peer,
		   void *arg)
{
	for (size_t i = 0; i < pw->nw; i++) {
		struct worker *w = &pw->w[i];
		if (w->pid == pid && w->module == module && w->peer != tid) {
			w->peer = tid;
			set_peer(arg, pid, w->tid, tid);
		}
	}
}

static void dispatched(struct pool_watch *pw, const struct ember_sample *s, uint32_t module,
		       pool_watch_peer_fn set_peer, void *arg)
{
	struct dispatcher *d = find_dispatcher(pw, s->pid, module);
	if (d && d->tid == s->tid)
		return;
	if (!d) {
		if (pw->nd >= MAX_TRACKED || EMBER_GROW(pw->d, pw->d_cap, pw->nd + 1) != 0)
			return;
		d = &pw->d[pw->nd++];
		*d = (struct dispatcher){ .pid = s->pid, .module = module };
	}
	d->tid = s->tid;
	repeer(pw, s->pid, module, s->tid, set_peer, arg);
}

static void worked(struct pool_watch *pw, const struct ember_sample *s, uint32_t module, pool_watch_peer_fn set_peer,
		   void *arg)
{
	struct worker *w = find_worker(pw, s->pid, s->tid);
	if (!w) {
		if (pw->nw >= MAX_TRACKED || EMBER_GROW(pw->w, pw->w_cap, pw->nw + 1) != 0)
			return;
		w = &pw->w[pw->nw++];
		*w = (struct worker){ .pid = s->pid, .tid = s->tid };
	}
	w->module = module;
	const struct dispatcher *d = find_dispatcher(pw, s->pid, module);
	uint32_t peer = d ? d->tid : 0;
	if (peer != w->peer) {
		w->peer = peer;
		set_peer(arg, s->pid, s->tid, peer);
	}
}

void pool_watch_sample(struct pool_watch *pw, const struct ember_sampler *sampler, const struct ember_sample *s,
		       bool python, pool_watch_peer_fn set_peer, void *arg)
{
	/* A worker is told by its outermost frame in a pool's library (the
	 * thread's loop), a dispatcher by any (its call into the library). */
	for (uint32_t i = s->nframes; i-- > 0;) {
		uint32_t m = s->frames[i].module;
		if (!pool_module(pw, sampler, m))
			continue;
		if (python)
			dispatched(pw, s, m, set_peer, arg);
		else if (s->tid != s->pid)
			worked(pw, s, m, set_peer, arg);
		return;
	}
}

uint32_t pool_watch_peer(const struct pool_watch *pw, uint32_t pid, uint32_t tid)
{
	const struct worker *w = find_worker(pw, pid, tid);
	return w ? w->peer : 0;
}

void pool_watch_peers(const struct pool_watch *pw, pool_watch_peer_fn set_peer, void *arg)
{
	for (size_t i = 0; i < pw->nw; i++)
		if (pw->w[i].peer)
			set_peer(arg, pw->w[i].pid, pw->w[i].tid, pw->w[i].peer);
}
