/* Code objects by remote address: decoded once (name, qualname, filename,
 * short filename, first line, pre-decoded line table), validated on every use
 * against the header words just read (name/filename/line-table/bytecode
 * pointers, first line, size, 3.12+ co_version) and the name's cached
 * hash, so a reused address gets a new id.  Ids are
 * indexes into an append-only array: valid until ember_python_close(). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "py_internal.h"

#define MAX_CODES (1u << 22)
#define MAX_STR_CHARS 4096
#define MAX_LINETABLE (1u << 20)
#define PREV_HOPS 16   /* older objects at one address looked at (~a batch's worth) */

/* --------------------------------------------------------------- strings */

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static bool pkg_dir(struct ember_python *py, const char *dir, size_t len)
{
	char p[4600];
	struct stat st;
	if (snprintf(p, sizeof p, "%s%.*s/__init__.py", py->root, (int)len, dir) >= (int)sizeof p)
		return false;
	return stat(p, &st) == 0;
}

/* py-spy's rule: strip the directories above the outermost package that
 * contains the file ("…/site-packages/numpy/core/x.py" -> "numpy/core/x.py",
 * "/home/u/script.py" -> "script.py").  Names the file system does not know
 * ("<string>", "<frozen …>", relative paths) are kept as they are. */
static const char *shorten(struct ember_python *py, const char *f)
{
	char p[4600];
	struct stat st;
	if (f[0] != '/' || snprintf(p, sizeof p, "%s%s", py->root, f) >= (int)sizeof p || stat(p, &st) != 0)
		return f;
	const char *end = strrchr(f, '/');     /* end of the containing directory */
	for (int k = 0; k < 64 && end > f; k++) {
		if (!pkg_dir(py, f, end - f))
			break;
		const char *up = end - 1;
		while (up > f && *up != '/')
			up--;
		end = up;
	}
	return end[0] == '/' ? end + 1 : end;
}

const char *py_intern(struct ember_python *py, const char *s, bool filename, const char **short_out)
{
	struct str_intern *t = &py->strs;
	if (t->n * 2 >= t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 1024;
		char **v = calloc(nc, sizeof *v), **sv = calloc(nc, sizeof *sv);
		if (!v || !sv) {
			free(v);
			free(sv);
			return NULL;
		}
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->v[i])
				continue;
			size_t h = fnv(t->v[i]) & (nc - 1);
			while (v[h])
				h = (h + 1) & (nc - 1);
			v[h] = t->v[i];
			sv[h] = t->shortv[i];
		}
		free(t->v);
		free(t->shortv);
		t->v = v;
		t->shortv = sv;
		t->cap = nc;
	}
	size_t h = fnv(s) & (t->cap - 1);
	while (t->v[h] && strcmp(t->v[h], s) != 0)
		h = (h + 1) & (t->cap - 1);
	if (!t->v[h]) {
		t->v[h] = strdup(s);
		if (!t->v[h])
			return NULL;
		t->n++;
	}
	if (filename && !t->shortv[h]) {
		const char *sh = shorten(py, t->v[h]);
		t->shortv[h] = (char *)sh;   /* points into t->v[h] */
	}
	if (short_out)
		*short_out = t->shortv[h] ? t->shortv[h] : t->v[h];
	return t->v[h];
}

size_t py_utf8_from_ucs(const void *data, size_t n, int kind, char *out, size_t cap)
{
	size_t o = 0;
	if (!cap)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t c;
		if (kind == 1)
			c = ((const uint8_t *)data)[i];
		else if (kind == 2) {
			uint16_t u;
			memcpy(&u, (const uint8_t *)data + 2 * i, 2);
			c = u;
		} else {
			memcpy(&c, (const uint8_t *)data + 4 * i, 4);
		}
		if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
			c = 0xfffd;   /* lone surrogate / invalid */
		uint8_t b[4];
		size_t k;
		if (c < 0x80) { b[0] = c; k = 1; }
		else if (c < 0x800) { b[0] = 0xc0 | c >> 6; b[1] = 0x80 | (c & 63); k = 2; }
		else if (c < 0x10000) { b[0] = 0xe0 | c >> 12; b[1] = 0x80 | ((c >> 6) & 63); b[2] = 0x80 | (c & 63); k = 3; }
		else { b[0] = 0xf0 | c >> 18; b[1] = 0x80 | ((c >> 12) & 63); b[2] = 0x80 | ((c >> 6) & 63); b[3] = 0x80 | (c & 63); k = 4; }
		if (o + k + 1 > cap)
			break;
		memcpy(out + o, b, k);
		o += k;
	}
	out[o] = 0;
	return o;
}

