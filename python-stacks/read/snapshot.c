/* The per-read snapshot of remote objects: each read of a thread starts
 * with ONE process_vm_readv of what the thread's previous read used (its
 * plan, rebuilt only when that set changes), answers the walk's lookups
 * from it, and reads alone what it lacks.  A read with frames copied at
 * the sample answers from that record first, where it lies.
 *
 * Its objects are found by address through an index of its own, not
 * ember_idtab: a fixed table of 2-byte slots (4 KB, a few dozen of them
 * used), where a lookup is one probe into a line likely in cache, and a
 * read forgets its objects by clearing their slots.  The id table's
 * 8-byte slots, equality callback and removals cost a tenth of a read
 * here (1.8 -> 2.0 us for 21 frames on 3.11, bench/py_read_bench.c): this
 * runs at every sample. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "copier_record.h"
#include "hash.h"
#include "py_read.h"

#define SNAP_BUF (2u << 20)            /* snapshot bytes per read */
#define SNAP_MAX 1024                  /* objects per read in the table */
#define SNAP_SLOTS 2048                /* its slots: a power of two, twice SNAP_MAX */
#define SNAP_REC_FRAMES 256            /* > the frames of a record (EMBER_COPIER_MAX_FRAMES) */
#define COALESCE_GAP 2048              /* merge prefetch objects closer than this */
#define COALESCE_SPAN 32768            /* ... into ranges of at most this many bytes */
#define DEEP_WIN (64u << 10)           /* a window of a walk past the table: bytes, */
#define DEEP_WINS 2                    /* ... and how many (frames, their code objects) */

#define PY_PREF_MAX 512          /* remote objects prefetched per thread read */
/* What one thread's next read prefetches: the objects its last read used, in the order the walk
 * met them (to notice a change cheaply), and, built only when that set
 * changes, the same objects sorted and merged into the ranges of the one
 * process_vm_readv. */
struct py_pref {
	uint64_t addr;
	uint32_t len;
};
struct py_plan_range {
	uint64_t addr;
	uint32_t len, off;                 /* bytes; offset in the snapshot buffer */
	uint32_t first;                    /* its objects: sorted[first .. next range's first) */
};
struct py_plan {
	uint32_t npref, nranges;
	size_t used;                       /* snapshot buffer bytes the ranges take */
	struct py_pref pref[PY_PREF_MAX];  /* discovery order */
	struct py_pref sorted[PY_PREF_MAX];
	struct py_plan_range range[PY_PREF_MAX + 1];
};

struct py_snapshot {
	struct snap_ent e[SNAP_MAX];
	uint16_t slot[SNAP_SLOTS];  /* address -> index in e + 1 (0: empty) */
	uint32_t n;
	uint8_t *buf;               /* allocated once, never moved: what snap_get hands out
	                             * stays valid for the whole read */
	size_t cap, used;
	uint8_t scratch[4][512];    /* overflow reads when e[] is full (rotating) */
	/* A walk deeper than the table (thousands of frames): its objects
	 * come from windows of the target's memory read whole, the frames of
	 * one data-stack chunk (or heap run) a window, not a call each. */
	struct deep_win {
		uint64_t lo, hi;            /* the bytes held: [lo, hi) (empty: lo == hi) */
		uint8_t *buf;
	} win[DEEP_WINS];
	unsigned win_last;          /* the window used last */
	unsigned flip;
	bool gone;                  /* ESRCH seen */
	bool prefetch_only;         /* this read so far came from its one batched prefetch */
	uint64_t prefetch_hits, single_reads;
	/* Frames copied at the sample (NULL: none), used where they lie: the
	 * walk asks for them in the record's order, so a cursor finds them. */
	const struct ember_copier_record *rec;
	const uint8_t *rec_cur, *rec_end;  /* the next entry, the end of the entries */
	bool rec_ts;                /* it holds the thread state's bytes */
	uint64_t rec_seen;          /* frames handed out from it, one bit per hash, */
	uint64_t rec_frames[SNAP_REC_FRAMES];   /* and their addresses */
	uint32_t rec_nframes;
	struct snap_ent rec_ent;    /* stands for the record entry just handed out */
};

