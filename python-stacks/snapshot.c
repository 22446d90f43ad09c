/* The per-read snapshot of remote objects: each read of a thread starts
 * with ONE process_vm_readv of what the thread's previous read used (its
 * plan, rebuilt only when that set changes), answers the walk's lookups
 * from it, and reads alone what it lacks.  A read with frames copied at
 * the sample answers from that record first, where it lies. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "py_internal.h"
#include "copier.h"

#define SNAP_BUF (2u << 20)             /* snapshot bytes per read */
#define COALESCE_GAP 2048              /* merge prefetch objects closer than this */
#define COALESCE_SPAN 32768            /* ... into ranges of at most this many bytes */

static inline uint32_t slot_of(uint64_t addr)
{
	return (uint32_t)((addr >> 3) * 0x9E3779B97F4A7C15ull >> 40) & (SNAP_SLOTS - 1);
}

struct snap_ent *snap_find(struct snap *s, uint64_t addr)
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

/* The buffer is allocated once and never moves, so pointers handed out by
 * snap_get stay valid for the whole read. */
static bool snap_alloc(struct snap *s)
{
	if (!s->buf) {
		s->buf = malloc(SNAP_BUF);
		s->cap = s->buf ? SNAP_BUF : 0;
	}
	return s->buf != NULL;
}

/* A new entry for addr; its bytes at off in the buffer. */
static struct snap_ent *snap_new(struct snap *s, uint64_t addr, uint32_t len, uint32_t off)
{
	if (s->n >= SNAP_MAX)
		return NULL;
	struct snap_ent *e = &s->e[s->n];
	e->addr = addr;
	e->len = len;
	e->off = off;
	e->ok = e->used = e->visited = e->fetched = false;
	uint32_t h = slot_of(addr);
	while (s->slot[h])
		h = (h + 1) & (SNAP_SLOTS - 1);
	e->slot = (uint16_t)h;
	s->slot[h] = (uint16_t)++s->n;
	return e;
}

static struct snap_ent *snap_add(struct snap *s, uint64_t addr, uint32_t len)
{
	if (s->n >= SNAP_MAX || !snap_alloc(s) || s->used + len > s->cap)
		return NULL;
	struct snap_ent *e = snap_new(s, addr, len, (uint32_t)s->used);
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
void snap_begin(struct ember_python *py, struct py_thread *t)
{
	struct snap *s = py->snap;
	struct rm_req req[PY_PREF_MAX];
	uint32_t first_ent[PY_PREF_MAX + 1];
	int err = 0;

	for (uint32_t i = 0; i < s->n; i++)   /* cheaper than clearing every slot */
		s->slot[s->e[i].slot] = 0;
	s->n = 0;
	s->memo_id = 0;
	s->rec = NULL;
	s->used = 0;
	s->gone = false;
	py->prefetch_only = true;
	const struct py_plan *pl = t ? t->plan : NULL;
	if (!pl || !pl->nranges || !snap_alloc(s))
		return;
	for (uint32_t r = 0; r < pl->nranges; r++) {
		const struct py_plan_range *g = &pl->range[r];
		req[r] = (struct rm_req){ .addr = g->addr, .buf = s->buf + g->off, .len = g->len };
		first_ent[r] = s->n;
		for (uint32_t i = g->first; i < pl->range[r + 1].first; i++) {
			const struct py_pref *o = &pl->sorted[i];
			if (!snap_find(s, o->addr))
				snap_new(s, o->addr, o->len, (uint32_t)(g->off + (o->addr - g->addr)));
		}
	}
	first_ent[pl->nranges] = s->n;
	s->used = pl->used;
	rm_readv(py->pid, req, pl->nranges, &err, &py->st.syscalls);
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
void snap_use_record(struct snap *s, const struct ember_copier_record *rec, uint32_t ts_len)
{
	s->rec = rec;
	s->rec_ts = rec->ts_len == ts_len;
	s->rec_cur = rec->data + rec->ts_len;
	s->rec_end = s->rec_cur + ember_copier_frames_bytes(rec);
	s->rec_seen = 0;
	s->rec_nframes = 0;
}

/* The bytes of the object at addr in the record, or NULL.  The walk asks
 * for frames and code objects in the order the copier wrote them, so the
 * entry at the cursor is nearly always the one, or the one after code
 * headers the walk had no use for (3.12+ skips a C-stack shim frame
 * without looking at its code); else the record is searched (a code object
 * copied earlier, an object asked for twice).  A frame handed out twice (a
 * cycle, in garbage) comes back marked visited. */
static const uint8_t *rec_get(struct snap *s, uint64_t addr, uint32_t len, struct snap_ent **ent)
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
			*e = (struct snap_ent){ .addr = addr, .len = elen, .ok = true, .used = true, .fetched = true };
			if (!(a & EMBER_COPIER_CODE_TAG)) {
				uint64_t bit = 1ull << ((addr >> 3) * 0x9E3779B97F4A7C15ull >> 58);
				if (s->rec_seen & bit)   /* perhaps handed out before: look */
					for (uint32_t i = 0; i < s->rec_nframes && !e->visited; i++)
						e->visited = s->rec_frames[i] == addr;
				else
					s->rec_seen |= bit;
				if (!e->visited && s->rec_nframes < SNAP_REC_FRAMES)
					s->rec_frames[s->rec_nframes++] = addr;
				else if (!e->visited)
					e->visited = true;   /* more frames than any record holds: garbage */
			}
			if (ent)
				*ent = e;
			return q + 8;
		}
	}
	return NULL;
}

const uint8_t *snap_get_ent(struct ember_python *py, uint64_t addr, uint32_t len, struct snap_ent **ent)
{
	struct snap *s = py->snap;
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
			py->st.prefetch_hits++;
		e->used = true;
		if (ent)
			*ent = e;
		return s->buf + e->off;
	}
	if (!rm_ptr_ok(addr, 1))
		return NULL;
	py->st.single_reads++;
	py->prefetch_only = false;
	if (e && e->len >= len) {
		/* prefetched range failed: read this object alone into its slot */
		e->used = e->fetched = true;
		e->ok = rm_read(py->pid, addr, s->buf + e->off, e->len, &err, &py->st.syscalls);
		if (err == ESRCH)
			s->gone = true;
		if (ent && e->ok)
			*ent = e;
		return e->ok ? s->buf + e->off : NULL;
	}
	if (!e)
		e = snap_add(s, addr, len);
	if (!e || e->len < len) {
		/* table full (very deep stack) or a longer read of a known address */
		uint8_t *b = s->scratch[s->flip++ & 3];
		if (len > sizeof s->scratch[0] || !rm_read(py->pid, addr, b, len, &err, &py->st.syscalls)) {
			if (err == ESRCH)
				s->gone = true;
			return NULL;
		}
		return b;
	}
	e->used = e->fetched = true;
	e->ok = rm_read(py->pid, addr, s->buf + e->off, len, &err, &py->st.syscalls);
	if (err == ESRCH)
		s->gone = true;
	if (ent && e->ok)
		*ent = e;
	return e->ok ? s->buf + e->off : NULL;
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
void snap_end(struct ember_python *py, struct py_thread *t)
{
	struct snap *s = py->snap;
	if (!t->plan) {
		t->plan = calloc(1, sizeof *t->plan);
		if (!t->plan)
			return;
	}
	struct py_plan *pl = t->plan;
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