/* A read for decoding a code object: from the objects the copier took
 * with it at the sample when they hold the bytes (the object may be freed
 * by now), else from the target -- counted: then the code object must be
 * checked alive afterwards. */
static bool code_read(struct ember_python *py, uint64_t addr, void *buf, size_t len)
{
	if (py->objs && py_copier_obj_read(py->objs, addr, buf, len))
		return true;
	py->objs_missed++;
	return rm_read(py->pid, addr, buf, len, NULL, &py->st.syscalls);
}

/* Text of a str (PEP 393; Py2 str/unicode) as a malloc'ed UTF-8 string. */
char *py_read_string(struct ember_python *py, uint64_t addr)
{
	const struct py_offsets *o = &py->off;
	uint8_t hdr[128];
	uint8_t *data = NULL;
	char *res = NULL;
	if (!rm_ptr_ok(addr, 8) || py->str_hdr_len > sizeof hdr ||
	    !code_read(py, addr, hdr, py->str_hdr_len))
		return strdup("?");
	uint64_t type = rd64(hdr, o->ob_type);
	int64_t len;
	uint64_t at;
	int kind = 1;
	bool ascii = false;
	if (py->major == 2) {
		if (type == py->t_str) {              /* PyStringObject: bytes inline */
			len = (int64_t)rd64(hdr, o->ob_size);
			at = addr + o->bytes_sval;
			ascii = true;                     /* copied as is (normally UTF-8) */
		} else if (type == py->t_py2unicode && py->t_py2unicode) {
			len = (int64_t)rd64(hdr, o->uni_length);
			at = rd64(hdr, o->uni_str);
			kind = o->unicode_size;
		} else {
			return strdup("?");
		}
	} else {
		if (type != py->t_str)
			return strdup("?");
		len = (int64_t)rd64(hdr, o->str_length);
		uint32_t state = (uint32_t)rd32(hdr, o->str_state);
		kind = (state >> 2) & 7;
		bool compact = (state >> 5) & 1;
		ascii = (state >> 6) & 1;
		bool ready = py->minor >= 12 || ((state >> 7) & 1);
		if ((kind != 1 && kind != 2 && kind != 4) || !ready)
			return strdup("?");
		if (compact)
			at = addr + (ascii ? o->str_ascii_data : o->str_compact_data);
		else
			at = rd64(hdr, o->str_compact_data);   /* PyUnicodeObject.data */
	}
	if (len < 0)
		return strdup("?");
	if (len > MAX_STR_CHARS)
		len = MAX_STR_CHARS;
	size_t nbytes = (size_t)len * kind;
	data = malloc(nbytes + 1);
	res = malloc((size_t)len * 4 + 1);
	if (!data || !res || (nbytes && !code_read(py, at, data, nbytes))) {
		free(data);
		free(res);
		return strdup("?");
	}
	if (ascii && kind == 1) {
		memcpy(res, data, nbytes);
		res[nbytes] = 0;
		/* Py2 str may legitimately hold NULs; stop there */
	} else {
		py_utf8_from_ucs(data, (size_t)len, kind, res, (size_t)len * 4 + 1);
	}
	free(data);
	return res;
}

/* Bytes object (Py3 bytes / Py2 str) payload, malloc'ed; *n its length. */
static uint8_t *read_bytes(struct ember_python *py, uint64_t addr, size_t *n)
{
	const struct py_offsets *o = &py->off;
	uint8_t hdr[64];
	*n = 0;
	if (!rm_ptr_ok(addr, 8) || !code_read(py, addr, hdr, (size_t)o->bytes_sval) ||
	    rd64(hdr, o->ob_type) != py->t_bytes)
		return NULL;
	int64_t len = (int64_t)rd64(hdr, o->ob_size);
	if (len < 0 || len > MAX_LINETABLE)
		return NULL;
	uint8_t *b = malloc(len ? len : 1);
	if (!b || (len && !code_read(py, addr + o->bytes_sval, b, len))) {
		free(b);
		return NULL;
	}
	*n = (size_t)len;
	return b;
}

