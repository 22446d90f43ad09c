/* ember_python_thread_name(): the Python name of an OS thread, read from
 * outside the process.
 *
 * threading keeps every Thread it knows in threading._active, a dict from
 * ident (get_ident() = pthread_self(), which CPython also stores in the
 * thread state's thread_id) to the Thread object, whose name is the
 * instance attribute "_name" ("_Thread__name" on 2.7, a mangled __name).
 * So: interpreter -> sys.modules -> "threading" -> its __dict__ ->
 * "_active" -> the entry keyed by our ident -> the Thread's attribute.
 *
 * What differs per version, all from offsets_table.c (measured against each
 * version's headers) or the 3.13 debug offsets:
 *   dicts    2.7 open addressing (ma_table, ma_mask); 3.6-3.10 compact dicts
 *            (dk_size, indices of 1/2/4/8 bytes, 24-byte entries); 3.11+
 *            dk_log2_size/dk_log2_index_bytes and dk_kind (16-byte entries
 *            for str-keyed tables).  Split tables take their values from
 *            ma_values.
 *   instance attributes  <= 3.10: the dict at tp_dictoffset; 3.11: values
 *            (keys: the type's ht_cached_keys) or a dict, two slots before
 *            the object; 3.12: one tagged dict-or-values slot; 3.13: values
 *            inline after the object header (while "valid"), else the
 *            managed dict.
 *   int keys 2.7 PyIntObject; 3.x PyLongObject digits (3.12+ lv_tag).
 *
 * Every read is bounded (entries, string lengths, reads per lookup) and
 * every object type-checked; anything unexpected gives "unknown" (0).
 * Nothing here runs on the per-sample path. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "py_internal.h"

#define TN_MAX_ENTRIES 16384u  /* dict entries looked at (sys.modules of big programs: ~3000) */
#define TN_MAX_READS 256       /* process_vm_readv calls per name lookup */
#define TN_BATCH 256           /* key objects compared per batched read */
#define TN_TYPE_HDR 512        /* bytes of a type object read (tp_* fields, not ht_*) */
#define TN_SCAN_INTERVAL_NS 20000000ull   /* thread-list rescans for unknown TIDs, as reads do */

/* One lookup: the reader, its offsets, the cache, and the read budget. */
struct tn {
	struct ember_python *py;
	const struct py_offsets *o;
	struct py_tn_cache *c;
	int reads;
};

/* (key, value) object pointers of a dict, and where each entry lies. */
struct items {
	uint64_t *key, *val, *entry;
	uint32_t n;
};

static void items_free(struct items *it)
{
	free(it->key);
	free(it->val);
	free(it->entry);
	memset(it, 0, sizeof *it);
}

/* ------------------------------------------------------------ reading */

/* Whether an n-byte field at off lies inside len bytes. */
static bool in(int32_t off, int32_t n, int32_t len)
{
	return off >= 0 && n > 0 && len > 0 && off <= len - n;
}

/* The offsets index small local buffers below: check them against those
 * buffers once per lookup (3.13's come from the target's own memory). */
static bool layout_ok(const struct ember_python *py)
{
	const struct py_offsets *o = &py->off;
	bool ok = in(o->ob_type, 8, 16) && in(o->type_name, 8, TN_TYPE_HDR) && in(o->tp_flags, 8, TN_TYPE_HDR) &&
		  in(o->tp_dictoffset, 8, TN_TYPE_HDR) && in(o->mod_dict, 8, 32) && o->mod_dict >= o->ob_type &&
		  o->dke_size <= 64 && in(o->dke_key, 8, o->dke_size) && in(o->dke_value, 8, o->dke_size);
	if (py->major == 2)
		return ok && in(o->dict_mask, 8, 48) && in(o->dict_table, 8, 48) && o->bytes_sval <= 64 &&
		       in(o->ob_size, 8, o->bytes_sval) && o->int_ival >= 16 && o->int_ival <= 64;
	ok = ok && in(o->dict_keys, 8, 48) && in(o->dict_values, 8, 48) && o->dk_indices <= 64 &&
	     in(o->dk_nentries, 8, o->dk_indices) && o->str_ascii_data <= 64 && in(o->str_length, 8, o->str_ascii_data) &&
	     in(o->str_state, 4, o->str_ascii_data) && o->long_digit >= 16 && o->long_digit <= 64 &&
	     in(o->long_tag, 8, o->long_digit) && o->long_shift >= 15 && o->long_shift <= 30 && o->long_tag_bits < 8;
	if (o->dk_log2_size >= 0)   /* 3.11+ */
		ok = ok && in(o->dk_log2_size, 1, o->dk_indices) && in(o->dk_log2_index_bytes, 1, o->dk_indices) &&
		     in(o->dk_kind, 1, o->dk_indices) && o->dku_size <= 64 && in(o->dku_key, 8, o->dku_size) &&
		     in(o->dku_value, 8, o->dku_size);
	else
		ok = ok && in(o->dk_size, 8, o->dk_indices);
	if (o->dv_capacity >= 0 || o->dv_valid >= 0)   /* 3.13 */
		ok = ok && in(o->dv_capacity, 1, 8) && in(o->dv_valid, 1, 8);
	return ok;
}

