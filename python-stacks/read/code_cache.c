/* Code objects by remote address: decoded once (name, qualname, filename,
 * short filename, first line, pre-decoded line table), validated on every use
 * against the header words just read (name/filename/line-table/bytecode
 * pointers, first line, size, 3.12+ co_version) and the name's cached
 * hash, so a reused address gets a new id.  Ids are indexes into an
 * append-only array: valid until ember_python_close().  <= 3.10 methods
 * get an id per class their first argument had (class variants). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copier_record.h"
#include "grow.h"
#include "hash.h"
#include "py_read.h"

/* More code units than any code object has: a size read as this is garbage. */
#define PY_MAX_CODE_UNITS ((int64_t)1 << 30)

#define MAX_CODES (1u << 22)
#define PREV_HOPS 16   /* older objects at one address looked at (~a batch's worth) */

int py_code_init(struct ember_python *py)
{
	struct py_code_cache *c = py->code;
	if (ember_idtab_init(&c->by_addr) != 0)
		return -1;
	if (ember_idtab_init(&c->variants) != 0) {
		ember_idtab_free(&c->by_addr);
		return -1;
	}
	return 0;
}

void py_code_free(struct ember_python *py)
{
	struct py_code_cache *c = py->code;
	for (size_t i = 0; i < c->n; i++) {
		py_lines_free(&c->v[i]->lines);
		free(c->v[i]);
	}
	free(c->v);
	free(c->bc);
	ember_idtab_free(&c->by_addr);
	ember_idtab_free(&c->variants);
	memset(c, 0, sizeof *c);
}

void py_code_on_unnamed(struct ember_python *py, void (*fn)(struct ember_python *py, uint64_t addr))
{
	py->code->on_unnamed = fn;
}

void py_code_at(struct ember_python *py, uint64_t ns)
{
	py->code->now_ns = ns;
}

const struct ember_py_code *ember_python_code(const struct ember_python *py, uint32_t code)
{
	if (!code || code > py->code->n)
		return NULL;
	return &py_code(py, code)->pub;
}

/* ------------------------------------------------------------ the tables */

static bool addr_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct py_code_cache *c = ctx;
	return c->v[id - 1]->addr == *(const uint64_t *)key;
}

static uint32_t by_addr(const struct ember_python *py, uint64_t addr)
{
	uint32_t id = ember_idtab_find(&py->code->by_addr, ember_hash_mix(addr), addr_eq, py->code, &addr);
	return id == UINT32_MAX ? 0 : id;
}

/* id is the newest object at its address (replacing old, 0: none). */
static bool by_addr_put(struct ember_python *py, uint32_t id, uint32_t old)
{
	uint64_t h = ember_hash_mix(py_code(py, id)->addr);
	if (ember_idtab_insert(&py->code->by_addr, h, id) != 0)
		return false;
	if (old)
		ember_idtab_remove(&py->code->by_addr, h, old);
	return true;
}

struct variant_key {
	uint32_t base;
	uint64_t type;
};

static bool variant_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct py_code_cache *c = ctx;
	const struct variant_key *k = key;
	return c->v[id - 1]->base == k->base && c->v[id - 1]->v_type == k->type;
}

static uint32_t variant_get(const struct ember_python *py, uint32_t base, uint64_t type)
{
	struct variant_key k = { base, type };
	uint32_t id = ember_idtab_find(&py->code->variants, ember_hash_pair(base, type), variant_eq, py->code, &k);
	return id == UINT32_MAX ? 0 : id;
}

/* Adds c to the id-indexed array: its id, 0 when out of memory. */
static uint32_t codes_append(struct ember_python *py, struct py_code_entry *c)
{
	struct py_code_cache *cc = py->code;
	if (EMBER_GROW(cc->v, cc->cap, cc->n + 1) != 0)
		return 0;
	cc->v[cc->n++] = c;
	return (uint32_t)cc->n;
}

/* ------------------------------------------------------------ validation */

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
	const struct py_offsets *o = &py->rt.off;
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
	 * (copier_record.h): consistent, whatever became of it since. */
	if (py_strings_all_copied(py))
		return true;
	uint8_t now[512];
	if (py->rt.co_len > sizeof now || !rm_read(py->pid, addr, now, py->rt.co_len, NULL, &py->syscalls))
		return false;
	uint64_t refcnt = rd64(now, 0);
	return refcnt >= 1 && refcnt < (1ull << 32) && rd64(now, py->rt.off.ob_type) == py->rt.t_code &&
	       key_matches(py, c, now, 0);
}

/* The object at an address when a sample older than the entry id was
 * taken: ember reads samples in batches, and a record that woke it may have
 * had newer objects named (copier_intake.c) ahead of older samples of the
 * batch.  The newest entry first seen at or before the sample, if its words
 * match: the allocator puts the same words back (an older generation's
 * name, file and line table at the same addresses again), so a match alone
 * does not tell.  0: none. */