static int64_t bytes_len(struct ember_python *py, uint64_t addr)
{
	const struct py_offsets *o = &py->off;
	uint8_t hdr[24];
	if (!rm_ptr_ok(addr, 8) || !code_read(py, addr, hdr, 24) ||
	    rd64(hdr, o->ob_type) != py->t_bytes)
		return -1;
	return (int64_t)rd64(hdr, o->ob_size);
}

/* --------------------------------------------------------------- the cache */

static uint64_t hash_addr(uint64_t a)
{
	return (a >> 3) * 0x9E3779B97F4A7C15ull;
}

static bool id_map_put(struct ember_python *py, uint64_t addr, uint32_t id)
{
	if ((py->code_hash_n + 1) * 2 > py->code_hash_cap) {
		size_t nc = py->code_hash_cap ? py->code_hash_cap * 2 : 1024;
		uint64_t *k = calloc(nc, sizeof *k);
		uint32_t *v = calloc(nc, sizeof *v);
		if (!k || !v) {
			free(k);
			free(v);
			return false;
		}
		for (size_t i = 0; i < py->code_hash_cap; i++) {
			if (!py->code_keys[i])
				continue;
			size_t h = hash_addr(py->code_keys[i]) & (nc - 1);
			while (k[h])
				h = (h + 1) & (nc - 1);
			k[h] = py->code_keys[i];
			v[h] = py->code_ids[i];
		}
		free(py->code_keys);
		free(py->code_ids);
		py->code_keys = k;
		py->code_ids = v;
		py->code_hash_cap = nc;
	}
	size_t h = hash_addr(addr) & (py->code_hash_cap - 1);
	while (py->code_keys[h] && py->code_keys[h] != addr)
		h = (h + 1) & (py->code_hash_cap - 1);
	if (!py->code_keys[h])
		py->code_hash_n++;
	py->code_keys[h] = addr;
	py->code_ids[h] = id;
	return true;
}

static uint32_t id_map_get(const struct ember_python *py, uint64_t addr)
{
	if (!py->code_hash_cap)
		return 0;
	size_t h = hash_addr(addr) & (py->code_hash_cap - 1);
	while (py->code_keys[h]) {
		if (py->code_keys[h] == addr)
			return py->code_ids[h];
		h = (h + 1) & (py->code_hash_cap - 1);
	}
	return 0;
}

/* A str's hash is -1 until computed; a name's is computed when it is
 * interned, as code objects' names are.  0 (a rare real hash) and -1 are
 * "not known" and agree with anything. */
static uint64_t known_hash(uint64_t h)
{
	return h == UINT64_MAX ? 0 : h;
}

static bool key_matches(const struct ember_python *py, const struct py_code_entry *c, const uint8_t *h,
			uint64_t name_hash)
{
	const struct py_offsets *o = &py->off;
	name_hash = known_hash(name_hash);
	return rd64(h, o->co_name) == c->k_name && rd64(h, o->co_filename) == c->k_filename &&
	       (!name_hash || !c->k_name_hash || name_hash == c->k_name_hash) &&
	       rd64(h, o->co_linetable) == c->k_linetable && rd32(h, o->co_firstlineno) == c->k_firstlineno &&
	       (o->co_code < 0 || rd64(h, o->co_code) == c->k_code) &&
	       (o->co_version < 0 || (uint32_t)rd32(h, o->co_version) == c->k_version) &&
	       (o->co_code_adaptive < 0 || (int64_t)rd64(h, o->ob_size) == c->k_size);
}

/* Whether the code object at addr is, now, alive and the one c describes.
 * Freed memory keeps most of its old bytes (the type and the name
 * pointers too), so "unchanged" is not enough: a live object has a
 * reference count from 1 to 2^32 (3.12+ immortal ones included), while
 * pymalloc's free list puts a pointer (or NULL) there and glibc's its own
 * links over the first words.  ob_refcnt is at offset 0 in every build
 * ember accepts (no Py_TRACE_REFS). */
static bool still_alive(struct ember_python *py, const struct py_code_entry *c, uint64_t addr)
{
	/* Every byte read for it so far is a copy of the sample's instant
	 * (copier.h): consistent, whatever became of it since. */
	if (py->objs && !py->objs_missed)
		return true;
	uint8_t now[512];
	if (py->co_len > sizeof now || !rm_read(py->pid, addr, now, py->co_len, NULL, &py->st.syscalls))
		return false;
	uint64_t refcnt = rd64(now, 0);
	return refcnt >= 1 && refcnt < (1ull << 32) && rd64(now, py->off.ob_type) == py->t_code &&
	       key_matches(py, c, now, 0);
}

