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
 *   dicts    py_dict.c.
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

#include "py_dict.h"

#define TN_TYPE_HDR 512        /* bytes of a type object read (tp_* fields, not ht_*) */

/* ------------------------------------------------------------ the layout */

/* Whether an n-byte field at off lies inside len bytes. */
static bool in(int32_t off, int32_t n, int32_t len)
{
	return off >= 0 && n > 0 && len > 0 && off <= len - n;
}

/* The offsets index small local buffers below: check them against those
 * buffers once per lookup (3.13's come from the target's own memory). */
static bool layout_ok(const struct ember_python *py)
{
	const struct py_offsets *o = &py->rt.off;
	bool ok = in(o->ob_type, 8, 16) && in(o->type_name, 8, TN_TYPE_HDR) && in(o->tp_flags, 8, TN_TYPE_HDR) &&
		  in(o->tp_dictoffset, 8, TN_TYPE_HDR) && in(o->mod_dict, 8, 32) && o->mod_dict >= o->ob_type &&
		  o->dke_size <= 64 && in(o->dke_key, 8, o->dke_size) && in(o->dke_value, 8, o->dke_size);
	if (py->rt.major == 2)
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
	if (c->module && c->interp == interp && tn_rd(t, c->module, h, (size_t)o->mod_dict + 8) &&
	    rd64(h, o->ob_type) == c->t_module && rd64(h, o->mod_dict) == c->md_dict)
		return c->md_dict;
	c->module = c->md_dict = c->hint_keys = 0;
	uint64_t modules = 0, mod;
	if (o->is_modules < 0 || !rm_ptr_ok(interp, 8) || !tn_rd_ptr(t, interp + (uint64_t)o->is_modules, &modules))
		return 0;
	mod = tn_dict_get(t, modules, "threading", NULL, NULL);
	if (!mod || !tn_rd(t, mod, h, (size_t)o->mod_dict + 8) ||
	    !tn_type_is(t, rd64(h, o->ob_type), &c->t_module, "module"))
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
	if (t->py->rt.major == 2)
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
	if (t->py->rt.major == 3 && o->dk_log2_size >= 0) {   /* 3.11+: a module dict has str keys only */
		esize = (uint32_t)o->dku_size;
		ekey = o->dku_key;
		evalue = o->dku_value;
	}
	if (c->hint_keys && esize <= sizeof e && tn_rd(t, md_dict, h, 48) && entries_owner(t, h) == c->hint_keys &&
	    tn_rd(t, c->hint_entry, e, esize) && rd64(e, ekey) == c->hint_key)
		return rd64(e, evalue);
	uint64_t entry = 0, key = 0, v = tn_dict_get(t, md_dict, "_active", &entry, &key);
	c->hint_keys = 0;
	if (v && tn_rd(t, md_dict, h, 48)) {
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
	    !tn_rd(t, type, th, (size_t)(o->tp_dictoffset > o->tp_flags ? o->tp_dictoffset : o->tp_flags) + 8))
		return false;
	uint64_t flags = rd64(th, o->tp_flags);
	if (!(flags & (uint64_t)o->tpf_heaptype))
		return false;   /* Thread and its subclasses are classes */
	bool managed = o->tpf_managed_dict > 0 && (flags & (uint64_t)o->tpf_managed_dict);
	bool inline_values = o->tpf_inline_values > 0 && (flags & (uint64_t)o->tpf_inline_values);
	if (!managed) {          /* <= 3.10, or a 3.11+ class that is not */
		int64_t off = (int64_t)rd64(th, o->tp_dictoffset);
		return off > 0 && off < 4096 && tn_rd_ptr(t, obj + (uint64_t)off, &a->dict) && a->dict;
	}
	bool need_keys = false;
	if (inline_values && o->obj_inline_values > 0 && o->dv_valid >= 0) {   /* 3.13 */
		uint8_t vh[8];
		if (!tn_rd(t, obj + (uint64_t)o->obj_inline_values, vh, sizeof vh))
			return false;
		if (vh[o->dv_valid]) {
			a->values = obj + (uint64_t)o->obj_inline_values;
			need_keys = true;
		}
	}
	if (!a->values && o->obj_values_before > 0) {   /* 3.11: values, then dict, before the object */
		uint64_t slots[2];
		int32_t gap = o->obj_values_before - o->obj_dict_before;
		if (gap != 8 || !tn_rd(t, obj - (uint64_t)o->obj_values_before, slots, sizeof slots))
			return false;
		a->values = slots[0];
		a->dict = slots[1];
		need_keys = a->values != 0;
	} else if (!a->values && o->obj_dict_before > 0) {   /* 3.12: tagged; 3.13: the dict */
		uint64_t v;
		if (!tn_rd_ptr(t, obj - (uint64_t)o->obj_dict_before, &v))
			return false;
		if (t->py->rt.minor == 12 && (v & 1)) {   /* _PyDictOrValues_IsValues: stored as values - 1 */
			a->values = v + 1;
			need_keys = true;
		} else {
			a->dict = v;
		}
	}
	if (need_keys && (o->ht_cached_keys < 0 || !tn_rd_ptr(t, type + (uint64_t)o->ht_cached_keys, &a->keys)))
		return false;
	return a->dict || (a->values && a->keys);
}

/* obj.<name> from its instance attributes, 0 if absent or unreadable. */
static uint64_t attr(struct tn *t, uint64_t obj, const char *name)
{
	uint64_t type = 0;
	struct attrs a;
	struct tn_items it;
	uint64_t v = 0;
	if (!rm_ptr_ok(obj, 8) || !tn_rd_ptr(t, obj + (uint64_t)t->o->ob_type, &type) || !find_attrs(t, obj, type, &a))
		return 0;
	if (a.values ? tn_keys_items(t, a.keys, a.values, &it) : tn_dict_items(t, a.dict, &it)) {
		int i = tn_find_str(t, &it, name);
		v = i >= 0 ? it.val[i] : 0;
	}
	tn_items_free(&it);
	return v;
}

/* ------------------------------------------------------------ the name */

/* The str object s as UTF-8 into buf, control characters replaced and cut
 * at a character boundary.  0 if s is not a str. */
static bool is_str(struct tn *t, uint64_t s)
{
	uint64_t type = 0;
	return tn_rd_ptr(t, s + (uint64_t)t->o->ob_type, &type) &&
	       (type == t->py->rt.t_str || (t->py->rt.t_py2unicode && type == t->py->rt.t_py2unicode));
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

int py_thread_name(struct ember_python *py, const struct py_thread *th, char *buf, size_t len)
{
	if (!th || !th->tstate || !th->pthread || !layout_ok(py))
		return 0;
	struct tn t = { .py = py, .o = &py->rt.off, .c = py->tn };
	uint64_t md_dict = threading_dict(&t, th->interp);
	uint64_t active = md_dict ? active_dict(&t, md_dict) : 0;
	if (!active)
		return 0;
	struct tn_items it;
	uint64_t thread = 0;
	if (tn_dict_items(&t, active, &it)) {
		int i = tn_find_int(&t, &it, th->pthread);
		thread = i >= 0 ? it.val[i] : 0;
	}
	tn_items_free(&it);
	const char *field = py->rt.major == 2 ? "_Thread__name" : "_name";
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
