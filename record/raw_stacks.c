/* Capture-side aggregation: identical address stacks of one thread are
 * counted once.  This is all the hot path stores per sample — a hash lookup
 * and, for a new stack, a copy of its addresses. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "varint.h"
#include "hash.h"
#include "idtab.h"
#include "raw_stacks.h"

struct raw_entry {
	uint32_t pid, tid, flags;
	uint32_t nframes, nkernel, npy, pyflags;
	uint32_t peer_tid;            /* with EMBER_PY_PEER: whose Python frames they are */
	size_t frames_off;            /* into rs->frames */
	size_t kernel_off;            /* into rs->kips */
	size_t py_off;                /* into rs->py */
	uint64_t count;               /* their weight */
	uint64_t samples;             /* samples (and off-CPU intervals) counted */
};

/* A stored sequence: native frames (in rs->frames) or Python frames (in
 * rs->py). */
enum seq_kind { SEQ_NATIVE, SEQ_PY };
struct raw_seq {
	size_t off;
	uint32_t n, kind;
};

struct raw_stacks {
	struct raw_entry *entries;
	size_t nentries, entries_cap;
	struct ember_idtab index;     /* entries by their key */
	struct ember_frame_addr *frames;
	size_t nframes, frames_cap;
	uint64_t *kips;
	size_t nkips, kips_cap;
	struct ember_py_frame *py;
	size_t npy, py_cap;
	/* Each distinct frame sequence is stored once: stacks that differ only
	 * in their thread, their leaf's kernel part or their Python lines share
	 * the copy of the rest (a long run keeps finding new combinations). */
	struct raw_seq *seqs;
	size_t nseqs, seqs_cap;
	struct ember_idtab seq_index;
	uint64_t samples;
	/* Every sample in arrival order, for timeline views: the change of
	 * its time from the previous sample's (zigzag: rings of different CPUs
	 * interleave, so it can go back) and its entry, as two varints — 4 to
	 * 6 bytes a sample at usual rates, where a struct takes 16; capped so
	 * a day-long run cannot eat the machine. */
	uint8_t *timeline;
	size_t timeline_len, timeline_cap, ntimeline;
	uint64_t timeline_last_ns;
	bool timeline_full;
};

#define TIMELINE_MAX (4u << 20)

/* Flags that change what the stack means; the others are per-sample noise. */
#define KEY_FLAGS (EMBER_SAMPLE_TRUNCATED | EMBER_SAMPLE_OFF_CPU | EMBER_SAMPLE_UNWIND_ERROR)
/* Python read flags that change how the stack is merged. */
#define PY_KEY_FLAGS (EMBER_PY_TORN | EMBER_PY_TRUNCATED | EMBER_PY_UNREADABLE | EMBER_PY_PEER | EMBER_PY_CUT)

/* A sample and the Python frames read for it, as one key. */
struct sample_key {
	const struct ember_sample *s;
	const struct ember_py_frame *py;
	uint32_t npy, pyflags, peer_tid;
};

static uint64_t hash_sample(const struct sample_key *k)
{
	const struct ember_sample *s = k->s;
	uint64_t h = ember_hash_pair(ember_hash_pair(s->pid, s->tid),
				     (s->flags & KEY_FLAGS) | (uint64_t)s->nframes << 8 | (uint64_t)k->npy << 24 |
				     ((uint64_t)k->pyflags << 48 ^ (uint64_t)k->peer_tid << 32));
	/* the frames by the cheap step, mixed once at the end: this runs for
	 * every sample over every frame */
	for (uint32_t i = 0; i < s->nframes; i++)
		h = ember_hash_step(h, s->frames[i].addr ^ ((uint64_t)s->frames[i].module << 44) ^
				       ((uint64_t)s->frames[i].flags << 40));
	for (uint32_t i = 0; i < s->nkernel; i++)
		h = ember_hash_step(h, s->kernel_ips[i]);
	for (uint32_t i = 0; i < k->npy; i++)
		h = ember_hash_step(h, (uint64_t)k->py[i].code << 33 | (uint64_t)k->py[i].line << 1 |
				       k->py[i].activation_start);
	return ember_hash_mix(h);
}