static uint32_t older_object(struct ember_python *py, uint32_t id, const uint8_t *h, uint64_t name_hash)
{
	uint64_t now = py->code->now_ns;
	uint32_t newer = id, old = py_code(py, id)->prev;
	for (int hops = 0; old && hops < PREV_HOPS; hops++, newer = old, old = py_code(py, old)->prev) {
		if (now >= py_code(py, newer)->born_ns)
			break;
		if (py_code(py, old)->born_ns <= now && key_matches(py, py_code(py, old), h, name_hash))
			return old;
	}
	return 0;
}

/* ------------------------------------------------------------ decoding */

/* <= 3.10: is the first argument named self or cls?  (cold path) */
static uint8_t first_arg_kind(struct ember_python *py, const uint8_t *h)
{
	const struct py_offsets *o = &py->rt.off;
	if (o->co_varnames < 0 || o->co_argcount < 0 || rd32(h, o->co_argcount) < 1)
		return PY_ARG_NONE;
	uint64_t names = rd64(h, o->co_varnames), first = 0;
	if (!rm_ptr_ok(names, 8) ||
	    !rm_read(py->pid, names + (uint64_t)o->tuple_item, &first, 8, NULL, &py->syscalls))
		return PY_ARG_NONE;
	char *name = rm_ptr_ok(first, 8) ? py_read_string(py, first) : NULL;
	uint8_t kind = !name ? PY_ARG_NONE : strcmp(name, "self") == 0 ? PY_ARG_SELF
					   : strcmp(name, "cls") == 0 ? PY_ARG_CLS : PY_ARG_NONE;
	free(name);
	return kind;
}

/* A new entry for the code object at addr whose header is h: its key words. */
static struct py_code_entry *entry_new(struct ember_python *py, uint64_t addr, const uint8_t *h, uint64_t name_hash,
				       uint32_t prev)
{
	const struct py_offsets *o = &py->rt.off;
	struct py_code_entry *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->addr = addr;
	c->prev = prev;
	c->born_ns = c->checked_ns = py->code->now_ns;
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
	return c;
}

/* Its names, as interned strings: false when one cannot be had. */
static bool read_names(struct ember_python *py, struct py_code_entry *c, const uint8_t *h)
{
	const struct py_offsets *o = &py->rt.off;
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
	return c->pub.name && c->pub.qualname && c->pub.filename;
}

/* Decode the code object at addr (cold path): its entry, or NULL when it
 * is gone or changed (its frame stays unknown). */
static struct py_code_entry *decode(struct ember_python *py, uint64_t addr, const uint8_t *h, uint64_t name_hash,
				    uint32_t prev)
{
	const struct py_offsets *o = &py->rt.off;
	struct py_code_entry *c = entry_new(py, addr, h, name_hash, prev);
	if (!c)
		return NULL;
	py_strings_begin(py);
	/* The frame that runs it may be gone by now (always so for a header
	 * copied at the sample), and the code object with it (a module's code,
	 * once imported): decode only if it is alive and unchanged, before and
	 * after its names are read. */
	if (!still_alive(py, c, addr)) {
		free(c);
		return NULL;
	}
	/* k_size is the target's word for the number of code units: one past
	 * any real code object's size is garbage, not a length to double */
	c->ninstr_bytes = o->co_code_adaptive >= 0 ? (c->k_size >= 0 && c->k_size <= PY_MAX_CODE_UNITS ? c->k_size * 2 : -1)
						   : py_bytes_len(py, c->k_code);
	bool named = read_names(py, c, h);
	size_t n;
	uint8_t *table = py_read_bytes(py, c->k_linetable, &n);   /* (before the check: it may be read live) */
	if (!named || !still_alive(py, c, addr)) {
		free(table);
		free(c);
		return NULL;
	}
	c->first_arg = first_arg_kind(py, h);
	if (!table || py_lines_build(&c->lines, py->rt.lt_kind, table, n, c->k_firstlineno) < 0) {
		py_lines_free(&c->lines);
		c->lines.firstlineno = c->k_firstlineno;   /* every lookup: no line */
	}
	free(table);
	if (o->co_code_adaptive >= 0)
		c->bc_start = addr + (uint64_t)o->co_code_adaptive;
	else if (rm_ptr_ok(c->k_code, 8))
		c->bc_start = c->k_code + (uint64_t)o->bytes_sval;
	return c;
}

uint64_t py_code_name_hash(struct ember_python *py, const uint8_t *h)
{
	uint64_t name = rd64(h, py->rt.off.co_name);
	uint32_t at = py->rt.str_hash_off;
	const uint8_t *p = at && rm_ptr_ok(name, 8) ? snap_get(py, name + at, 8) : NULL;
	return p ? rd64(p, 0) : 0;
}