struct py_snapshot *snap_new(void)
{
	return calloc(1, sizeof(struct py_snapshot));
}

void snap_free(struct py_snapshot *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < DEEP_WINS; i++)
		free(s->win[i].buf);
	free(s->buf);
	free(s);
}

/* The table's slot for an address: the golden-ratio product's high bits
 * (one multiply; every address bit counts). */
static inline uint32_t slot_of(uint64_t addr)
{
	return (uint32_t)((addr >> 3) * EMBER_HASH_GOLDEN >> 40) & (SNAP_SLOTS - 1);
}

static struct snap_ent *snap_find(struct py_snapshot *s, uint64_t addr)
{
	for (uint32_t h = slot_of(addr), k = 0; k < SNAP_SLOTS; h = (h + 1) & (SNAP_SLOTS - 1), k++) {
		uint16_t i = s->slot[h];
		if (!i)
			return NULL;
		if (s->e[i - 1].addr == addr)
			return &s->e[i - 1];
	}
	return NULL;
}

/* Forget the last read's objects: their slots only (cheaper than clearing
 * every one). */
static void snap_clear(struct py_snapshot *s)
{
	for (uint32_t i = 0; i < s->n; i++)
		s->slot[s->e[i].slot] = 0;
	s->n = 0;
}

static bool snap_alloc(struct py_snapshot *s)
{
	if (!s->buf) {
		s->buf = malloc(SNAP_BUF);
		s->cap = s->buf ? SNAP_BUF : 0;
	}
	return s->buf != NULL;
}

/* A new entry for addr; its bytes at off in the buffer. */
static struct snap_ent *snap_new_ent(struct py_snapshot *s, uint64_t addr, uint32_t len, uint32_t off)
{
	if (s->n >= SNAP_MAX)
		return NULL;
	struct snap_ent *e = &s->e[s->n];
	*e = (struct snap_ent){ .addr = addr, .len = len, .off = off };
	uint32_t h = slot_of(addr);
	while (s->slot[h])
		h = (h + 1) & (SNAP_SLOTS - 1);
	e->slot = (uint16_t)h;
	s->slot[h] = (uint16_t)++s->n;
	return e;
}

static struct snap_ent *snap_add(struct py_snapshot *s, uint64_t addr, uint32_t len)
{
	if (s->n >= SNAP_MAX || !snap_alloc(s) || s->used + len > s->cap)
		return NULL;
	struct snap_ent *e = snap_new_ent(s, addr, len, (uint32_t)s->used);
	if (e)
		s->used += (len + 7) & ~7u;
	return e;
}