static bool same_py(const struct ember_py_frame *a, const struct ember_py_frame *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i].code != b[i].code || a[i].line != b[i].line || a[i].activation_start != b[i].activation_start ||
		    a[i].cut != b[i].cut || (a[i].cut && (a[i].cut_spans != b[i].cut_spans || a[i].cut_runs != b[i].cut_runs)))
			return false;
	return true;
}

static bool same(const void *ctx, uint32_t id, const void *key)
{
	const struct raw_stacks *rs = ctx;
	const struct raw_entry *e = &rs->entries[id];
	const struct sample_key *k = key;
	const struct ember_sample *s = k->s;
	return e->pid == s->pid && e->tid == s->tid &&
	       e->flags == (s->flags & KEY_FLAGS) && e->nframes == s->nframes && e->nkernel == s->nkernel &&
	       e->npy == k->npy && e->pyflags == k->pyflags && e->peer_tid == k->peer_tid &&
	       memcmp(rs->frames + e->frames_off, s->frames, s->nframes * sizeof *s->frames) == 0 &&
	       (!s->nkernel || memcmp(rs->kips + e->kernel_off, s->kernel_ips, s->nkernel * sizeof *s->kernel_ips) == 0) &&
	       same_py(rs->py + e->py_off, k->py, k->npy);
}

/* A sequence being looked up: kind and the caller's items. */
struct seq_key {
	uint32_t kind, n;
	const void *items;
};

static uint64_t hash_seq(const struct seq_key *k)
{
	uint64_t h = ember_hash_pair(k->kind, k->n);
	for (uint32_t i = 0; i < k->n; i++) {
		if (k->kind == SEQ_NATIVE) {
			const struct ember_frame_addr *f = (const struct ember_frame_addr *)k->items + i;
			h = ember_hash_step(h, f->addr ^ ((uint64_t)f->module << 44) ^ ((uint64_t)f->flags << 40));
		} else {
			const struct ember_py_frame *f = (const struct ember_py_frame *)k->items + i;
			h = ember_hash_step(h, (uint64_t)f->code << 33 | (uint64_t)f->line << 1 | f->activation_start);
		}
	}
	return ember_hash_mix(h);
}

static bool same_seq(const void *ctx, uint32_t id, const void *key)
{
	const struct raw_stacks *rs = ctx;
	const struct raw_seq *q = &rs->seqs[id];
	const struct seq_key *k = key;
	if (q->kind != k->kind || q->n != k->n)
		return false;
	if (k->kind == SEQ_NATIVE)
		return memcmp(rs->frames + q->off, k->items, k->n * sizeof *rs->frames) == 0;
	return same_py(rs->py + q->off, k->items, k->n);
}

/* Where the sequence's one copy starts (stored now if it is new), or
 * SIZE_MAX on OOM. */
static size_t intern_seq(struct raw_stacks *rs, enum seq_kind kind, const void *items, uint32_t n)
{
	if (n == 0)
		return 0;
	struct seq_key k = { kind, n, items };
	uint64_t h = hash_seq(&k);
	uint32_t id = ember_idtab_find(&rs->seq_index, h, same_seq, rs, &k);
	if (id != UINT32_MAX)
		return rs->seqs[id].off;
	size_t off = kind == SEQ_NATIVE ? rs->nframes : rs->npy;
	if (rs->nseqs >= UINT32_MAX || EMBER_GROW(rs->seqs, rs->seqs_cap, rs->nseqs + 1) != 0 ||
	    (kind == SEQ_NATIVE ? EMBER_GROW(rs->frames, rs->frames_cap, rs->nframes + n)
				: EMBER_GROW(rs->py, rs->py_cap, rs->npy + n)) != 0 ||
	    ember_idtab_insert(&rs->seq_index, h, (uint32_t)rs->nseqs) != 0)
		return SIZE_MAX;
	if (kind == SEQ_NATIVE) {
		memcpy(rs->frames + off, items, n * sizeof *rs->frames);
		rs->nframes += n;
	} else {
		memcpy(rs->py + off, items, n * sizeof *rs->py);
		rs->npy += n;
	}
	rs->seqs[rs->nseqs++] = (struct raw_seq){ off, n, kind };
	return off;
}