/* Adds c to the id-indexed array: its id, 0 when out of memory. */
static uint32_t codes_append(struct ember_python *py, struct py_code_entry *c)
{
	if (py->ncodes == py->codes_cap) {
		size_t nc = py->codes_cap ? py->codes_cap * 2 : 256;
		struct py_code_entry **v = realloc(py->codes, nc * sizeof *v);
		if (!v)
			return 0;
		py->codes = v;
		py->codes_cap = nc;
	}
	py->codes[py->ncodes++] = c;
	return (uint32_t)py->ncodes;
}

/* <= 3.10: is the first argument named self or cls?  (cold path) */
static uint8_t first_arg_kind(struct ember_python *py, const uint8_t *h)
{
	const struct py_offsets *o = &py->off;
	if (o->co_varnames < 0 || o->co_argcount < 0 || rd32(h, o->co_argcount) < 1)
		return PY_ARG_NONE;
	uint64_t names = rd64(h, o->co_varnames), first = 0;
	if (!rm_ptr_ok(names, 8) ||
	    !rm_read(py->pid, names + (uint64_t)o->tuple_item, &first, 8, NULL, &py->st.syscalls))
		return PY_ARG_NONE;
	char *name = rm_ptr_ok(first, 8) ? py_read_string(py, first) : NULL;
	uint8_t kind = !name ? PY_ARG_NONE : strcmp(name, "self") == 0 ? PY_ARG_SELF
					   : strcmp(name, "cls") == 0 ? PY_ARG_CLS : PY_ARG_NONE;
	free(name);
	return kind;
}

static uint64_t var_hash(uint32_t base, uint64_t type)
{
	return (type ^ ((uint64_t)base << 40) ^ base) * 0x9e3779b97f4a7c15ull;
}

static uint32_t var_get(const struct ember_python *py, uint32_t base, uint64_t type)
{
	if (!py->var_cap)
		return 0;
	for (size_t h = (var_hash(base, type) >> 20) & (py->var_cap - 1);; h = (h + 1) & (py->var_cap - 1)) {
		uint32_t id = py->var_ids[h];
		if (!id)
			return 0;
		const struct py_code_entry *c = py->codes[id - 1];
		if (c->base == base && c->v_type == type)
			return id;
	}
}

static bool var_put(struct ember_python *py, uint32_t id)
{
	if ((py->var_n + 1) * 2 > py->var_cap) {
		size_t nc = py->var_cap ? py->var_cap * 2 : 256;
		uint32_t *v = calloc(nc, sizeof *v);
		if (!v)
			return false;
		for (size_t i = 0; i < py->var_cap; i++) {
			if (!py->var_ids[i])
				continue;
			const struct py_code_entry *c = py->codes[py->var_ids[i] - 1];
			size_t h = (var_hash(c->base, c->v_type) >> 20) & (nc - 1);
			while (v[h])
				h = (h + 1) & (nc - 1);
			v[h] = py->var_ids[i];
		}
		free(py->var_ids);
		py->var_ids = v;
		py->var_cap = nc;
	}
	const struct py_code_entry *c = py->codes[id - 1];
	size_t h = (var_hash(c->base, c->v_type) >> 20) & (py->var_cap - 1);
	while (py->var_ids[h]) {
		const struct py_code_entry *o = py->codes[py->var_ids[h] - 1];
		if (o->base == c->base && o->v_type == c->v_type)
			break;   /* replaces a stale variant (the type's name moved) */
		h = (h + 1) & (py->var_cap - 1);
	}
	if (!py->var_ids[h])
		py->var_n++;
	py->var_ids[h] = id;
	return true;
}

uint32_t py_code_variant_known(struct ember_python *py, uint32_t base, uint64_t type)
{
	uint32_t id = var_get(py, base, type);
	return id ? id : base;
}

