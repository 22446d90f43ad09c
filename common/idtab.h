/* The hash map of ember: an open-addressing hash set of uint32 ids.
 *
 * The table does not know what an id stands for: the items live in the
 * caller's plain arrays (ids index them), and the caller passes an item's
 * hash and an equality callback that compares its own key with the item an
 * id names.  One table for frames, stacks, strings, addresses, threads and
 * code objects alike; each table costs 8 bytes a slot, load at most 0.7.
 * Not thread-safe. */
#ifndef EMBER_COMMON_IDTAB_H
#define EMBER_COMMON_IDTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ember_idtab_slot {
	uint32_t id_plus1;     /* 0 marks an empty slot */
	uint32_t hash;         /* low 32 bits of the item hash, to rehash without the items */
};

struct ember_idtab {
	struct ember_idtab_slot *slots;
	size_t mask;           /* capacity - 1; capacity is a power of two */
	size_t count;
};

typedef bool (*ember_idtab_eq)(const void *ctx, uint32_t id, const void *key);

int ember_idtab_init(struct ember_idtab *t);
void ember_idtab_free(struct ember_idtab *t);
/* Id whose item equals key, or UINT32_MAX.  Inline, so that a caller's
 * static eq is inlined into its probe loop: lookups are on every hot path
 * (each sample's stack, each folded line's frames). */
static inline uint32_t ember_idtab_find(const struct ember_idtab *t, uint64_t hash,
					ember_idtab_eq eq, const void *ctx, const void *key)
{
	uint32_t h = (uint32_t)hash;

	for (size_t i = h & t->mask; t->slots[i].id_plus1; i = (i + 1) & t->mask) {
		const struct ember_idtab_slot *s = &t->slots[i];
		if (s->hash == h && eq(ctx, s->id_plus1 - 1, key))
			return s->id_plus1 - 1;
	}
	return UINT32_MAX;
}
/* Add id (known to be absent).  0, or -1 on OOM (the table is unchanged). */
int ember_idtab_insert(struct ember_idtab *t, uint64_t hash, uint32_t id);
/* Remove id, whose item hashed to hash; false when it is not there. */
bool ember_idtab_remove(struct ember_idtab *t, uint64_t hash, uint32_t id);
/* Forget every id (the capacity stays). */
void ember_idtab_clear(struct ember_idtab *t);

#endif
