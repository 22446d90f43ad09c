/* The id hash set (idtab.h): linear probing, backward-shift removal. */
#include <stdlib.h>
#include <string.h>

#include "idtab.h"

#define IDTAB_INITIAL 64

int ember_idtab_init(struct ember_idtab *t)
{
	t->slots = calloc(IDTAB_INITIAL, sizeof *t->slots);
	t->mask = IDTAB_INITIAL - 1;
	t->count = 0;
	return t->slots ? 0 : -1;
}

void ember_idtab_free(struct ember_idtab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->mask = t->count = 0;
}

static void idtab_place(struct ember_idtab_slot *slots, size_t mask, uint32_t hash, uint32_t id_plus1)
{
	size_t i = hash & mask;

	while (slots[i].id_plus1)
		i = (i + 1) & mask;
	slots[i].id_plus1 = id_plus1;
	slots[i].hash = hash;
}

int ember_idtab_insert(struct ember_idtab *t, uint64_t hash, uint32_t id)
{
	/* Load factor at most 0.7: linear probing degrades quickly beyond. */
	if ((t->count + 1) * 10 > (t->mask + 1) * 7) {
		size_t ncap = (t->mask + 1) * 2;
		struct ember_idtab_slot *ns;

		if (ncap > SIZE_MAX / sizeof *ns)
			return -1;
		ns = calloc(ncap, sizeof *ns);
		if (!ns)
			return -1;
		for (size_t i = 0; i <= t->mask; i++)
			if (t->slots[i].id_plus1)
				idtab_place(ns, ncap - 1, t->slots[i].hash, t->slots[i].id_plus1);
		free(t->slots);
		t->slots = ns;
		t->mask = ncap - 1;
	}
	idtab_place(t->slots, t->mask, (uint32_t)hash, id + 1);
	t->count++;
	return 0;
}

bool ember_idtab_remove(struct ember_idtab *t, uint64_t hash, uint32_t id)
{
	size_t i = (uint32_t)hash & t->mask;

	while (t->slots[i].id_plus1 && t->slots[i].id_plus1 != id + 1)
		i = (i + 1) & t->mask;
	if (!t->slots[i].id_plus1)
		return false;
	/* Close the gap: move back every later entry of the run that may sit
	 * no earlier than the hole (its home slot is not between). */
	for (size_t j = (i + 1) & t->mask; t->slots[j].id_plus1; j = (j + 1) & t->mask) {
		size_t home = t->slots[j].hash & t->mask;
		if (((j - home) & t->mask) >= ((j - i) & t->mask)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i].id_plus1 = 0;
	t->count--;
	return true;
}

void ember_idtab_clear(struct ember_idtab *t)
{
	memset(t->slots, 0, (t->mask + 1) * sizeof *t->slots);
	t->count = 0;
}
