/* One read of a thread's Python frames: its thread state through the
 * snapshot (or the record the copier made at the sample), checked to be
 * still that thread's, then the walk; a stale state rescans the thread
 * table, a torn walk is read again. */
#include <errno.h>

#include "clock.h"
#include "copier_record.h"
#include "py_read.h"

#define SCAN_INTERVAL_NS 20000000ull   /* rescan at most every 20 ms on a miss */
#define TID_RECHECK_NS 1000000000ull   /* <= 3.10, frames copied at the sample: check the TID in
                                        * struct pthread at most this often (a live read, 10-35 us
                                        * after ember slept: at 100 ms, most of the mean read at
                                        * 99 Hz; the copy is found by the sampled TID, and a thread
                                        * state taken over by another thread shows in its copied
                                        * thread_id at every read) */
#define TORN_RETRIES 2

/* Whether rec holds t's frames in the layout this reader reads. */
static bool record_fits(const struct ember_python *py, const struct py_thread *t, const struct ember_copier_record *rec)
{
	return rec && rec->tstate == t->tstate && rec->frame_len == py->rt.fr_len && rec->code_len == py->rt.co_len;
}

/* Whether the thread state's bytes ts are still t's (glibc reuses a dead
 * thread's struct pthread, and CPython may then reuse its thread state). */
static bool still_this_thread(struct ember_python *py, struct py_thread *t, const uint8_t *ts, bool seeded)
{
	const struct py_offsets *o = &py->rt.off;
	if (rd64(ts, o->ts_interp) != t->interp || rd64(ts, o->ts_thread_id) != t->pthread)
		return false;
	if (o->ts_native_thread_id >= 0)
		return (uint32_t)rd64(ts, o->ts_native_thread_id) == t->own_tid;
	if (py->th->pthread_tid_off < 0 || (seeded && py->code->now_ns - t->tid_checked_ns <= TID_RECHECK_NS))
		return true;
	/* The TID tells.  A copy made at the sample was found by the sampled
	 * TID, so it is checked only now and then. */
	const uint8_t *p = snap_get(py, t->pthread + py->th->pthread_tid_off, 4);
	if (p && (uint32_t)rd32(p, 0) == t->own_tid) {
		t->tid_checked_ns = py->code->now_ns;
		return true;
	}
	return seeded && snap_gone(py);   /* (exited since the sample: nothing to check) */
}

static int read_once(struct ember_python *py, struct py_thread *t, const struct ember_copier_record *rec,
		     struct ember_py_frame *out, int max, uint32_t *flags, bool *stale)
{
	*stale = false;
	snap_begin(py, t->plan);
	/* Frames copied at the sample: their bytes, their code objects' headers
	 * and the thread state's, in place of what is read now. */
	bool seed = record_fits(py, t, rec);
	if (seed) {
		snap_use_record(py, rec);
		py_strings_source(py, rec);
	}
	const uint8_t *ts = snap_get(py, t->tstate, py->rt.ts_len);
	if (!ts) {
		*stale = !snap_gone(py);
		return snap_gone(py) ? -ESRCH : 0;
	}
	if (!still_this_thread(py, t, ts, seed)) {
		*stale = true;
		return 0;
	}
	int n = py_walk(py, t->tstate, t->interp, ts, seed ? rec : NULL, out, max, flags);
	/* The process exited after the sample, before ember drained it (the
	 * last tens of milliseconds of every run): frames copied at the
	 * sample still stand, named from the code cache; a live read has
	 * nothing to read. */
	if (snap_gone(py) && !seed)
		return -ESRCH;
	snap_end(py, &t->plan);
	return n;
}

/* One read with a rescan when tid is unknown or its state stale.  *quit:
 * the read is over (no such thread, -ESRCH), flags and all. */
static int read_fresh(struct ember_python *py, uint32_t tid, const struct ember_copier_record *rec,
		      struct ember_py_frame *out, int max, uint32_t *fl, bool *quit)
{
	*quit = true;
	for (int attempt = 0; attempt < 2; attempt++) {
		struct py_thread *t = py_thread_find(py, tid);
		if (!t) {
			if (attempt == 1 || ember_now_ns() - py->th->last_scan_ns < SCAN_INTERVAL_NS)
				return 0;
			int rc = py_scan_threads(py);
			if (rc == -ESRCH)
				return rc;
			if (!(t = py_thread_find(py, tid)))
				return 0;
		}
		bool stale;
		*fl = 0;
		int n = read_once(py, t, rec, out, max, fl, &stale);
		py_strings_source(py, NULL);   /* on every way out of read_once: the record is not ours to keep */
		if (n < 0)
			return n;
		if (!stale) {
			if (record_fits(py, t, rec))
				*fl |= EMBER_PY_AT_SAMPLE;
			*quit = false;
			return n;
		}
		/* thread state freed/reused: rescan once, immediately */
		t->tstate = 0;
		int rc = py_scan_threads(py);
		if (rc == -ESRCH)
			return rc;
	}
	*quit = false;
	return 0;
}

int py_read_copy(struct ember_python *py, uint32_t tid, const struct ember_copier_record *rec, uint64_t at_ns,
		 struct ember_py_frame *out, int max, uint32_t *flags)
{
	bool quit;
	*flags = 0;
	py->th->reads++;
	py_code_at(py, at_ns);
	py_frames_reset(py);
	int n = read_fresh(py, tid, rec, out, max, flags, &quit);
	/* Only the copy: what the thread does now is another instant's. */
	if (n <= 0 || !(*flags & EMBER_PY_AT_SAMPLE) || (*flags & EMBER_PY_TORN)) {
		*flags = 0;
		return n < 0 ? n : 0;
	}
	py->th->at_sample++;
	return n;
}

int py_read_thread(struct ember_python *py, uint32_t tid, const struct ember_copier_record *rec, uint64_t at_ns,
		   struct ember_py_frame *out, int max, uint32_t *flags)
{
	uint32_t fl = 0;
	int n = 0;
	bool quit;

	py->th->reads++;
	/* When code objects were last validated (code_recheck_ms, evidence
	 * lookups) and the TID checked: a record's bytes are of the sample's
	 * instant (and no clock read is needed); a live read's are of now. */
	py_code_at(py, rec && at_ns ? at_ns : ember_now_ns());
	py_frames_reset(py);
	*flags = 0;
	/* A torn read (a call or return happened while it ran) is retried: the
	 * retry's prefetch already has the new objects, so it is quick.  Frames
	 * copied at the sample are used by the first attempt only: torn there
	 * means the thread was between two states at the sample itself. */
	for (int torn_retry = 0; torn_retry < TORN_RETRIES + 1; torn_retry++) {
		n = read_fresh(py, tid, torn_retry == 0 ? rec : NULL, out, max, &fl, &quit);
		if (quit)
			return n;
		if (!(fl & EMBER_PY_TORN))
			break;
		py->th->torn_retries++;
	}
	py->th->torn += (fl & EMBER_PY_TORN) != 0;
	py->th->unreadable += (fl & EMBER_PY_UNREADABLE) != 0;
	py->th->at_sample += (fl & EMBER_PY_AT_SAMPLE) != 0;
	*flags = fl;
	return n;
}