struct raw_stacks *raw_stacks_new(void)
{
	struct raw_stacks *rs = calloc(1, sizeof *rs);
	if (rs && (ember_idtab_init(&rs->index) != 0 || ember_idtab_init(&rs->seq_index) != 0)) {
		ember_idtab_free(&rs->index);
		free(rs);
		return NULL;
	}
	return rs;
}

void raw_stacks_free(struct raw_stacks *rs)
{
	if (!rs)
		return;
	free(rs->entries);
	ember_idtab_free(&rs->index);
	free(rs->frames);
	free(rs->kips);
	free(rs->py);
	free(rs->seqs);
	ember_idtab_free(&rs->seq_index);
	free(rs->timeline);
	free(rs);
}

static void add_timed(struct raw_stacks *rs, uint64_t time_ns, size_t entry)
{
	if (rs->timeline_full)
		return;
	if (rs->ntimeline >= TIMELINE_MAX ||
	    EMBER_GROW(rs->timeline, rs->timeline_cap, rs->timeline_len + 2 * EMBER_VARINT_MAX) != 0) {
		/* none rather than a partial one: free what it held */
		rs->timeline_full = true;
		free(rs->timeline);
		rs->timeline = NULL;
		rs->timeline_len = rs->timeline_cap = 0;
		return;
	}
	uint8_t *out = rs->timeline + rs->timeline_len;
	size_t n = ember_varint_put(out, ember_zigzag((int64_t)(time_ns - rs->timeline_last_ns)));
	n += ember_varint_put(out + n, entry);
	rs->timeline_len += n;
	rs->timeline_last_ns = time_ns;
	rs->ntimeline++;
}

size_t raw_stacks_timeline_count(const struct raw_stacks *rs, bool *complete)
{
	*complete = !rs->timeline_full;
	return rs->timeline_full ? 0 : rs->ntimeline;
}

/* *cursor is a byte offset into the encoded timeline; each time is the
 * previous one (in *time_ns) plus the stored change. */
bool raw_stacks_timeline_next(const struct raw_stacks *rs, size_t *cursor, uint64_t *time_ns, uint32_t *entry)
{
	uint64_t z, e;
	size_t at = *cursor, n;

	if (rs->timeline_full || at >= rs->timeline_len)
		return false;
	n = ember_varint_get(rs->timeline + at, rs->timeline_len - at, &z);
	if (!n)
		return false;
	at += n;
	n = ember_varint_get(rs->timeline + at, rs->timeline_len - at, &e);
	if (!n)
		return false;
	*cursor = at + n;
	*time_ns += (uint64_t)ember_unzigzag(z);
	*entry = (uint32_t)e;
	return true;
}

int raw_stacks_add(struct raw_stacks *rs, const struct ember_sample *s, const struct ember_py_frame *py,
		   uint32_t npy, uint32_t pyflags)
{
	return raw_stacks_add_weighted(rs, s, py, npy, pyflags, 1);
}

int raw_stacks_add_weighted(struct raw_stacks *rs, const struct ember_sample *s, const struct ember_py_frame *py,
			    uint32_t npy, uint32_t pyflags, uint64_t weight)
{
	struct raw_py rp = { .frames = py, .n = npy, .flags = pyflags };
	return raw_stacks_add_sample(rs, s, &rp, weight);
}

