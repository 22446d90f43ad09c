/* The copier's records coming in, and handed out to the reads of their
 * samples.
 *
 * Matching a record to its sample: same tid and process, and its time
 * (taken in the same perf overflow as the sample's own stamp, on the same
 * clock, CLOCK_MONOTONIC) at most MATCH_BEFORE_NS earlier or
 * MATCH_AFTER_NS later than the sample's, the nearest one.  The window must
 * be tight: in frequency mode the kernel's sampling period varies, and two
 * samples of one thread can be 35 us apart.  Where the copier's stamp falls
 * depends on the kernel: 0.2-2 us after the sample's on 6.18 (x86-64 here),
 * before it on 6.1 (the program runs before the sample is prepared: the
 * copy's own time apart, 25-150 us under emulation).  So the windows are
 * centred on the sample's time minus the lag learnt from the records taken
 * so far (in->lag_ns).  A sample no record matches so may take the one
 * record of its thread from MATCH_WIDE_NS before it to MATCH_AFTER_NS after
 * it, when there is exactly one (the first such teaches the lag): only
 * earlier ones, as a later record may be the next sample's while this
 * sample's own is not in yet, and the earlier samples took theirs.
 *
 * The common case costs no copy: a read consumes the ring up to its
 * sample's record (one within MATCH_NOW_NS of the sample) and is handed that
 * record where it lies in the ring (py_copier_take), which is consumed no
 * further until the read is done (py_copier_done); the records behind it
 * wait in the ring for their own samples.  Records passed over on the way
 * (samples of another CPU's perf ring, drained later; samples ember did not
 * read) are copied and kept, unless their thread was not registered (no
 * frames to read: a launcher's processes, a thread's first samples); the search walks back from the newest and
 * stops at records SCAN_BACK_NS older than the sample.  A sample whose
 * record was already overwritten (ember fell COPIER_RECENT samples behind)
 * is read live, after the fact.
 *
 * A record that woke ember holds a code object the copier had not seen: it
 * may be freed within milliseconds (a module's code, once imported), so
 * its names and line table are read as the record arrives, not when its
 * sample's turn comes in the batch (cached ones cost a lookup). */
#include <stdlib.h>
#include <string.h>

#include "copier_record.h"
#include "copier_user.h"

