/* Reading the target's dicts from outside (py_dict.c), for thread names
 * (thread_names.c): private to those two files.  Every read of one lookup
 * goes through its struct tn, which bounds them (TN_MAX_READS); anything
 * unexpected reads as absent.  Cold path, not thread-safe. */
#ifndef EMBER_PY_DICT_H
#define EMBER_PY_DICT_H

#include "py_read.h"

/* One lookup: the reader, its offsets, the cache, and the read budget. */
struct tn {
	struct ember_python *py;
	const struct py_offsets *o;
	struct py_tn_cache *c;
	int reads;
};

/* (key, value) object pointers of a dict, and where each entry lies. */
struct tn_items {
	uint64_t *key, *val, *entry;
	uint32_t n;
};
void tn_items_free(struct tn_items *it);

/* One read (a pointer), within the lookup's budget. */
bool tn_rd(struct tn *t, uint64_t addr, void *buf, size_t len);
bool tn_rd_ptr(struct tn *t, uint64_t addr, uint64_t *v);
/* Whether `type` is the static (non-heap) type named `name`; the answer is
 * kept in *known once found: type objects of the runtime never move. */
bool tn_type_is(struct tn *t, uint64_t type, uint64_t *known, const char *name);

/* Entries of the dict object d (type-checked), of the 3.6+ keys object k
 * with values from the split-table values `values` when non-zero: true and
 * *it filled (tn_items_free it), or false. */
bool tn_dict_items(struct tn *t, uint64_t d, struct tn_items *it);
bool tn_keys_items(struct tn *t, uint64_t k, uint64_t values, struct tn_items *it);
/* Index of the item whose key is the str `name` (ASCII) / the int `ident`,
 * -1 if none. */
int tn_find_str(struct tn *t, const struct tn_items *it, const char *name);
int tn_find_int(struct tn *t, const struct tn_items *it, uint64_t ident);
/* Value of the str key `name` in dict d (and its entry's address and key
 * object when not NULL), 0 if absent or unreadable. */
uint64_t tn_dict_get(struct tn *t, uint64_t d, const char *name, uint64_t *entry, uint64_t *key);

#endif
