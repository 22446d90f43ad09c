/* The string interner (strtab.h): an open-addressing hash table over
 * strings stored in large arena blocks.  Blocks never move, so interned
 * pointers stay valid as the table grows. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "strtab.h"

/* Large enough that malloc overhead per string is negligible, small enough
 * that a profile with a handful of names does not reserve megabytes. */
#define STRTAB_BLOCK_SIZE ((size_t)64 * 1024)

struct strtab_block {
	struct strtab_block *next;
	size_t used, cap;
	char data[];
};

struct strtab_slot {
	const char *str;       /* NULL marks an empty slot */
	size_t len;
	uint64_t hash;
};

struct ember_strtab {
	struct strtab_slot *slots;
	size_t mask;           /* capacity - 1 */
	size_t count;
	size_t bytes;          /* string bytes stored, NULs included */
	struct strtab_block *blocks; /* head is the block being filled */
};

struct ember_strtab *ember_strtab_new(void)
{
	struct ember_strtab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->slots = calloc(256, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return NULL;
	}
	t->mask = 255;
	return t;
}

void ember_strtab_free(struct ember_strtab *t)
{
	struct strtab_block *b, *next;

	if (!t)
		return;
	for (b = t->blocks; b; b = next) {
		next = b->next;
		free(b);
	}
	free(t->slots);
	free(t);
}

size_t ember_strtab_count(const struct ember_strtab *t)
{
	return t->count;
}


/* Copy s into arena memory; NULL on OOM. */
static char *strtab_store(struct ember_strtab *t, const char *s, size_t len)
{
	struct strtab_block *b = t->blocks;
	size_t need = len + 1;
	char *dst;

	if (need == 0)
		return NULL;
	if (!b || b->cap - b->used < need) {
		/* A string bigger than a quarter block gets a block of its own,
		 * linked behind the head so the head keeps filling up; otherwise
		 * a few long strings would waste most of every block. */
		bool own = need > STRTAB_BLOCK_SIZE / 4;
		size_t cap = own ? need : STRTAB_BLOCK_SIZE;

		if (cap > SIZE_MAX - sizeof(*b))
			return NULL;
		struct strtab_block *nb = malloc(sizeof(*nb) + cap);
		if (!nb)
			return NULL;
		nb->used = 0;
		nb->cap = cap;
		if (own && b) {
			nb->next = b->next;
			b->next = nb;
		} else {
			nb->next = b;
			t->blocks = nb;
		}
		b = nb;
	}
	dst = b->data + b->used;
	memcpy(dst, s, len);
	dst[len] = '\0';
	b->used += need;
	return dst;
}

static int strtab_grow(struct ember_strtab *t)
{
	size_t ncap = (t->mask + 1) * 2;
	struct strtab_slot *ns;

	if (ncap > SIZE_MAX / sizeof(*ns))
		return -1;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -1;
	for (size_t i = 0; i <= t->mask; i++) {
		if (!t->slots[i].str)
			continue;
		size_t j = (size_t)t->slots[i].hash & (ncap - 1);
		while (ns[j].str)
			j = (j + 1) & (ncap - 1);
		ns[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = ns;
	t->mask = ncap - 1;
	return 0;
}

const char *ember_strtab_intern(struct ember_strtab *t, const char *s, size_t len)
{
	uint64_t h;
	size_t i;

	if (!s)
		len = 0, s = "";
	h = ember_hash_bytes(s, len, 0x5354);
	for (i = (size_t)h & t->mask; t->slots[i].str; i = (i + 1) & t->mask) {
		const struct strtab_slot *sl = &t->slots[i];
		if (sl->hash == h && sl->len == len && memcmp(sl->str, s, len) == 0)
			return sl->str;
	}

	/* Keep the load factor under 0.7 so linear probes stay short. */
	if ((t->count + 1) * 10 > (t->mask + 1) * 7) {
		if (strtab_grow(t) < 0)
			return NULL;
		for (i = (size_t)h & t->mask; t->slots[i].str; i = (i + 1) & t->mask)
			;
	}
	char *copy = strtab_store(t, s, len);
	if (!copy)
		return NULL;
	t->slots[i].str = copy;
	t->slots[i].len = len;
	t->slots[i].hash = h;
	t->count++;
	t->bytes += len + 1;
	return copy;
}

const char *ember_strtab_cstr(struct ember_strtab *t, const char *s)
{
	return ember_strtab_intern(t, s ? s : "", s ? strlen(s) : 0);
}
