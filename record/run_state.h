/* The state of one record run, shared by run.c (the run's steps) and
 * capture.c (its hooks and loop). */
#ifndef EMBER_RECORD_RUN_STATE_H
#define EMBER_RECORD_RUN_STATE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "build_profile.h"
#include "jit_map.h"
#include "peers.h"
#include "raw_stacks.h"
#include "record.h"
#include "session.h"

#define MAX_PY_FRAMES EMBER_RECORD_PY_FRAMES
#define PY_READ_BUCKET_NS 100    /* Python read times: 0.1 us buckets */
#define PY_READ_BUCKETS 1000     /* up to 100 us */

/* Python reads of the run and how long they took. */
struct py_reads {
	uint64_t read_ns, reads;       /* time reading Python frames, and reads that found some */
	uint32_t hist[PY_READ_BUCKETS];/* those reads by time (the last bucket: longer) */
	uint64_t lag_ns, late;         /* sample-to-read delay summed, and reads > 1 ms late */
	uint64_t at_sample;            /* reads whose frames the copier took at the sample */
	uint64_t before_copier;        /* samples before the copier knew their thread */
	uint64_t before_load;          /* reads while the copier was being loaded (copier_later) */
	uint64_t gil_dropped;          /* gil_only: samples of threads not holding it */
	uint64_t gil_unknown;          /* gil_only: Python samples whose GIL holder is not known */
	uint64_t gil_known;            /* ... and those whose holder is */
	uint64_t cut;                  /* samples whose Python stack was cut in the middle (deeper
	                                * than MAX_PY_FRAMES) and whose native stack was whole */
};

struct ember_record {
	struct ember_record_opts opts;
	struct ember_sampler *sampler;
	struct raw_stacks *raw;
	struct ember_py_session *python;
	struct ember_jit_map *jit;     /* names of JIT code, from the targets' perf maps */
	bool jit_remove;               /* ember asked for those maps: delete them after reading */
	int poll_ms;                   /* the longest wait between two drains */
	bool py_likely;                /* the target looks like Python (ember_py_target_likely) */
	bool copier_attached_late;     /* the copier came during the run: older tasks lack it */
	struct py_reads pr;
	/* The last sample's Python frames, read before it was unwound. */
	struct ember_py_frame py[MAX_PY_FRAMES];
	uint32_t npy, pyflags, py_tid;
	uint32_t py_peer;              /* with EMBER_PY_PEER: whose frames they are */
	struct pool_watch *pools;      /* pools' workers and the Python threads that dispatch to them */
	uint64_t py_time, py_lag;      /* its sample time, and how late the read started */
	uint64_t test_reads;
	volatile sig_atomic_t *stop;
	bool oom;
	pid_t child;
	bool as_user;                  /* the command runs as the user who ran sudo: */
	struct ember_launch_user as;
	gid_t *as_groups;
	char as_name[256], as_home[4096];
	char err[256];                 /* why the run could not start, when not the sampler's */
	int child_status;
	bool child_reaped;
	struct rusage child_ru;
	double usage0_user_s, usage0_sys_s;   /* attach mode: the target's CPU at the start */
	long usage0_vol, usage0_invol;
	bool usage0_ok;
	uint64_t start_unix_ns;
	double t0_s;                   /* CLOCK_MONOTONIC when the run started (before attach or launch) */
	double wall_s, profiler_cpu_s, symbolize_s;
	uint64_t mismatched;
	struct build_attr_stats attr;  /* what the last profile's attribution did */
	char command[1024];
};

/* p->meta from the run so far (run.c). */
void record_fill_meta(struct ember_record *r, struct ember_profile *p);

#endif
