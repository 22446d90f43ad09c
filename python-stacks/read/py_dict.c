/* The target's dicts as thread_names.c reads them, from outside the
 * process: 2.7 open addressing (ma_table, ma_mask); 3.6-3.10 compact dicts
 * (dk_size, indices of 1/2/4/8 bytes, 24-byte entries); 3.11+
 * dk_log2_size/dk_log2_index_bytes and dk_kind (16-byte entries for
 * str-keyed tables); split tables take their values from ma_values (3.13:
 * a PyDictValues that says how long it is).  Keys are looked up by str
 * (ASCII) or int value.  Every read counts against the lookup's budget
 * (TN_MAX_READS) and every object is type-checked. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "py_dict.h"

#define TN_MAX_ENTRIES 16384u  /* dict entries looked at (sys.modules of big programs: ~3000) */
#define TN_MAX_READS 256       /* process_vm_readv calls per name lookup */
#define TN_BATCH 256           /* key objects compared per batched read */

void tn_items_free(struct tn_items *it)
{
	free(it->key);
	free(it->val);
	free(it->entry);
	memset(it, 0, sizeof *it);
}

/* ------------------------------------------------------------ reading */

bool tn_rd(struct tn *t, uint64_t addr, void *buf, size_t len)
{
	if (t->reads >= TN_MAX_READS || !rm_ptr_ok(addr, 1))
		return false;
	t->reads++;
	return rm_read(t->py->pid, addr, buf, len, NULL, &t->py->syscalls);
}

bool tn_rd_ptr(struct tn *t, uint64_t addr, uint64_t *v)
{
	*v = 0;
	return tn_rd(t, addr, v, 8);
}

/* Many small reads in one call; each req's ok tells. */
static void rd_many(struct tn *t, struct rm_req *req, size_t n)
{
	if (t->reads >= TN_MAX_READS) {
		for (size_t i = 0; i < n; i++)
			req[i].ok = false;
		return;
	}
	t->reads++;
	rm_readv(t->py->pid, req, n, NULL, &t->py->syscalls);
}

/* Whether `type` is the static (non-heap) type named `name`.  The answer
 * is kept in *known once found: type objects of the runtime never move. */
bool tn_type_is(struct tn *t, uint64_t type, uint64_t *known, const char *name)
{
	if (*known)
		return type == *known;
	const struct py_offsets *o = t->o;
	size_t len = strlen(name) + 1;
	uint64_t tp_name = 0, flags = 0;
	char buf[16];
	if (len > sizeof buf || !rm_ptr_ok(type, 8) || !tn_rd_ptr(t, type + o->type_name, &tp_name) ||
	    !tn_rd(t, type + o->tp_flags, &flags, 8) || (flags & (uint64_t)o->tpf_heaptype) ||
	    !tn_rd(t, tp_name, buf, len) || memcmp(buf, name, len) != 0)
		return false;
	*known = type;
	return true;
}

/* ------------------------------------------------------------ dicts */

/* Entries [0, n) of `esize` bytes at `at`: keys at ekey, values at evalue
 * or, for a split table, in the pointer array `values`.  Empty and deleted
 * entries (NULL key or value) are left out. */
static bool read_entries(struct tn *t, uint64_t at, uint64_t n, uint32_t esize, int32_t ekey, int32_t evalue,
			 uint64_t values, struct tn_items *it)
{
	memset(it, 0, sizeof *it);
	if (n > TN_MAX_ENTRIES || esize < 16 || esize > 64 || ekey < 0 || (!values && evalue < 0))
		return false;
	if (!n)
		return true;
	uint8_t *buf = malloc(n * esize);
	uint64_t *vals = values ? malloc(n * 8) : NULL;
	it->key = malloc(n * sizeof *it->key);
	it->val = malloc(n * sizeof *it->val);
	it->entry = malloc(n * sizeof *it->entry);
	bool ok = buf && (vals || !values) && it->key && it->val && it->entry && rm_ptr_ok(at, 8) &&
		  tn_rd(t, at, buf, n * esize) && (!values || (rm_ptr_ok(values, 8) && tn_rd(t, values, vals, n * 8)));
	for (uint64_t i = 0; ok && i < n; i++) {
		uint64_t k = rd64(buf + i * esize, ekey);
		uint64_t v = values ? vals[i] : rd64(buf + i * esize, evalue);
		if (!rm_ptr_ok(k, 8) || !rm_ptr_ok(v, 8))
			continue;
		it->key[it->n] = k;
		it->val[it->n] = v;
		it->entry[it->n++] = at + i * esize;
	}
	free(buf);
	free(vals);
	if (!ok)
		tn_items_free(it);
	return ok;
}

