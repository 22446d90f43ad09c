/* The keys reports count samples under (report.h): one table for `report`,
 * `top` and `diff`, a key's identity and its label built from a frame by the
 * table's rule. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile_internal.h"

/* What an empty name, module or file shows as. */
static const char unknown_text[] = "[unknown]";

struct key {
	const char *ident;     /* interned identity bytes: equal keys, equal pointer */
	const char *label;     /* interned display text */
};

struct ember_keys {
	enum ember_report_key by;
	enum ember_key_rule rule;
	struct ember_strtab *strings;
	struct ember_idtab index;
	struct key *keys;
	size_t nkeys, cap;
	char *buf;             /* scratch for building an identity or a label */
	size_t buf_len, buf_cap;
};

static bool key_eq(const void *ctx, uint32_t id, const void *ident)
{
	return ((const struct ember_keys *)ctx)->keys[id].ident == ident;
}

static int buf_put(struct ember_keys *k, const char *s, size_t n)
{
	if (ember_grow((void **)&k->buf, &k->buf_cap, 1, k->buf_len + n + 1) < 0)
		return -1;
	memcpy(k->buf + k->buf_len, s, n);
	k->buf_len += n;
	return 0;
}

static int buf_puts(struct ember_keys *k, const char *s)
{
	return buf_put(k, s, strlen(s));
}

static int buf_putu(struct ember_keys *k, uint32_t v)
{
	char num[16];
	int n = snprintf(num, sizeof(num), "%" PRIu32, v);

	return buf_put(k, num, (size_t)n);
}

/* The scratch buffer, interned; NULL on OOM. */
static const char *buf_intern(struct ember_keys *k)
{
	return ember_strtab_intern(k->strings, k->buf ? k->buf : "", k->buf_len);
}

static const char *shown(const char *s)
{
	return *s ? s : unknown_text;
}

/* What a frame's module key is: a Python frame's file, else its module. */
static const char *module_of(const struct ember_frame *f)
{
	return f->kind == EMBER_FRAME_PYTHON ? f->file : f->module;
}

/* The identity of f's key in k->buf.  Embedded NULs separate the fields, so
 * "a" + "bc" never equals "ab" + "c". */
static int build_ident(struct ember_keys *k, const struct ember_frame *f)
{
	bool matching = k->rule == EMBER_KEYS_MATCHING;
	bool by_line = k->by == EMBER_REPORT_BY_LINE;

	k->buf_len = 0;
	if (k->by == EMBER_REPORT_BY_MODULE)
		return buf_puts(k, matching ? shown(module_of(f)) : module_of(f));
	if (!matching) {
		char kind = (char)('0' + f->kind);
		if (buf_put(k, &kind, 1) < 0 || buf_put(k, "", 1) < 0)
			return -1;
	}
	if (buf_puts(k, matching ? shown(f->name) : f->name) < 0)
		return -1;
	if ((!matching || by_line || f->kind == EMBER_FRAME_PYTHON) &&
	    (buf_put(k, "", 1) < 0 || buf_puts(k, f->file) < 0))
		return -1;
	if (by_line && (buf_put(k, "", 1) < 0 || buf_putu(k, f->line) < 0))
		return -1;
	return 0;
}

/* The label of f's key in k->buf: "name", "name (file)", "name (file:line)",
 * "name (file:first line)" or the module. */
static int build_label(struct ember_keys *k, const struct ember_frame *f)
{
	bool by_line = k->by == EMBER_REPORT_BY_LINE;

	k->buf_len = 0;
	if (k->by == EMBER_REPORT_BY_MODULE)
		return buf_puts(k, shown(module_of(f)));
	if (buf_puts(k, shown(f->name)) < 0)
		return -1;
	/* Native names are unique enough alone; a Python name ("__init__",
	 * "run") means little without its file. */
	bool with_file = by_line ? *f->file || (k->rule == EMBER_KEYS_MATCHING && f->line)
				 : f->kind == EMBER_FRAME_PYTHON && *f->file;
	if (!with_file)
		return 0;
	if (buf_puts(k, " (") < 0 || buf_puts(k, f->file) < 0)
		return -1;
	if (by_line && f->line && (buf_put(k, ":", 1) < 0 || buf_putu(k, f->line) < 0))
		return -1;
	if (!by_line && k->rule == EMBER_KEYS_EXACT_DEF_LINE && f->first_line &&
	    (buf_put(k, ":", 1) < 0 || buf_putu(k, f->first_line) < 0))
		return -1;
	return buf_put(k, ")", 1);
}

uint32_t ember_key_of(void *keys, const struct ember_frame *f)
{
	struct ember_keys *k = keys;
	const char *ident, *label;
	uint32_t id;
	uint64_t h;

	if (build_ident(k, f) < 0 || !(ident = buf_intern(k)))
		return UINT32_MAX;
	h = ember_hash_ptr(ident);
	id = ember_idtab_find(&k->index, h, key_eq, k, ident);
	if (id != UINT32_MAX)
		return id;
	if (k->nkeys >= UINT32_MAX - 1 || build_label(k, f) < 0 || !(label = buf_intern(k)) ||
	    ember_grow((void **)&k->keys, &k->cap, sizeof(*k->keys), k->nkeys + 1) < 0)
		return UINT32_MAX;
	id = (uint32_t)k->nkeys;
	if (ember_idtab_insert(&k->index, h, id) < 0)
		return UINT32_MAX;
	k->keys[id] = (struct key){ .ident = ident, .label = label };
	k->nkeys++;
	return id;
}

struct ember_keys *ember_keys_new(enum ember_report_key by, enum ember_key_rule rule)
{
	struct ember_keys *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->by = by;
	k->rule = rule;
	if (!(k->strings = ember_strtab_new()) || ember_idtab_init(&k->index) < 0) {
		ember_keys_free(k);
		return NULL;
	}
	return k;
}

void ember_keys_free(struct ember_keys *k)
{
	if (!k)
		return;
	free(k->buf);
	free(k->keys);
	ember_idtab_free(&k->index);
	ember_strtab_free(k->strings);
	free(k);
}

uint32_t ember_keys_count(const struct ember_keys *k)
{
	return (uint32_t)k->nkeys;
}

const char *ember_key_label(const struct ember_keys *k, uint32_t id)
{
	return id < k->nkeys ? k->keys[id].label : "";
}