/* One read, within the lookup's budget. */
static bool rd(struct tn *t, uint64_t addr, void *buf, size_t len)
{
	if (t->reads >= TN_MAX_READS || !rm_ptr_ok(addr, 1))
		return false;
	t->reads++;
	return rm_read(t->py->pid, addr, buf, len, NULL, &t->py->st.syscalls);
}

static bool rd_ptr(struct tn *t, uint64_t addr, uint64_t *v)
{
	*v = 0;
	return rd(t, addr, v, 8);
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
	rm_readv(t->py->pid, req, n, NULL, &t->py->st.syscalls);
}

/* Whether `type` is the static (non-heap) type named `name`.  The answer
 * is kept in *known once found: type objects of the runtime never move. */
static bool type_is(struct tn *t, uint64_t type, uint64_t *known, const char *name)
{
	if (*known)
		return type == *known;
	const struct py_offsets *o = t->o;
	size_t len = strlen(name) + 1;
	uint64_t tp_name = 0, flags = 0;
	char buf[16];
	if (len > sizeof buf || !rm_ptr_ok(type, 8) || !rd_ptr(t, type + o->type_name, &tp_name) ||
	    !rd(t, type + o->tp_flags, &flags, 8) || (flags & (uint64_t)o->tpf_heaptype) ||
	    !rd(t, tp_name, buf, len) || memcmp(buf, name, len) != 0)
		return false;
	*known = type;
	return true;
}

/* ------------------------------------------------------------ dicts */

/* Entries [0, n) of `esize` bytes at `at`: keys at ekey, values at evalue
 * or, for a split table, in the pointer array `values`.  Empty and deleted
 * entries (NULL key or value) are left out. */
static bool read_entries(struct tn *t, uint64_t at, uint64_t n, uint32_t esize, int32_t ekey, int32_t evalue,
			 uint64_t values, struct items *it)
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
		  rd(t, at, buf, n * esize) && (!values || (rm_ptr_ok(values, 8) && rd(t, values, vals, n * 8)));
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
		items_free(it);
	return ok;
}

/* 3.6+ keys object `k`: its entries, with values from the split-table
 * values `values` (a PyDictValues; 3.6-3.10 a plain pointer array) when
 * non-zero. */
static bool keys_items(struct tn *t, uint64_t k, uint64_t values, struct items *it)
{
	const struct py_offsets *o = t->o;
	uint8_t h[64];
	uint64_t size, ixbytes;
	uint32_t esize = (uint32_t)o->dke_size;
	int32_t ekey = o->dke_key, evalue = o->dke_value;
	memset(it, 0, sizeof *it);
	if (o->dk_indices <= 0 || o->dk_indices > (int32_t)sizeof h || !rm_ptr_ok(k, 8) || !rd(t, k, h, o->dk_indices))
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
		if (!rm_ptr_ok(values, 8) || !rd(t, values, vh, sizeof vh))
			return false;
		if ((uint64_t)n > vh[o->dv_capacity])
			n = vh[o->dv_capacity];
	}
	uint64_t vals = values ? values + (uint64_t)(o->dv_values > 0 ? o->dv_values : 0) : 0;
	return read_entries(t, k + (uint64_t)o->dk_indices + ixbytes, (uint64_t)n, esize, ekey, evalue, vals, it);
}