/* 3.6+ keys object `k`: its entries, with values from the split-table
 * values `values` (a PyDictValues; 3.6-3.10 a plain pointer array) when
 * non-zero. */
bool tn_keys_items(struct tn *t, uint64_t k, uint64_t values, struct tn_items *it)
{
	const struct py_offsets *o = t->o;
	uint8_t h[64];
	uint64_t size, ixbytes;
	uint32_t esize = (uint32_t)o->dke_size;
	int32_t ekey = o->dke_key, evalue = o->dke_value;
	memset(it, 0, sizeof *it);
	if (o->dk_indices <= 0 || o->dk_indices > (int32_t)sizeof h || !rm_ptr_ok(k, 8) || !tn_rd(t, k, h, o->dk_indices))
		return false;
	int64_t n = (int64_t)rd64(h, o->dk_nentries);
	if (o->dk_log2_size >= 0) {   /* 3.11+ */
		uint8_t lg = h[o->dk_log2_size], lgi = h[o->dk_log2_index_bytes];
		if (lg < 3 || lg > 30 || lgi < lg || lgi > lg + 3)
			return false;
		size = 1ull << lg;
		ixbytes = 1ull << lgi;
		if (h[o->dk_kind] != (uint8_t)o->dk_kind_general) {   /* str keys only: no hash */
			esize = (uint32_t)o->dku_size;
			ekey = o->dku_key;
			evalue = o->dku_value;
		}
	} else {                        /* 3.6-3.10: index width from the table size */
		size = rd64(h, o->dk_size);
		if (size < 8 || size > (1ull << 30) || (size & (size - 1)))
			return false;
		ixbytes = size * (size <= 0xff ? 1 : size <= 0xffff ? 2 : 4);
	}
	if (n < 0 || (uint64_t)n > size)
		return false;
	if (values && o->dv_capacity >= 0) {   /* 3.13: the values array says how long it is */
		uint8_t vh[8];
		if (!rm_ptr_ok(values, 8) || !tn_rd(t, values, vh, sizeof vh))
			return false;
		if ((uint64_t)n > vh[o->dv_capacity])
			n = vh[o->dv_capacity];
	}
	uint64_t vals = values ? values + (uint64_t)(o->dv_values > 0 ? o->dv_values : 0) : 0;
	return read_entries(t, k + (uint64_t)o->dk_indices + ixbytes, (uint64_t)n, esize, ekey, evalue, vals, it);
}

/* Entries of the dict object d (exactly a dict: type-checked). */
bool tn_dict_items(struct tn *t, uint64_t d, struct tn_items *it)
{
	const struct py_offsets *o = t->o;
	uint8_t h[64];
	memset(it, 0, sizeof *it);
	if (!rm_ptr_ok(d, 8) || !tn_rd(t, d, h, 48) || !tn_type_is(t, rd64(h, o->ob_type), &t->c->t_dict, "dict"))
		return false;
	if (t->py->rt.major == 2) {
		int64_t mask = (int64_t)rd64(h, o->dict_mask);
		if (mask < 7 || (uint64_t)mask + 1 > TN_MAX_ENTRIES || ((uint64_t)mask & ((uint64_t)mask + 1)))
			return false;
		return read_entries(t, rd64(h, o->dict_table), (uint64_t)mask + 1, (uint32_t)o->dke_size, o->dke_key,
				    o->dke_value, 0, it);
	}
	return tn_keys_items(t, rd64(h, o->dict_keys), rd64(h, o->dict_values), it);
}

/* Index of the first item whose key object satisfies match, -1 if none.
 * The keys' first `need` bytes (header and payload together) are read in
 * batches. */
typedef bool key_match_fn(struct tn *t, const uint8_t *key, const void *arg);