uint32_t py_code_variant(struct ember_python *py, uint32_t base, uint64_t type, uint64_t tp_name)
{
	uint32_t id = var_get(py, base, type);
	if (id && py->codes[id - 1]->v_tp_name == tp_name)
		return id;
	/* Cold path: the class's name, a C string (static types: "module.Name"). */
	char buf[129];
	if (!rm_ptr_ok(tp_name, 1) || !rm_read(py->pid, tp_name, buf, sizeof buf - 1, NULL, &py->st.syscalls))
		return base;
	buf[sizeof buf - 1] = 0;
	size_t len = strlen(buf);
	if (!len || len == sizeof buf - 1)
		return base;
	for (size_t i = 0; i < len; i++)
		if (!(buf[i] == '_' || buf[i] == '.' || (buf[i] >= '0' && buf[i] <= '9') ||
		      (buf[i] >= 'A' && buf[i] <= 'Z') || (buf[i] >= 'a' && buf[i] <= 'z') || (uint8_t)buf[i] >= 0x80))
			return base;   /* not a type's name: the argument was no instance */
	const char *cls = strrchr(buf, '.');
	cls = cls ? cls + 1 : buf;
	const struct py_code_entry *b = py->codes[base - 1];
	char qual[512];
	snprintf(qual, sizeof qual, "%s.%s", cls, b->pub.name);
	struct py_code_entry *c = calloc(1, sizeof *c);
	if (!c || py->ncodes >= MAX_CODES)
		goto fail;
	c->pub = b->pub;
	c->pub.qualname = py_intern(py, qual, false, NULL);
	if (!c->pub.qualname)
		goto fail;
	c->addr = b->addr;
	c->base = base;
	c->v_type = type;
	c->v_tp_name = tp_name;
	c->lines.firstlineno = b->lines.firstlineno;
	id = codes_append(py, c);
	if (!id)
		goto fail;
	var_put(py, id);
	return id;
fail:
	free(c);
	return base;
}

/* The object at an address when a sample older than the entry id was
 * taken: ember reads samples in batches, and a record that woke it may have
 * had newer objects named (copier.c learn_codes) ahead of older
 * samples of the batch.  The newest entry first seen at or before the
 * sample, if its words match: the allocator puts the same words back (an
 * older generation's name, file and line table at the same addresses
 * again), so a match alone does not tell.  0: none. */
static uint32_t older_object(struct ember_python *py, uint32_t id, const uint8_t *h, uint64_t name_hash)
{
	uint32_t newer = id, old = py->codes[id - 1]->prev;
	for (int hops = 0; old && hops < PREV_HOPS; hops++, newer = old, old = py->codes[old - 1]->prev) {
		if (py->read_ns >= py->codes[newer - 1]->born_ns)
			break;
		if (py->codes[old - 1]->born_ns <= py->read_ns && key_matches(py, py->codes[old - 1], h, name_hash))
			return old;
	}
	return 0;
}

uint64_t py_code_name_hash(struct ember_python *py, const uint8_t *h)
{
	uint64_t name = rd64(h, py->off.co_name);
	const uint8_t *p = py->str_hash_off && rm_ptr_ok(name, 8) ? snap_get(py, name + py->str_hash_off, 8) : NULL;
	return p ? rd64(p, 0) : 0;
}