static int pref_cmp(const void *a, const void *b)
{
	const struct py_pref *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Prefetch what the previous read of this thread used, in ONE
 * process_vm_readv over the ranges of its plan (built by snap_end only when
 * that set of objects changed, so a steady stack costs no sorting here). */
void snap_begin(struct ember_python *py, const struct py_plan *pl)
{
	struct py_snapshot *s = py->snap;
	struct rm_req req[PY_PREF_MAX];
	uint32_t first_ent[PY_PREF_MAX + 1];
	int err = 0;

	snap_clear(s);
	s->rec = NULL;
	for (unsigned i = 0; i < DEEP_WINS; i++)   /* another instant: nothing held stays */
		s->win[i].lo = s->win[i].hi = 0;
	s->used = 0;
	s->gone = false;
	s->prefetch_only = true;
	if (!pl || !pl->nranges || !snap_alloc(s))
		return;
	for (uint32_t r = 0; r < pl->nranges; r++) {
		const struct py_plan_range *g = &pl->range[r];
		req[r] = (struct rm_req){ .addr = g->addr, .buf = s->buf + g->off, .len = g->len };
		first_ent[r] = s->n;
		for (uint32_t i = g->first; i < pl->range[r + 1].first; i++) {
			const struct py_pref *o = &pl->sorted[i];
			if (!snap_find(s, o->addr))
				snap_new_ent(s, o->addr, o->len, (uint32_t)(g->off + (o->addr - g->addr)));
		}
	}
	first_ent[pl->nranges] = s->n;
	s->used = pl->used;
	rm_readv(py->pid, req, pl->nranges, &err, &py->syscalls);
	if (err == ESRCH)
		s->gone = true;
	/* entries of ranges that failed stay unfetched: snap_get reads them alone */
	for (uint32_t r = 0; r < pl->nranges; r++)
		for (uint32_t k = first_ent[r]; k < first_ent[r + 1]; k++)
			s->e[k].fetched = s->e[k].ok = req[r].ok;
}

const uint8_t *snap_get(struct ember_python *py, uint64_t addr, uint32_t len)
{
	return snap_get_ent(py, addr, len, NULL);
}

/* This read's frames come from rec (copied at the sample; its sizes were
 * checked when it arrived): the thread state's bytes when it has all
 * ts_len of them, and its entries, found by rec_get. */
void snap_use_record(struct ember_python *py, const struct ember_copier_record *rec)
{
	struct py_snapshot *s = py->snap;
	s->rec = rec;
	s->rec_ts = rec->ts_len == py->rt.ts_len;
	s->rec_cur = rec->data + rec->ts_len;
	s->rec_end = s->rec_cur + ember_copier_frames_bytes(rec);
	s->rec_seen = 0;
	s->rec_nframes = 0;
}

/* Whether the frame at addr was handed out from the record before (a
 * cycle, in garbage); else remembers it. */
static bool rec_seen_before(struct py_snapshot *s, uint64_t addr)
{
	uint64_t bit = 1ull << ((addr >> 3) * EMBER_HASH_GOLDEN >> 58);
	bool seen = false;
	if (s->rec_seen & bit)   /* perhaps handed out before: look */
		for (uint32_t i = 0; i < s->rec_nframes && !seen; i++)
			seen = s->rec_frames[i] == addr;
	else
		s->rec_seen |= bit;
	if (!seen && s->rec_nframes < SNAP_REC_FRAMES)
		s->rec_frames[s->rec_nframes++] = addr;
	else if (!seen)
		seen = true;   /* more frames than any record holds: garbage */
	return seen;
}

/* The bytes of the object at addr in the record, or NULL.  The walk asks
 * for frames and code objects in the order the copier wrote them, so the
 * entry at the cursor is nearly always the one, or the one after code
 * headers the walk had no use for (3.12+ skips a C-stack shim frame
 * without looking at its code); else the record is searched (a code object
 * copied earlier, an object asked for twice).  A frame handed out twice (a
 * cycle, in garbage) comes back marked visited. */
static const uint8_t *rec_get(struct py_snapshot *s, uint64_t addr, uint32_t len, struct snap_ent **ent)
{
	const struct ember_copier_record *r = s->rec;
	const uint8_t *first = r->data + r->ts_len, *q = s->rec_cur;
	if (addr == r->tstate)
		return s->rec_ts && len <= r->ts_len ? r->data : NULL;
	for (int scan = 0; scan < 2; scan++, q = first) {
		for (uint32_t elen; q + 8 <= s->rec_end; q += 8 + elen) {
			uint64_t a = rd64(q, 0);
			elen = ember_copier_entry_bytes(r, a);
			if ((a & ~EMBER_COPIER_CODE_TAG) != addr) {
				if (!scan && !(a & EMBER_COPIER_CODE_TAG))
					break;   /* not at the cursor: search from the start */
				continue;
			}
			if (elen < len)
				return NULL;
			s->rec_cur = q + 8 + elen;
			struct snap_ent *e = &s->rec_ent;
			*e = (struct snap_ent){ .addr = addr, .len = elen, .ok = true, .used = true, .fetched = true,
						.copied = true };
			if (!(a & EMBER_COPIER_CODE_TAG))
				e->visited = rec_seen_before(s, addr);
			if (ent)
				*ent = e;
			return q + 8;
		}
	}
	return NULL;
}

/* Read the object alone into its entry (its range failed, or it is new). */
static const uint8_t *read_alone(struct ember_python *py, struct snap_ent *e, uint32_t len, struct snap_ent **ent)
{
	struct py_snapshot *s = py->snap;
	int err = 0;
	e->used = e->fetched = true;
	e->ok = rm_read(py->pid, e->addr, s->buf + e->off, len, &err, &py->syscalls);
	if (err == ESRCH)
		s->gone = true;
	if (ent && e->ok)
		*ent = e;
	return e->ok ? s->buf + e->off : NULL;
}

/* addr's len bytes from a deep walk's window: one that holds them, else
 * the one used less recently, read again to end just past them (a walk
 * outward goes down in memory: 3.11+ frames down their data-stack chunk,
 * older frame objects to those allocated before); when its low end is not
 * mapped, from the object's own page up.  NULL when neither can be read:
 * the object is then read alone. */
static const uint8_t *deep_get(struct ember_python *py, uint64_t addr, uint32_t len)
{
	struct py_snapshot *s = py->snap;
	for (unsigned i = 0; i < DEEP_WINS; i++) {
		struct deep_win *w = &s->win[i];
		if (addr >= w->lo && addr + len <= w->hi) {
			s->win_last = i;
			return w->buf + (addr - w->lo);
		}
	}
	unsigned i = (s->win_last + 1) % DEEP_WINS;
	struct deep_win *w = &s->win[i];
	if (!w->buf && !(w->buf = malloc(DEEP_WIN)))
		return NULL;
	uint64_t hi = (addr + len + 4095) & ~4095ull, lo = hi > DEEP_WIN ? hi - DEEP_WIN : 0;
	int err = 0;
	w->lo = w->hi = 0;
	if (!rm_read(py->pid, lo, w->buf, (size_t)(hi - lo), &err, &py->syscalls)) {
		lo = addr & ~4095ull;
		if (err == ESRCH || !rm_read(py->pid, lo, w->buf, (size_t)(hi - lo), &err, &py->syscalls)) {
			s->gone = s->gone || err == ESRCH;
			return NULL;
		}
	}
	w->lo = lo;
	w->hi = hi;
	s->win_last = i;
	return w->buf + (addr - lo);
}

void snap_deep(struct ember_python *py)
{
	py->snap->rec = NULL;
}

const uint8_t *snap_get_ent(struct ember_python *py, uint64_t addr, uint32_t len, struct snap_ent **ent)
{
	struct py_snapshot *s = py->snap;
	int err = 0;

	if (ent)   /* the entry as found or added below (none: a scratch read) */
		*ent = NULL;
	if (s->rec) {
		const uint8_t *p = rec_get(s, addr, len, ent);
		if (p)
			return p;
	}
	struct snap_ent *e = snap_find(s, addr);
	if (e && e->len >= len && e->fetched) {
		if (!e->ok)
			return NULL;
		if (!e->used)
			s->prefetch_hits++;
		e->used = true;
		if (ent)
			*ent = e;
		return s->buf + e->off;
	}
	if (!rm_ptr_ok(addr, 1))
		return NULL;
	s->single_reads++;
	s->prefetch_only = false;
	if (e && e->len >= len)   /* prefetched range failed: read this object alone into its slot */
		return read_alone(py, e, e->len, ent);
	if (!e)
		e = snap_add(s, addr, len);
	if (!e && s->n >= SNAP_MAX && len <= DEEP_WIN / 4) {
		const uint8_t *w = deep_get(py, addr, len);
		if (w)
			return w;
	}
	if (!e || e->len < len) {
		/* table full (very deep stack) or a longer read of a known address */
		uint8_t *b = s->scratch[s->flip++ & 3];
		if (len > sizeof s->scratch[0] || !rm_read(py->pid, addr, b, len, &err, &py->syscalls)) {
			if (err == ESRCH)
				s->gone = true;
			return NULL;
		}
		return b;
	}
	return read_alone(py, e, len, ent);
}

/* Sort the plan's objects and merge neighbours into ranges.  The kernel's
 * cost is mostly per remote iovec, so nearby objects (frames in one
 * data-stack chunk, code objects of one module, the GIL struct inside the
 * interpreter) share one range when the gap between them is small.  At most
 * half the snapshot buffer goes to the prefetch; the walk gets the rest. */
static void plan_build(struct py_plan *pl)
{
	struct py_pref *p = pl->sorted;
	uint32_t nr = 0, all;
	size_t used = 0;

	memcpy(p, pl->pref, pl->npref * sizeof *p);
	qsort(p, pl->npref, sizeof *p, pref_cmp);
	for (uint32_t i = 0; i < pl->npref; i++) {
		uint64_t a = p[i].addr, end = a + p[i].len;
		struct py_plan_range *last = nr ? &pl->range[nr - 1] : NULL;
		if (last && a <= last->addr + last->len + COALESCE_GAP && end - last->addr <= COALESCE_SPAN) {
			if (end > last->addr + last->len)
				last->len = (uint32_t)(end - last->addr);
			continue;
		}
		pl->range[nr++] = (struct py_plan_range){ .addr = a, .len = p[i].len, .first = i };
	}
	all = nr;
	for (uint32_t r = 0; r < nr; r++) {
		size_t sz = (pl->range[r].len + 7) & ~7u;
		if (used + sz > SNAP_BUF / 2) {
			nr = r;
			break;
		}
		pl->range[r].off = (uint32_t)used;
		used += sz;
	}
	if (nr == all)   /* else range[nr] is the first one left out, and ends the last */
		pl->range[nr].first = pl->npref;
	pl->nranges = nr;
	pl->used = used;
}

/* Next read of this thread prefetches what this one used. */
void snap_end(struct ember_python *py, struct py_plan **plan)
{
	struct py_snapshot *s = py->snap;
	if (!*plan && !(*plan = calloc(1, sizeof **plan)))
		return;
	struct py_plan *pl = *plan;
	uint32_t n = 0;
	bool same = true;
	for (uint32_t i = 0; i < s->n && n < PY_PREF_MAX; i++) {
		const struct snap_ent *e = &s->e[i];
		if (!e->used || !e->ok)
			continue;
		if (same && (n >= pl->npref || pl->pref[n].addr != e->addr || pl->pref[n].len != e->len))
			same = false;
		pl->pref[n++] = (struct py_pref){ e->addr, e->len };
	}
	if (same && n == pl->npref && (pl->nranges || !n))
		return;   /* the common case: the same objects as last time (or none) */
	pl->npref = n;
	plan_build(pl);
}

void snap_plan_reset(struct py_plan *plan)
{
	if (plan)
		plan->npref = plan->nranges = 0;
}

bool snap_read_now(struct ember_python *py, struct rm_req *reqs, size_t n)
{
	int err = 0;
	bool ok = rm_readv(py->pid, reqs, n, &err, &py->syscalls) == n;
	if (!ok && err == ESRCH)
		py->snap->gone = true;
	return ok;
}

bool snap_prefetch_only(const struct ember_python *py)
{
	return py->snap->prefetch_only;
}

bool snap_gone(const struct ember_python *py)
{
	return py->snap->gone;
}

void snap_counts(const struct ember_python *py, uint64_t *prefetch_hits, uint64_t *single_reads)
{
	*prefetch_hits = py->snap->prefetch_hits;
	*single_reads = py->snap->single_reads;
}

bool snap_record_obj(const struct ember_copier_record *r, uint64_t addr, void *buf, size_t len)
{
	const uint8_t *first = r->data + r->ts_len + ember_copier_frames_bytes(r);
	/* A line table's rest is an entry of its own, right after its start:
	 * a read may take bytes from both. */
	while (len) {
		const uint8_t *q = first, *found = NULL;
		__u64 n = 0;
		uint64_t at = 0;
		for (uint32_t i = 0; i < r->nobjs && !found; i++) {
			const uint8_t *b = ember_copier_obj_bytes(q, &n);
			at = rd64(q, 0) & ~EMBER_COPIER_TAGS;
			if (addr >= at && addr - at < n)
				found = b;
			q = b + n;
		}
		if (!found)
			return false;
		size_t take = n - (addr - at) < len ? (size_t)(n - (addr - at)) : len;
		memcpy(buf, found + (addr - at), take);
		buf = (uint8_t *)buf + take;
		addr += take;
		len -= take;
	}
	return true;
}
