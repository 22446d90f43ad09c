/* python-stacks/copier/: the BPF frame copier's user-space half, above
 * read/: what a reader tells the copier and takes from it (py_copier_*,
 * for session/reader.c), and its state, private to its files: the ring
 * buffer reader (copier_ring.c), the intake of records (copier_intake.c)
 * and the BPF object with the readers it serves (copier.c).  One copier is
 * shared by the readers of a session; not thread-safe. */
#ifndef EMBER_COPIER_USER_H
#define EMBER_COPIER_USER_H

#include "py_read.h"

struct py_copier_link {
	struct ember_py_copier *copier;  /* not owned; NULL: none */
	uint64_t scans_seen;             /* py_threads.scans when every thread was registered */
};
/* What the copier is told about t (false: it cannot copy this version). */
struct ember_copier_thread;
bool py_copier_thread_entry(const struct ember_python *py, const struct py_thread *t,
			    struct ember_copier_thread *v);
/* After a read of tid (0: none): register with the copier the threads a
 * scan found since the last call, and tid's state if it changed. */
void py_copier_sync(struct ember_python *py, uint32_t tid);
/* copier.c: tell the copier to copy thread peer's frames at thread tid's
 * samples (tid has no Python state; peer 0: none). */
void py_copier_set_peer(struct ember_python *py, uint32_t tid, uint32_t peer);
/* Whether a sample of tid at time_ns came before the copier knew its state. */
bool py_copier_unregistered(struct ember_python *py, uint32_t tid, uint64_t time_ns);
/* Stop using the copier (ember_python_close). */
void py_copier_detach(struct ember_python *py);
/* copier_intake.c: the record of the sample of py's thread tid taken at
 * time_ns (CLOCK_MONOTONIC), kept or still in the ring, or NULL; valid, and
 * the ring consumed no further, until py_copier_done.  A record is handed
 * out once. */
const struct ember_copier_record *py_copier_take(struct ember_python *py, uint32_t tid, uint64_t time_ns);
void py_copier_done(struct ember_python *py);


/* The BPF ring buffer, read in place: a record handed out stays where it
 * is, and the kernel writes nothing over it, until it is released. */
struct py_ring {
	int epoll_fd;                  /* readable when the ring holds records */
	unsigned long *consumer_pos;   /* ours to advance (mapped read-write) */
	const unsigned long *producer_pos;
	const uint8_t *data;           /* the ring, mapped twice in a row: no record wraps */
	uint64_t mask;                 /* ring bytes - 1 */
	size_t page, size;
	uint64_t next;                 /* where the record handed out ends (py_ring_release) */
};
/* Map the ring of map fd (max_entries bytes, a power of two): 0 or -errno. */
int py_ring_open(struct py_ring *r, int map_fd, uint32_t max_entries);
void py_ring_close(struct py_ring *r);
/* The next record the kernel committed (its length in *len), or NULL. */
const void *py_ring_peek(struct py_ring *r, uint32_t *len);
/* Past the record py_ring_peek handed out: its bytes are the kernel's again. */
void py_ring_release(struct py_ring *r);

#define COPIER_RECENT 512              /* records kept, all threads */

struct copier_kept {
	struct ember_copier_record *rec;  /* NULL until first used */
	size_t cap;                       /* bytes allocated at rec */
	bool fresh;                       /* holds a record not yet taken by a read */
};

/* The intake's: records in, kept, handed out (copier_intake.c). */
struct py_intake {
	struct py_ring ring;
	bool held;                    /* a record in the ring is handed out */
	struct copier_kept recent[COPIER_RECENT];   /* ring, oldest overwritten */
	uint64_t kept, replaced;      /* copied (the next goes to recent[kept % COPIER_RECENT]);
	                               * overwritten before a read took them */
	uint64_t fresh;               /* recent[] entries not taken by a read yet */
	uint64_t records;             /* received */
	uint64_t woke;                /* ... that woke ember (EMBER_COPIER_WOKE) */
	uint64_t read_in_place, read_kept;
	uint64_t learnt;              /* code objects named as their record arrived */
	int64_t lag_ns;               /* a sample's time minus its record's, as learnt */
	uint64_t lag_taken;           /* records it was learnt from */
};

struct ember_py_copier {
	struct bpf_object *obj;
	struct bpf_link *switch_link; /* the copy at context switches (opts.at_switch) */
	char switch_note[160];        /* ... why it is not made */
	bool unrolled;                /* the programs loaded are the unrolled variant (copier.bpf.c) */
	int prog_fd, threads_fd;
	int codes_fd;                 /* the copier's code objects seen */
	int stats_fd;                 /* >= 0: the kernel times every run (opts.stats) */
	struct ember_python **readers;/* the readers using it (ember_python_set_copier) */
	size_t nreaders, readers_cap;
	struct py_intake in;
};

/* copier_intake.c: take every record in the ring (ember_py_copier_consume),
 * and free what it kept. */
void py_intake_drain(struct ember_py_copier *st);
void py_intake_free(struct ember_py_copier *st);

#endif