uint32_t py_code_get(struct ember_python *py, uint64_t addr, const uint8_t *h, uint64_t name_hash)
{
	struct py_code_cache *cc = py->code;
	if (rd64(h, py->rt.off.ob_type) != py->rt.t_code)
		return 0;
	uint32_t id = by_addr(py, addr);
	uint32_t old = id && cc->now_ns < py_code(py, id)->born_ns ? older_object(py, id, h, name_hash) : 0;
	if (old)
		return old;
	if (id && key_matches(py, py_code(py, id), h, name_hash)) {
		py_code(py, id)->checked_ns = cc->now_ns;
		return id;
	}
	if (id)
		cc->revalidations_failed++;
	if (cc->n >= MAX_CODES)
		return 0;
	struct py_code_entry *c = decode(py, addr, h, name_hash, id);
	if (!c) {
		/* Gone before ember could name it: whoever keeps addresses of
		 * code objects seen (the copier) must take it as new again. */
		if (cc->on_unnamed)
			cc->on_unnamed(py, addr);
		return 0;
	}
	uint32_t nid = codes_append(py, c);
	if (!nid) {
		py_lines_free(&c->lines);
		free(c);
		return 0;
	}
	py_bc_add(py, nid);
	if (!by_addr_put(py, nid, id))
		return nid;   /* usable now, just not cached */
	cc->created++;
	return nid;
}

uint32_t py_code_from_record(struct ember_python *py, const struct ember_copier_record *rec, uint64_t addr,
			     const uint8_t *hdr, uint64_t name_hash)
{
	py_code_at(py, rec->time_ns);
	py_strings_source(py, rec);
	uint32_t id = py_code_get(py, addr, hdr, name_hash);
	py_strings_source(py, NULL);
	return id;
}

int py_code_line(struct ember_python *py, uint32_t id, int64_t addr)
{
	struct py_code_entry *c = py_code(py, id);
	if (addr >= 0 && c->ninstr_bytes >= 0 && addr >= c->ninstr_bytes)
		return -2;   /* outside the code: torn */
	if (c->memo_addr1 == addr + 1)
		return c->memo_line;
	int l = py_lines_lookup(&c->lines, (int)addr);
	c->memo_addr1 = addr + 1;
	c->memo_line = l < 0 ? 0 : l;
	return c->memo_line;
}

bool py_code_still_there(struct ember_python *py, uint32_t id)
{
	struct py_code_entry *c = py_code(py, py_code_base(py, id));
	uint8_t h[512];
	int err = 0;
	if (py->rt.co_len > sizeof h || !rm_read(py->pid, c->addr, h, py->rt.co_len, &err, &py->syscalls))
		return false;
	if (rd64(h, py->rt.off.ob_type) != py->rt.t_code || !key_matches(py, c, h, 0))
		return false;
	c->checked_ns = py->code->now_ns;
	return true;
}

uint32_t py_code_recent(struct ember_python *py, uint64_t addr)
{
	uint32_t id = by_addr(py, addr);
	if (id && py->code->now_ns - py_code(py, id)->checked_ns < (uint64_t)py->opts.code_recheck_ms * 1000000)
		return id;
	return 0;
}

/* ------------------------------------------------------------ class variants */

uint32_t py_code_variant_known(struct ember_python *py, uint32_t base, uint64_t type)
{
	uint32_t id = variant_get(py, base, type);
	return id ? id : base;
}

/* The class named by the type name at tp_name ("module.Name": "Name"),
 * into buf; false if it does not read as a type's name. */
static bool class_name(struct ember_python *py, uint64_t tp_name, char *buf, size_t size, const char **cls)
{
	if (!rm_ptr_ok(tp_name, 1) || !rm_read(py->pid, tp_name, buf, size - 1, NULL, &py->syscalls))
		return false;
	buf[size - 1] = 0;
	size_t len = strlen(buf);
	if (!len || len == size - 1)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(buf[i] == '_' || buf[i] == '.' || (buf[i] >= '0' && buf[i] <= '9') ||
		      (buf[i] >= 'A' && buf[i] <= 'Z') || (buf[i] >= 'a' && buf[i] <= 'z') || (uint8_t)buf[i] >= 0x80))
			return false;   /* not a type's name: the argument was no instance */
	const char *dot = strrchr(buf, '.');
	*cls = dot ? dot + 1 : buf;
	return true;
}

uint32_t py_code_variant(struct ember_python *py, uint32_t base, uint64_t type, uint64_t tp_name)
{
	uint32_t id = variant_get(py, base, type);
	if (id && py_code(py, id)->v_tp_name == tp_name)
		return id;
	/* Cold path: the class's name, a C string (static types: "module.Name"). */
	char buf[129], qual[512];
	const char *cls;
	if (!class_name(py, tp_name, buf, sizeof buf, &cls))
		return base;
	const struct py_code_entry *b = py_code(py, base);
	snprintf(qual, sizeof qual, "%s.%s", cls, b->pub.name);
	struct py_code_entry *c = calloc(1, sizeof *c);
	if (!c || py->code->n >= MAX_CODES)
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
	uint32_t nid = codes_append(py, c);
	if (!nid)
		goto fail;
	/* (replaces a stale variant: the type's name moved) */
	if (ember_idtab_insert(&py->code->variants, ember_hash_pair(base, type), nid) == 0 && id)
		ember_idtab_remove(&py->code->variants, ember_hash_pair(base, type), id);
	return nid;
fail:
	free(c);
	return base;
}