/* Entries of the dict object d (exactly a dict: type-checked). */
static bool dict_items(struct tn *t, uint64_t d, struct items *it)
{
	const struct py_offsets *o = t->o;
	uint8_t h[64];
	memset(it, 0, sizeof *it);
	if (!rm_ptr_ok(d, 8) || !rd(t, d, h, 48) || !type_is(t, rd64(h, o->ob_type), &t->c->t_dict, "dict"))
		return false;
	if (t->py->major == 2) {
		int64_t mask = (int64_t)rd64(h, o->dict_mask);
		if (mask < 7 || (uint64_t)mask + 1 > TN_MAX_ENTRIES || ((uint64_t)mask & ((uint64_t)mask + 1)))
			return false;
		return read_entries(t, rd64(h, o->dict_table), (uint64_t)mask + 1, (uint32_t)o->dke_size, o->dke_key,
				    o->dke_value, 0, it);
	}
	return keys_items(t, rd64(h, o->dict_keys), rd64(h, o->dict_values), it);
}

/* Index of the first item whose key object satisfies match, -1 if none.
 * The keys' first `need` bytes (header and payload together) are read in
 * batches. */
typedef bool key_match_fn(struct tn *t, const uint8_t *key, const void *arg);

static int find_key(struct tn *t, const struct items *it, uint32_t need, key_match_fn *match, const void *arg)
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
	if (rd64(b, o->ob_type) != t->py->t_str)
		return false;
	bool same;
	if (t->py->major == 2) {
		same = rd64(b, o->ob_size) == k->len;
	} else {   /* compact ASCII only: the names looked up are ASCII */
		uint32_t state = (uint32_t)rd32(b, o->str_state);
		same = rd64(b, o->str_length) == k->len && ((state >> 5) & 1) && ((state >> 6) & 1);
	}
	return same && memcmp(b + k->text, k->name, k->len) == 0;
}

