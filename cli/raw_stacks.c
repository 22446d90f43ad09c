/* Capture-side aggregation: identical address stacks of one thread are
 * counted once.  This is all the hot path stores per sample — a hash lookup
 * and, for a new stack, a copy of its addresses. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "python_stacks.h"

struct raw_entry {
	uint64_t hash;
	uint32_t pid, tid, flags;
	uint32_t nframes, nkernel, npy, pyflags;
	size_t frames_off;            /* into rs->frames */
	size_t kernel_off;            /* into rs->kips */
	size_t py_off;                /* into rs->py */
	uint64_t count;
};

struct raw_stacks {
	struct raw_entry *entries;
	size_t nentries, entries_cap;
	uint32_t *slots;              /* open addressing: entry index + 1, 0 = empty */
	size_t nslots;
	struct ember_frame_addr *frames;
	size_t nframes, frames_cap;
	uint64_t *kips;
	size_t nkips, kips_cap;
	struct ember_py_frame *py;
	size_t npy, py_cap;
	uint64_t samples;
	/* Every sample in arrival order, for timeline views: 16 bytes each,
	 * capped so a day-long run cannot eat the machine. */
	struct raw_timed *timeline;
	size_t ntimeline, timeline_cap;
	bool timeline_full;
};

#define TIMELINE_MAX (4u << 20)

/* Flags that change what the stack means; the others are per-sample noise. */
#define KEY_FLAGS (EMBER_SAMPLE_TRUNCATED)
/* Python read flags that change how the stack is merged. */
#define PY_KEY_FLAGS (EMBER_PY_TORN | EMBER_PY_TRUNCATED | EMBER_PY_UNREADABLE)

/* A sample and the Python frames read for it, as one key. */
struct sample_key {
	const struct ember_sample *s;
	const struct ember_py_frame *py;
	uint32_t npy, pyflags;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_sample(const struct sample_key *k)
{
	const struct ember_sample *s = k->s;
	uint64_t h = mix(mix(s->pid, s->tid), (s->flags & KEY_FLAGS) | (uint64_t)s->nframes << 8 |
					      (uint64_t)k->npy << 24 | (uint64_t)k->pyflags << 48);
	for (uint32_t i = 0; i < s->nframes; i++)
		h = mix(h, s->frames[i].addr ^ ((uint64_t)s->frames[i].module << 44) ^
			   ((uint64_t)s->frames[i].flags << 40));
	for (uint32_t i = 0; i < s->nkernel; i++)
		h = mix(h, s->kernel_ips[i]);
	for (uint32_t i = 0; i < k->npy; i++)
		h = mix(h, (uint64_t)k->py[i].code << 33 | (uint64_t)k->py[i].line << 1 | k->py[i].activation_start);
	return h ? h : 1;
}

static bool same_py(const struct ember_py_frame *a, const struct ember_py_frame *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i].code != b[i].code || a[i].line != b[i].line || a[i].activation_start != b[i].activation_start)
			return false;
	return true;
}

static bool same(const struct raw_stacks *rs, const struct raw_entry *e, const struct sample_key *k, uint64_t h)
{
	const struct ember_sample *s = k->s;
	return e->hash == h && e->pid == s->pid && e->tid == s->tid &&
	       e->flags == (s->flags & KEY_FLAGS) && e->nframes == s->nframes && e->nkernel == s->nkernel &&
	       e->npy == k->npy && e->pyflags == k->pyflags &&
	       memcmp(rs->frames + e->frames_off, s->frames, s->nframes * sizeof *s->frames) == 0 &&
	       (!s->nkernel || memcmp(rs->kips + e->kernel_off, s->kernel_ips, s->nkernel * sizeof *s->kernel_ips) == 0) &&
	       same_py(rs->py + e->py_off, k->py, k->npy);
}

