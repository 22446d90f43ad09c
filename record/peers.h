/* Which Python thread a thread pool's worker takes its Python frames from
 * (peers.c), for capture.c: the thread of its process that last called
 * into the pool's library, as the samples show it. Told to the Python
 * session, whose copier then copies that thread's frames at each of the
 * worker's samples: the Python line its work was dispatched from, at the
 * worker's instant (docs/pools.md). Not thread-safe. */
#ifndef EMBER_RECORD_PEERS_H
#define EMBER_RECORD_PEERS_H

#include <stdbool.h>
#include <stdint.h>

#include "sampler.h"

struct pool_watch;
/* NULL on OOM. */
struct pool_watch *pool_watch_new(void);
void pool_watch_free(struct pool_watch *pw);

/* Learn from sample s, unwound (python: the sampled thread has Python
 * frames of its own): a Python thread with a frame in a pool's library
 * dispatches to that pool; another thread with one is the pool's worker.
 * Calls set_peer(arg, pid, tid, peer) for each worker whose peer changes. */
typedef void (*pool_watch_peer_fn)(void *arg, uint32_t pid, uint32_t tid, uint32_t peer);
void pool_watch_sample(struct pool_watch *pw, const struct ember_sampler *sampler, const struct ember_sample *s,
		       bool python, pool_watch_peer_fn set_peer, void *arg);
/* set_peer(arg, pid, tid, peer) for every worker that has a peer now. */
void pool_watch_peers(const struct pool_watch *pw, pool_watch_peer_fn set_peer, void *arg);
/* The peer of thread tid of process pid: 0 when none. */
uint32_t pool_watch_peer(const struct pool_watch *pw, uint32_t pid, uint32_t tid);

#endif