#define MATCH_BEFORE_NS 10000ull
#define MATCH_AFTER_NS 50000ull
#define MATCH_NOW_NS 10000ull          /* nearer than any two samples of one thread */
#define MATCH_WIDE_NS 400000ull        /* a lone earlier record this near is the sample's
                                        * (under half of 999 Hz's period) */
#define SCAN_BACK_NS 5000000ull

/* The sample a read asks for. */
struct want {
	uint32_t pid, tid;
	uint64_t time_ns;
};

/* Bytes of a record's objects (nobjs entries from q, at most avail): -1 if
 * they do not fit or an entry is malformed. */
static int64_t objs_bytes(const uint8_t *q, uint32_t nobjs, uint64_t avail)
{
	uint64_t used = 0;
	for (uint32_t i = 0; i < nobjs; i++) {
		if (avail - used < 16)
			return -1;
		__u64 n;
		const uint8_t *b = ember_copier_obj_bytes(q + used, &n);
		uint64_t head = (uint64_t)(b - (q + used));
		if ((rd64(q + used, 0) & EMBER_COPIER_LONG_TAG) && (n > EMBER_COPIER_TABLE_MORE || n % 8))
			return -1;
		if (avail - used < head + n)
			return -1;
		used += head + n;
	}
	return (int64_t)used;
}

/* Whether the size bytes at r are a whole record as copier_record.h lays it out. */
static bool record_ok(const struct ember_copier_record *r, size_t size)
{
	size_t head = offsetof(struct ember_copier_record, data);
	if (size < head || r->nframes > EMBER_COPIER_MAX_FRAMES || r->ncodes > EMBER_COPIER_MAX_FRAMES ||
	    r->nobjs > EMBER_COPIER_NEW_CODES * (EMBER_COPIER_OBJS + 1) || r->ts_len > EMBER_COPIER_TS_BYTES ||
	    r->frame_len > EMBER_COPIER_FRAME_BYTES || r->code_len > EMBER_COPIER_CODE_BYTES ||
	    size < head + r->ts_len + ember_copier_frames_bytes(r))
		return false;
	uint64_t fixed = head + r->ts_len + ember_copier_frames_bytes(r);
	return objs_bytes(r->data + (fixed - head), r->nobjs, size - fixed) == (int64_t)(size - fixed);
}

static bool is_sample(const struct ember_copier_record *r, const struct want *w)
{
	return w && r->tid == w->tid && r->pid == w->pid && r->time_ns + MATCH_NOW_NS >= w->time_ns &&
	       r->time_ns <= w->time_ns + MATCH_NOW_NS;
}

/* Learn the lag from a record taken for the sample at time_ns. */
static void learn_lag(struct py_intake *in, const struct ember_copier_record *r, uint64_t time_ns)
{
	int64_t d = (int64_t)(time_ns - r->time_ns);
	in->lag_ns = in->lag_taken++ ? in->lag_ns + (d - in->lag_ns) / 4 : d;
}

/* Name the code objects of a record that woke ember, in the reader of its
 * process. */
static void learn_codes(struct ember_py_copier *st, const struct ember_copier_record *r)
{
	struct ember_python *py = NULL;
	for (size_t i = 0; i < st->nreaders && !py; i++)
		if ((uint32_t)st->readers[i]->pid == r->pid)
			py = st->readers[i];
	if (!py || r->code_len != py->rt.co_len)
		return;
	const uint8_t *q = r->data + r->ts_len;
	for (uint32_t i = 0; i < r->nframes + r->ncodes; i++) {
		uint64_t a = rd64(q, 0);
		if (a & EMBER_COPIER_CODE_TAG) {
			uint64_t before = py->code->created;
			py_code_from_record(py, r, a & ~EMBER_COPIER_CODE_TAG, q + 8, rd64(q + 8, (int32_t)r->code_len));
			st->in.learnt += py->code->created != before;
		}
		q += 8 + ember_copier_entry_bytes(r, a);
	}
}

/* Copy r aside for a later read (the oldest kept one goes). */
static void keep(struct py_intake *in, const struct ember_copier_record *r, size_t size)
{
	struct copier_kept *k = &in->recent[in->kept % COPIER_RECENT];
	if (k->cap < size) {
		void *p = realloc(k->rec, size);
		if (!p)
			return;
		k->rec = p;
		k->cap = size;
	}
	in->kept++;
	in->replaced += k->fresh;
	in->fresh += !k->fresh;
	memcpy(k->rec, r, size);
	k->fresh = true;
}

/* Consume the ring up to the record of sample w (NULL: all of it), which
 * is then handed out where it lies (in->held): the records before it are
 * learnt from and kept. */
static const struct ember_copier_record *consume(struct ember_py_copier *st, const struct want *w)
{
	struct py_intake *in = &st->in;
	uint32_t size;
	const struct ember_copier_record *r;
	while ((r = py_ring_peek(&in->ring, &size))) {
		if (!record_ok(r, size)) {
			py_ring_release(&in->ring);
			continue;
		}
		in->records++;
		in->woke += (r->flags & EMBER_COPIER_WOKE) != 0;
		if (is_sample(r, w)) {
			in->held = true;
			in->read_in_place++;
			return r;
		}
		if ((r->flags & EMBER_COPIER_WOKE) && r->ncodes)
			learn_codes(st, r);
		/* A thread not registered (tstate 0: not Python yet, or never,
		 * as a launcher's shell) has nothing copied to read later. */
		if (r->tstate)
			keep(in, r, size);
		py_ring_release(&in->ring);
	}
	return NULL;
}

/* The kept record of sample w (its time already moved by the lag): the
 * nearest of its thread's from before_ns before to after_ns after it, NULL
 * if none; *count: how many were in that window. */
static struct copier_kept *find_kept(struct py_intake *in, const struct want *w, uint64_t before_ns,
				     uint64_t after_ns, uint32_t *count)
{
	struct copier_kept *best = NULL;
	uint64_t best_d = 0;
	*count = 0;
	uint64_t n = in->kept < COPIER_RECENT ? in->kept : COPIER_RECENT;
	for (uint64_t i = 1; i <= n && in->fresh; i++) {
		struct copier_kept *k = &in->recent[(in->kept - i) % COPIER_RECENT];
		uint64_t t = k->rec->time_ns;
		if (t + SCAN_BACK_NS < w->time_ns)
			break;   /* older than any record of this sample */
		if (!k->fresh || k->rec->tid != w->tid || k->rec->pid != w->pid || t + before_ns < w->time_ns ||
		    t > w->time_ns + after_ns)
			continue;
		++*count;
		uint64_t d = t > w->time_ns ? t - w->time_ns : w->time_ns - t;
		if (!best || d < best_d) {   /* two samples of a thread can be tens of us apart */
			best = k;
			best_d = d;
		}
	}
	return best;
}

const struct ember_copier_record *py_copier_take(struct ember_python *py, uint32_t tid, uint64_t time_ns)
{
	struct ember_py_copier *st = py->cp->copier;
	if (!st)
		return NULL;
	struct py_intake *in = &st->in;
	struct want w = { .pid = (uint32_t)py->pid, .tid = tid, .time_ns = time_ns - (uint64_t)in->lag_ns };
	/* Copied aside already (its CPU's ring drained after another's)?
	 * Else consume up to it: it is read where it lies. */
	uint32_t count;
	struct copier_kept *best = find_kept(in, &w, MATCH_NOW_NS, MATCH_NOW_NS, &count);
	if (!best) {
		const struct ember_copier_record *r = consume(st, &w);
		if (r) {
			learn_lag(in, r, time_ns);
			return r;
		}
		best = find_kept(in, &w, MATCH_BEFORE_NS, MATCH_AFTER_NS, &count);
	}
	struct want raw = { .pid = w.pid, .tid = tid, .time_ns = time_ns };
	if (!best && (best = find_kept(in, &raw, MATCH_WIDE_NS, MATCH_AFTER_NS, &count)) && count > 1)
		best = NULL;   /* (which of them is this sample's cannot be told) */
	if (!best)
		return NULL;
	learn_lag(in, best->rec, time_ns);
	best->fresh = false;
	in->fresh--;
	in->read_kept++;
	return best->rec;
}

void py_copier_done(struct ember_python *py)
{
	struct ember_py_copier *st = py->cp->copier;
	if (st && st->in.held) {
		/* The records behind it belong to later samples, read in place
		 * in their turn rather than copied aside now. */
		py_ring_release(&st->in.ring);
		st->in.held = false;
	}
}

void py_intake_drain(struct ember_py_copier *st)
{
	if (st->in.held) {
		py_ring_release(&st->in.ring);
		st->in.held = false;
	}
	consume(st, NULL);
}

void py_intake_free(struct ember_py_copier *st)
{
	py_ring_close(&st->in.ring);
	for (int i = 0; i < COPIER_RECENT; i++)
		free(st->in.recent[i].rec);
}