struct raw_stacks *raw_stacks_new(void)
{
	struct raw_stacks *rs = calloc(1, sizeof *rs);
	if (!rs)
		return NULL;
	rs->nslots = 1024;
	rs->slots = calloc(rs->nslots, sizeof *rs->slots);
	if (!rs->slots) {
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
	free(rs->slots);
	free(rs->frames);
	free(rs->kips);
	free(rs->py);
	free(rs->timeline);
	free(rs);
}

static bool reserve(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t ncap = *cap ? *cap : 256;
	while (ncap < need)
		ncap *= 2;
	void *q = realloc(*p, ncap * elem);
	if (!q)
		return false;
	*p = q;
	*cap = ncap;
	return true;
}

static void add_timed(struct raw_stacks *rs, uint64_t time_ns, size_t entry)
{
	if (rs->ntimeline >= TIMELINE_MAX ||
	    !reserve((void **)&rs->timeline, &rs->timeline_cap, rs->ntimeline + 1, sizeof *rs->timeline)) {
		rs->timeline_full = true;
		return;
	}
	rs->timeline[rs->ntimeline++] = (struct raw_timed){ time_ns, (uint32_t)entry };
}

const struct raw_timed *raw_stacks_timeline(const struct raw_stacks *rs, size_t *n, bool *complete)
{
	*n = rs->ntimeline;
	*complete = !rs->timeline_full;
	return rs->timeline;
}


static int rehash(struct raw_stacks *rs)
{
	size_t n = rs->nslots * 2;
	uint32_t *slots = calloc(n, sizeof *slots);
	if (!slots)
		return -1;
	for (size_t i = 0; i < rs->nentries; i++) {
		size_t j = rs->entries[i].hash & (n - 1);
		while (slots[j])
			j = (j + 1) & (n - 1);
		slots[j] = (uint32_t)i + 1;
	}
	free(rs->slots);
	rs->slots = slots;
	rs->nslots = n;
	return 0;
}

int raw_stacks_add(struct raw_stacks *rs, const struct ember_sample *s, const struct ember_py_frame *py,
		   uint32_t npy, uint32_t pyflags)
{
	/* Checked by the sample: tells a native stack cut off at the root
	 * whose Python frames are whole from one that disagrees (merge_stack). */
	uint32_t keep = PY_KEY_FLAGS | (s->flags & EMBER_SAMPLE_TRUNCATED ? EMBER_PY_CHECKED : 0);
	struct sample_key key = { s, py, npy, pyflags & keep };
	uint64_t h = hash_sample(&key);
	size_t mask = rs->nslots - 1, j = h & mask;
	for (; rs->slots[j]; j = (j + 1) & mask) {
		struct raw_entry *e = &rs->entries[rs->slots[j] - 1];
		if (same(rs, e, &key, h)) {
			e->count++;
			rs->samples++;
			add_timed(rs, s->time_ns, rs->slots[j] - 1);
			return 0;
		}
	}
	if (!reserve((void **)&rs->entries, &rs->entries_cap, rs->nentries + 1, sizeof *rs->entries) ||
	    !reserve((void **)&rs->frames, &rs->frames_cap, rs->nframes + s->nframes, sizeof *rs->frames) ||
	    !reserve((void **)&rs->kips, &rs->kips_cap, rs->nkips + s->nkernel, sizeof *rs->kips) ||
	    !reserve((void **)&rs->py, &rs->py_cap, rs->npy + npy, sizeof *rs->py))
		return -1;
	struct raw_entry *e = &rs->entries[rs->nentries];
	*e = (struct raw_entry){ .hash = h, .pid = s->pid, .tid = s->tid, .flags = s->flags & KEY_FLAGS,
				 .nframes = s->nframes, .nkernel = s->nkernel, .npy = npy,
				 .pyflags = key.pyflags, .frames_off = rs->nframes, .kernel_off = rs->nkips,
				 .py_off = rs->npy, .count = 1 };
	memcpy(rs->frames + rs->nframes, s->frames, s->nframes * sizeof *s->frames);
	rs->nframes += s->nframes;
	if (s->nkernel)
		memcpy(rs->kips + rs->nkips, s->kernel_ips, s->nkernel * sizeof *s->kernel_ips);
	rs->nkips += s->nkernel;
	if (npy)
		memcpy(rs->py + rs->npy, py, npy * sizeof *py);
	rs->npy += npy;
	rs->slots[j] = (uint32_t)++rs->nentries;
	rs->samples++;
	add_timed(rs, s->time_ns, rs->nentries - 1);
	if (rs->nentries * 2 > rs->nslots)
		return rehash(rs);
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
				      .count = e->count };
	return true;
}