int raw_stacks_add_sample(struct raw_stacks *rs, const struct ember_sample *s, const struct raw_py *rp,
			  uint64_t weight)
{
	const struct ember_py_frame *py = rp->frames;
	uint32_t npy = rp->n, pyflags = rp->flags;
	/* Off-CPU intervals stay out of the timeline: its entries are samples
	 * of the clock, one interval each. */
	bool timed = !(s->flags & EMBER_SAMPLE_OFF_CPU);
	/* Checked by the sample, or copied at it: tells a native stack cut
	 * off at the root whose Python frames are whole from one that
	 * disagrees (ember_py_merge). */
	uint32_t keep = PY_KEY_FLAGS |
			(s->flags & (EMBER_SAMPLE_TRUNCATED | EMBER_SAMPLE_UNWIND_ERROR) ? EMBER_PY_CHECKED | EMBER_PY_AT_SAMPLE : 0);
	struct sample_key key = { s, py, npy, pyflags & keep, pyflags & EMBER_PY_PEER ? rp->peer_tid : 0 };
	uint64_t h = hash_sample(&key);
	uint32_t id = ember_idtab_find(&rs->index, h, same, rs, &key);
	if (id != UINT32_MAX) {
		if (__builtin_add_overflow(rs->entries[id].count, weight, &rs->entries[id].count))
			rs->entries[id].count = UINT64_MAX;
		rs->entries[id].samples++;
		rs->samples++;
		if (timed)
			add_timed(rs, s->time_ns, id);
		return 0;
	}
	size_t frames_off = intern_seq(rs, SEQ_NATIVE, s->frames, s->nframes);
	size_t py_off = intern_seq(rs, SEQ_PY, py, npy);
	if (frames_off == SIZE_MAX || py_off == SIZE_MAX ||
	    EMBER_GROW(rs->entries, rs->entries_cap, rs->nentries + 1) != 0 ||
	    EMBER_GROW(rs->kips, rs->kips_cap, rs->nkips + s->nkernel) != 0 ||
	    ember_idtab_insert(&rs->index, h, (uint32_t)rs->nentries) != 0)
		return -1;
	struct raw_entry *e = &rs->entries[rs->nentries];
	*e = (struct raw_entry){ .pid = s->pid, .tid = s->tid, .flags = s->flags & KEY_FLAGS,
				 .nframes = s->nframes, .nkernel = s->nkernel, .npy = npy,
				 .pyflags = key.pyflags, .peer_tid = key.peer_tid, .frames_off = frames_off,
				 .kernel_off = rs->nkips,
				 .py_off = py_off, .count = weight, .samples = 1 };
	if (s->nkernel)
		memcpy(rs->kips + rs->nkips, s->kernel_ips, s->nkernel * sizeof *s->kernel_ips);
	rs->nkips += s->nkernel;
	rs->nentries++;
	rs->samples++;
	if (timed)
		add_timed(rs, s->time_ns, rs->nentries - 1);
	return 0;
}

uint64_t raw_stacks_samples(const struct raw_stacks *rs)
{
	return rs->samples;
}

bool raw_stacks_next(const struct raw_stacks *rs, size_t *cursor, struct raw_stack_view *v)
{
	if (*cursor >= rs->nentries)
		return false;
	const struct raw_entry *e = &rs->entries[(*cursor)++];
	*v = (struct raw_stack_view){ .pid = e->pid, .tid = e->tid, .flags = e->flags,
				      .nframes = e->nframes, .nkernel = e->nkernel,
				      .frames = rs->frames + e->frames_off, .kernel_ips = rs->kips + e->kernel_off,
				      .npy = e->npy, .pyflags = e->pyflags, .py = rs->py + e->py_off,
				      .peer_tid = e->peer_tid,
				      .count = e->count, .samples = e->samples };
	return true;
}