/* Index of the item whose key is the str `name` (ASCII), -1 if none. */
static int find_str(struct tn *t, const struct items *it, const char *name)
{
	const struct py_offsets *o = t->o;
	struct str_key k = { name, strlen(name), t->py->major == 2 ? o->bytes_sval : o->str_ascii_data };
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
	if (!type_is(t, rd64(b, o->ob_type), &t->c->t_int, "int"))
		return false;
	if (t->py->major == 2)
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
static int find_int(struct tn *t, const struct items *it, uint64_t ident)
{
	const struct py_offsets *o = t->o;
	struct int_key k = { ident, 0, (uint32_t)o->long_shift };
	if (t->py->major == 3 && (k.shift < 15 || k.shift > 30 || o->long_digit <= 0))
		return -1;
	for (uint64_t v = ident; t->py->major == 3 && v; v >>= k.shift)
		k.ndig++;
	uint32_t need = t->py->major == 2 ? (uint32_t)o->int_ival + 8
					  : (uint32_t)o->long_digit + 4 * (k.ndig ? k.ndig : 1);
	return find_key(t, it, need, int_matches, &k);
}

/* Value of the str key `name` in dict d, 0 if absent or unreadable. */
static uint64_t dict_get(struct tn *t, uint64_t d, const char *name, uint64_t *entry, uint64_t *key)
{
	struct items it;
	uint64_t v = 0;
	if (dict_items(t, d, &it)) {
		int i = find_str(t, &it, name);
		if (i >= 0) {
			v = it.val[i];
			if (entry)
				*entry = it.entry[i];
			if (key)
				*key = it.key[i];
		}
	}
	items_free(&it);
	return v;
}

/* ------------------------------------------------------------ threading */

/* threading's module dict of interpreter interp (cached while the module
 * object still holds it), 0 when threading is not imported. */
static uint64_t threading_dict(struct tn *t, uint64_t interp)
{
	const struct py_offsets *o = t->o;
	struct py_tn_cache *c = t->c;
	uint8_t h[32];
	if (o->mod_dict <= 0 || o->mod_dict + 8 > (int32_t)sizeof h)
		return 0;
	if (c->module && c->interp == interp && rd(t, c->module, h, (size_t)o->mod_dict + 8) &&
	    rd64(h, o->ob_type) == c->t_module && rd64(h, o->mod_dict) == c->md_dict)
		return c->md_dict;
	c->module = c->md_dict = c->hint_keys = 0;
	uint64_t modules = 0, mod;
	if (o->is_modules < 0 || !rm_ptr_ok(interp, 8) || !rd_ptr(t, interp + (uint64_t)o->is_modules, &modules))
		return 0;
	mod = dict_get(t, modules, "threading", NULL, NULL);
	if (!mod || !rd(t, mod, h, (size_t)o->mod_dict + 8) ||
	    !type_is(t, rd64(h, o->ob_type), &c->t_module, "module"))
		return 0;
	c->interp = interp;
	c->module = mod;
	c->md_dict = rd64(h, o->mod_dict);
	return c->md_dict;
}

/* What the entries of a combined dict (header h) hang off: its keys object
 * (3.x), its table (2.7); 0 for a split table. */
static uint64_t entries_owner(const struct tn *t, const uint8_t *h)
{
	const struct py_offsets *o = t->o;
	if (t->py->major == 2)
		return rd64(h, o->dict_table);
	return rd64(h, o->dict_values) ? 0 : rd64(h, o->dict_keys);
}

/* md_dict["_active"]: first by the entry it had last time (the threading
 * module's dict keeps its table once imported), else by a scan. */
static uint64_t active_dict(struct tn *t, uint64_t md_dict)
{
	const struct py_offsets *o = t->o;
	struct py_tn_cache *c = t->c;
	uint8_t h[48], e[64];
	uint32_t esize = (uint32_t)o->dke_size;
	int32_t ekey = o->dke_key, evalue = o->dke_value;
	if (t->py->major == 3 && o->dk_log2_size >= 0) {   /* 3.11+: a module dict has str keys only */
		esize = (uint32_t)o->dku_size;
		ekey = o->dku_key;
		evalue = o->dku_value;
	}
	if (c->hint_keys && esize <= sizeof e && rd(t, md_dict, h, 48) && entries_owner(t, h) == c->hint_keys &&
	    rd(t, c->hint_entry, e, esize) && rd64(e, ekey) == c->hint_key)
		return rd64(e, evalue);
	uint64_t entry = 0, key = 0, v = dict_get(t, md_dict, "_active", &entry, &key);
	c->hint_keys = 0;
	if (v && rd(t, md_dict, h, 48)) {
		c->hint_keys = entries_owner(t, h);
		c->hint_entry = entry;
		c->hint_key = key;
	}
	return v;
}

/* ------------------------------------------------------------ attributes */

/* Where obj's instance attributes are: a dict, or (3.11+) a values array
 * whose keys are the type's ht_cached_keys. */
struct attrs {
	uint64_t dict, values, keys;
};

static bool find_attrs(struct tn *t, uint64_t obj, uint64_t type, struct attrs *a)
{
	const struct py_offsets *o = t->o;
	uint8_t th[TN_TYPE_HDR];
	memset(a, 0, sizeof *a);
	if (o->tp_dictoffset + 8 > TN_TYPE_HDR || o->tp_flags + 8 > TN_TYPE_HDR || !rm_ptr_ok(type, 8) ||
	    !rd(t, type, th, (size_t)(o->tp_dictoffset > o->tp_flags ? o->tp_dictoffset : o->tp_flags) + 8))
		return false;
	uint64_t flags = rd64(th, o->tp_flags);
	if (!(flags & (uint64_t)o->tpf_heaptype))
		return false;   /* Thread and its subclasses are classes */
	bool managed = o->tpf_managed_dict > 0 && (flags & (uint64_t)o->tpf_managed_dict);
	bool inline_values = o->tpf_inline_values > 0 && (flags & (uint64_t)o->tpf_inline_values);
	if (!managed) {          /* <= 3.10, or a 3.11+ class that is not */
		int64_t off = (int64_t)rd64(th, o->tp_dictoffset);
		return off > 0 && off < 4096 && rd_ptr(t, obj + (uint64_t)off, &a->dict) && a->dict;
	}
	bool need_keys = false;
	if (inline_values && o->obj_inline_values > 0 && o->dv_valid >= 0) {   /* 3.13 */
		uint8_t vh[8];
		if (!rd(t, obj + (uint64_t)o->obj_inline_values, vh, sizeof vh))
			return false;
		if (vh[o->dv_valid]) {
			a->values = obj + (uint64_t)o->obj_inline_values;
			need_keys = true;
		}
	}
	if (!a->values && o->obj_values_before > 0) {   /* 3.11: values, then dict, before the object */
		uint64_t slots[2];
		int32_t gap = o->obj_values_before - o->obj_dict_before;
		if (gap != 8 || !rd(t, obj - (uint64_t)o->obj_values_before, slots, sizeof slots))
			return false;
		a->values = slots[0];
		a->dict = slots[1];
		need_keys = a->values != 0;
	} else if (!a->values && o->obj_dict_before > 0) {   /* 3.12: tagged; 3.13: the dict */
		uint64_t v;
		if (!rd_ptr(t, obj - (uint64_t)o->obj_dict_before, &v))
			return false;
		if (t->py->minor == 12 && (v & 1)) {   /* _PyDictOrValues_IsValues: stored as values - 1 */
			a->values = v + 1;
			need_keys = true;
		} else {
			a->dict = v;
		}
	}
	if (need_keys && (o->ht_cached_keys < 0 || !rd_ptr(t, type + (uint64_t)o->ht_cached_keys, &a->keys)))
		return false;
	return a->dict || (a->values && a->keys);
}

/* obj.<name> from its instance attributes, 0 if absent or unreadable. */
static uint64_t attr(struct tn *t, uint64_t obj, const char *name)
{
	uint64_t type = 0;
	struct attrs a;
	struct items it;
	uint64_t v = 0;
	if (!rm_ptr_ok(obj, 8) || !rd_ptr(t, obj + (uint64_t)t->o->ob_type, &type) || !find_attrs(t, obj, type, &a))
		return 0;
	if (a.values ? keys_items(t, a.keys, a.values, &it) : dict_items(t, a.dict, &it)) {
		int i = find_str(t, &it, name);
		v = i >= 0 ? it.val[i] : 0;
	}
	items_free(&it);
	return v;
}

/* ------------------------------------------------------------ the name */

/* The str object s as UTF-8 into buf, control characters replaced and cut
 * at a character boundary.  0 if s is not a str. */
static bool is_str(struct tn *t, uint64_t s)
{
	uint64_t type = 0;
	return rd_ptr(t, s + (uint64_t)t->o->ob_type, &type) &&
	       (type == t->py->t_str || (t->py->t_py2unicode && type == t->py->t_py2unicode));
}

static int copy_name(struct tn *t, uint64_t s, char *buf, size_t len)
{
	struct ember_python *py = t->py;
	if (!is_str(t, s))
		return 0;
	char *u = py_read_string(py, s);
	if (!u || strcmp(u, "?") == 0) {   /* "?": the text could not be read */
		free(u);
		return 0;
	}
	size_t n = strlen(u);
	if (n >= len) {
		n = len - 1;
		while (n && ((unsigned char)u[n] & 0xc0) == 0x80)
			n--;
	}
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)u[i] < 0x20 || u[i] == 0x7f ? '?' : u[i];
	buf[n] = 0;
	free(u);
	return (int)n;
}