static int find_key(struct tn *t, const struct tn_items *it, uint32_t need, key_match_fn *match, const void *arg)
{
	struct rm_req req[TN_BATCH];
	uint8_t *buf = malloc((size_t)TN_BATCH * need);
	int found = -1;
	for (uint32_t base = 0; buf && base < it->n && found < 0; base += TN_BATCH) {
		uint32_t m = it->n - base < TN_BATCH ? it->n - base : TN_BATCH;
		for (uint32_t i = 0; i < m; i++)
			req[i] = (struct rm_req){ it->key[base + i], buf + (size_t)i * need, need, false };
		rd_many(t, req, m);
		for (uint32_t i = 0; i < m && found < 0; i++)
			if (req[i].ok && match(t, req[i].buf, arg))
				found = (int)(base + i);
	}
	free(buf);
	return found;
}

struct str_key {
	const char *name;
	size_t len;
	int32_t text;      /* offset of the characters in the object */
};

static bool str_matches(struct tn *t, const uint8_t *b, const void *arg)
{
	const struct str_key *k = arg;
	const struct py_offsets *o = t->o;
	if (rd64(b, o->ob_type) != t->py->rt.t_str)
		return false;
	bool same;
	if (t->py->rt.major == 2) {
		same = rd64(b, o->ob_size) == k->len;
	} else {   /* compact ASCII only: the names looked up are ASCII */
		uint32_t state = (uint32_t)rd32(b, o->str_state);
		same = rd64(b, o->str_length) == k->len && ((state >> 5) & 1) && ((state >> 6) & 1);
	}
	return same && memcmp(b + k->text, k->name, k->len) == 0;
}

/* Index of the item whose key is the str `name` (ASCII), -1 if none. */
int tn_find_str(struct tn *t, const struct tn_items *it, const char *name)
{
	const struct py_offsets *o = t->o;
	struct str_key k = { name, strlen(name), t->py->rt.major == 2 ? o->bytes_sval : o->str_ascii_data };
	if (k.text <= 0)
		return -1;
	return find_key(t, it, (uint32_t)k.text + (uint32_t)k.len + 1, str_matches, &k);
}

struct int_key {
	uint64_t ident;
	uint32_t ndig, shift;   /* Python 3: 30-bit (or 15-bit) digits */
};

static bool int_matches(struct tn *t, const uint8_t *b, const void *arg)
{
	const struct int_key *k = arg;
	const struct py_offsets *o = t->o;
	if (!tn_type_is(t, rd64(b, o->ob_type), &t->c->t_int, "int"))
		return false;
	if (t->py->rt.major == 2)
		return rd64(b, o->int_ival) == k->ident;
	uint64_t tag = rd64(b, o->long_tag), n;
	if (o->long_tag_bits > 0) {   /* 3.12+: sign in the low bits (0 = positive) */
		if (tag & 3)
			return false;
		n = tag >> o->long_tag_bits;
	} else {
		n = tag;               /* ob_size: negative for negative numbers */
	}
	if (n != k->ndig)
		return false;
	uint64_t v = 0;
	for (uint32_t d = 0; d < k->ndig; d++)
		v |= (uint64_t)(uint32_t)rd32(b, o->long_digit + 4 * (int32_t)d) << (k->shift * d);
	return v == k->ident;
}

/* Index of the item whose key is the int `ident`, -1 if none. */
int tn_find_int(struct tn *t, const struct tn_items *it, uint64_t ident)
{
	const struct py_offsets *o = t->o;
	struct int_key k = { ident, 0, (uint32_t)o->long_shift };
	if (t->py->rt.major == 3 && (k.shift < 15 || k.shift > 30 || o->long_digit <= 0))
		return -1;
	for (uint64_t v = ident; t->py->rt.major == 3 && v; v >>= k.shift)
		k.ndig++;
	uint32_t need = t->py->rt.major == 2 ? (uint32_t)o->int_ival + 8
					  : (uint32_t)o->long_digit + 4 * (k.ndig ? k.ndig : 1);
	return find_key(t, it, need, int_matches, &k);
}

/* Value of the str key `name` in dict d, 0 if absent or unreadable. */
uint64_t tn_dict_get(struct tn *t, uint64_t d, const char *name, uint64_t *entry, uint64_t *key)
{
	struct tn_items it;
	uint64_t v = 0;
	if (tn_dict_items(t, d, &it)) {
		int i = tn_find_str(t, &it, name);
		if (i >= 0) {
			v = it.val[i];
			if (entry)
				*entry = it.entry[i];
			if (key)
				*key = it.key[i];
		}
	}
	tn_items_free(&it);
	return v;
}