uint32_t py_code_get(struct ember_python *py, uint64_t addr, const uint8_t *h, uint64_t name_hash)
{
	const struct py_offsets *o = &py->off;
	if (rd64(h, o->ob_type) != py->t_code)
		return 0;
	uint32_t id = id_map_get(py, addr);
	uint32_t old = id && py->read_ns < py->codes[id - 1]->born_ns ? older_object(py, id, h, name_hash) : 0;
	if (old)
		return old;
	if (id && key_matches(py, py->codes[id - 1], h, name_hash)) {
		py->codes[id - 1]->checked_ns = py->read_ns;
		return id;
	}
	if (id)
		py->st.code_revalidations_failed++;
	if (py->ncodes >= MAX_CODES)
		return 0;

	/* Cold path: decode a new code object. */
	struct py_code_entry *c = calloc(1, sizeof *c);
	if (!c)
		return 0;
	c->addr = addr;
	c->prev = id;
	c->born_ns = c->checked_ns = py->read_ns;
	c->k_name = rd64(h, o->co_name);
	c->k_filename = rd64(h, o->co_filename);
	c->k_linetable = rd64(h, o->co_linetable);
	c->k_firstlineno = rd32(h, o->co_firstlineno);
	c->k_code = o->co_code >= 0 ? rd64(h, o->co_code) : 0;
	c->k_name_hash = known_hash(name_hash);
	c->k_version = o->co_version >= 0 ? (uint32_t)rd32(h, o->co_version) : 0;
	c->k_size = (int64_t)rd64(h, o->ob_size);
	c->firsttraceable = o->co_firsttraceable >= 0 ? rd32(h, o->co_firsttraceable) : 0;
	/* CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR */
	c->generator = o->co_flags >= 0 && (rd32(h, o->co_flags) & (0x20 | 0x80 | 0x100 | 0x200)) != 0;
	py->objs_missed = 0;
	/* The frame that runs it may be gone by now (always so for a header
	 * copied at the sample), and the code object with it (a module's code,
	 * once imported): decode only if it is alive and unchanged, before and
	 * after its names are read, else the frame stays unknown. */
	if (!still_alive(py, c, addr)) {
		py_copier_forget_code(py, addr);
		free(c);
		return 0;
	}
	if (o->co_code_adaptive >= 0)
		c->ninstr_bytes = c->k_size >= 0 ? c->k_size * 2 : -1;
	else
		c->ninstr_bytes = bytes_len(py, c->k_code);

	char *name = py_read_string(py, c->k_name);
	char *qual = o->co_qualname >= 0 ? py_read_string(py, rd64(h, o->co_qualname)) : NULL;
	char *file = py_read_string(py, c->k_filename);
	const char *shortf = NULL;
	c->pub.name = name ? py_intern(py, name, false, NULL) : NULL;
	c->pub.qualname = qual ? py_intern(py, qual, false, NULL) : c->pub.name;
	c->pub.filename = file ? py_intern(py, file, true, &shortf) : NULL;
	c->pub.short_filename = shortf ? shortf : c->pub.filename;
	c->pub.first_line = c->k_firstlineno > 0 ? (uint32_t)c->k_firstlineno : 0;
	free(name);
	free(qual);
	free(file);
	size_t n;
	uint8_t *table = read_bytes(py, c->k_linetable, &n);   /* (before the check: it may be read live) */
	if (!c->pub.name || !c->pub.qualname || !c->pub.filename || !still_alive(py, c, addr)) {
		py_copier_forget_code(py, addr);
		free(table);
		free(c);
		return 0;
	}
	c->first_arg = first_arg_kind(py, h);
	if (!table || py_lines_build(&c->lines, py->lt_kind, table, n, c->k_firstlineno) < 0) {
		py_lines_free(&c->lines);
		c->lines.firstlineno = c->k_firstlineno;   /* every lookup: no line */
	}
	free(table);

	if (o->co_code_adaptive >= 0)
		c->bc_start = addr + (uint64_t)o->co_code_adaptive;
	else if (rm_ptr_ok(c->k_code, 8))
		c->bc_start = c->k_code + (uint64_t)o->bytes_sval;
	id = codes_append(py, c);
	if (!id) {
		py_lines_free(&c->lines);
		free(c);
		return 0;
	}
	py_bc_add(py, id);
	if (!id_map_put(py, addr, id))
		return id;   /* usable now, just not cached */
	py->st.codes++;
	return id;
}

bool py_code_still_there(struct ember_python *py, uint32_t id)
{
	struct py_code_entry *c = py->codes[py_code_base(py, id) - 1];
	uint8_t h[512];
	int err = 0;
	if (py->co_len > sizeof h || !rm_read(py->pid, c->addr, h, py->co_len, &err, &py->st.syscalls))
		return false;
	if (rd64(h, py->off.ob_type) != py->t_code || !key_matches(py, c, h, 0))
		return false;
	c->checked_ns = py->read_ns;
	return true;
}

uint32_t py_code_recent(struct ember_python *py, uint64_t addr)
{
	uint32_t id = id_map_get(py, addr);
	if (id && py->read_ns - py->codes[id - 1]->checked_ns < (uint64_t)py->opts.code_recheck_ms * 1000000)
		return id;
	return 0;
}

const struct ember_py_code *ember_python_code(const struct ember_python *py, uint32_t code)
{
	if (!code || code > py->ncodes)
		return NULL;
	return &py->codes[code - 1]->pub;
}

void py_code_free_all(struct ember_python *py)
{
	for (size_t i = 0; i < py->ncodes; i++) {
		py_lines_free(&py->codes[i]->lines);
		free(py->codes[i]);
	}
	free(py->codes);
	free(py->var_ids);
	free(py->code_keys);
	free(py->code_ids);
	for (size_t i = 0; i < py->strs.cap; i++)
		free(py->strs.v[i]);
	free(py->strs.v);
	free(py->strs.shortv);
}