int ember_python_thread_name(struct ember_python *py, uint32_t tid, char *buf, size_t len)
{
	if (!buf || !len)
		return 0;
	buf[0] = 0;
	struct py_thread *th = py_thread_find(py, tid);
	if (!th && py_now_ns() - py->last_scan_ns >= TN_SCAN_INTERVAL_NS) {   /* a thread not met yet */
		py_scan_threads(py);
		th = py_thread_find(py, tid);
	}
	if (!th || !th->tstate || !th->pthread || !layout_ok(py))
		return 0;
	struct tn t = { .py = py, .o = &py->off, .c = &py->tn };
	uint64_t md_dict = threading_dict(&t, th->interp);
	uint64_t active = md_dict ? active_dict(&t, md_dict) : 0;
	if (!active)
		return 0;
	struct items it;
	uint64_t thread = 0;
	if (dict_items(&t, active, &it)) {
		int i = find_int(&t, &it, th->pthread);
		thread = i >= 0 ? it.val[i] : 0;
	}
	items_free(&it);
	const char *field = py->major == 2 ? "_Thread__name" : "_name";
	uint64_t name = thread ? attr(&t, thread, field) : 0;
	int n = name ? copy_name(&t, name, buf, len) : 0;
	/* A thread that ended while its name was read may have freed the str
	 * under the read (a debug build fills freed memory with 0xDD): the name
	 * counts only if the Thread object still holds that str afterwards. */
	if (n > 0 && (attr(&t, thread, field) != name || !is_str(&t, name))) {
		buf[0] = 0;
		return 0;
	}
	return n;
}
