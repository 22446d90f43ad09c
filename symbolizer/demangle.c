/* String interning and demangling for the symbolizer.
 *
 * All strings in returned frames live in this arena until the symbolizer is
 * freed: the public contract promises that, and it lets a module's Dwfl (whose
 * memory raw names point into) be dropped when the module is re-declared.
 * Demangling costs ~5 us per C++ name, so each interned string caches its
 * readable form and a symbol is demangled once however often it is hit. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer_internal.h"

/* libstdc++'s demangler (extern "C" in <cxxabi.h>); the library links stdc++. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define CHUNK_SIZE (64 * 1024)
#define MAX_DEMANGLE_INPUT 8192 /* longer names are kept raw: not worth it */

struct intern_chunk {
	struct intern_chunk *next;
	char data[];
};

static uint32_t hash_bytes(const char *s, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a: strings are short, this is plenty */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

void intern_init(struct intern *in)
{
	memset(in, 0, sizeof(*in));
}

void intern_free(struct intern *in)
{
	struct intern_chunk *c = in->chunks;
	while (c) {
		struct intern_chunk *next = c->next;
		free(c);
		c = next;
	}
	free(in->slots);
	memset(in, 0, sizeof(*in));
}

/* Copy s[0..len) plus a NUL into the arena. */
static char *arena_copy(struct intern *in, const char *s, size_t len)
{
	size_t need = len + 1;
	char *dst;

	if (need > CHUNK_SIZE / 4) {
		/* Big strings get a chunk of their own, linked behind the current
		 * one so the current chunk's free space is not wasted. */
		struct intern_chunk *c = malloc(sizeof(*c) + need);
		if (!c)
			return NULL;
		if (in->chunks) {
			c->next = in->chunks->next;
			in->chunks->next = c;
		} else {
			c->next = NULL;
			in->chunks = c;
			in->chunk_used = in->chunk_cap = need;
		}
		dst = c->data;
	} else {
		if (!in->chunks || in->chunk_cap - in->chunk_used < need) {
			struct intern_chunk *c = malloc(sizeof(*c) + CHUNK_SIZE);
			if (!c)
				return NULL;
			c->next = in->chunks;
			in->chunks = c;
			in->chunk_used = 0;
			in->chunk_cap = CHUNK_SIZE;
		}
		dst = in->chunks->data + in->chunk_used;
		in->chunk_used += need;
	}
	memcpy(dst, s, len);
	dst[len] = '\0';
	return dst;
}

static int intern_grow(struct intern *in)
{
	size_t ncap = in->cap ? in->cap * 2 : 1024;
	struct intern_entry *ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -1;
	for (size_t i = 0; i < in->cap; i++) {
		struct intern_entry *e = &in->slots[i];
		if (!e->str)
			continue;
		size_t j = e->hash & (ncap - 1);
		while (ns[j].str)
			j = (j + 1) & (ncap - 1);
		ns[j] = *e;
	}
	free(in->slots);
	in->slots = ns;
	in->cap = ncap;
	return 0;
}

static struct intern_entry *intern_entry(struct intern *in, const char *s, size_t len)
{
	if (len > UINT32_MAX)
		return NULL;
	if ((in->used + 1) * 10 > in->cap * 7 && intern_grow(in) < 0)
		return NULL;
	uint32_t h = hash_bytes(s, len);
	size_t i = h & (in->cap - 1);
	for (;;) {
		struct intern_entry *e = &in->slots[i];
		if (!e->str)
			break;
		if (e->hash == h && e->len == len && memcmp(e->str, s, len) == 0)
			return e;
		i = (i + 1) & (in->cap - 1);
	}
	char *copy = arena_copy(in, s, len);
	if (!copy)
		return NULL;
	in->slots[i] = (struct intern_entry){ .str = copy, .hash = h, .len = (uint32_t)len };
	in->used++;
	return &in->slots[i];
}

const char *intern_strn(struct intern *in, const char *s, size_t len)
{
	struct intern_entry *e = intern_entry(in, s, len);
	return e ? e->str : NULL;
}

const char *intern_str(struct intern *in, const char *s)
{
	return intern_strn(in, s, strlen(s));
}

/* Rust legacy mangling demangles to "path::h0123456789abcdef"; the hash only
 * disambiguates crate versions and makes flame graphs unreadable. */
static void strip_rust_hash(char *s)
{
	size_t n = strlen(s);
	if (n < 19 || memcmp(s + n - 19, "::h", 3) != 0)
		return;
	for (size_t i = n - 16; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return;
	s[n - 19] = '\0';
}

static char *cxa(const char *name)
{
	int status = -1;
	char *d = __cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(d);
		return NULL;
	}
	return d;
}

char *ember_demangle(const char *raw)
{
	if (!raw || raw[0] != '_' || raw[1] != 'Z' || strlen(raw) > MAX_DEMANGLE_INPUT)
		return NULL; /* C names, Rust v0 ("_R", unsupported): keep raw */
	char *d = cxa(raw);
	if (!d) {
		/* GCC clone suffixes (.cold, .isra.0, .constprop.0, .part.0,
		 * .lto_priv.0) are normally understood by the demangler; for any
		 * other dotted suffix demangle the part before it and keep the
		 * suffix visible, as the demangler itself would. */
		const char *dot = strchr(raw, '.');
		if (!dot)
			return NULL;
		char *base = strndup(raw, (size_t)(dot - raw));
		if (!base)
			return NULL;
		char *bd = cxa(base);
		free(base);
		if (!bd)
			return NULL;
		size_t n = strlen(bd) + strlen(dot) + sizeof(" [clone ]");
		d = malloc(n);
		if (d)
			snprintf(d, n, "%s [clone %s]", bd, dot);
		free(bd);
		if (!d)
			return NULL;
	}
	strip_rust_hash(d);
	return d;
}

const char *ember_readable_name(struct intern *in, const char *raw)
{
	struct intern_entry *e = intern_entry(in, raw, strlen(raw));
	if (!e)
		return NULL;
	if (e->readable)
		return e->readable;
	const char *key = e->str; /* arena copy: stable, unlike `e` */
	const char *readable;
	const char *at = strchr(key, '@');
	if (at && at > key) {
		/* .symtab keeps symbol versions ("__libc_start_main@@GLIBC_2.34"):
		 * noise in a profile, and they would split one function in two. */
		char *base = strndup(key, (size_t)(at - key));
		readable = base ? ember_readable_name(in, base) : NULL;
		free(base);
	} else {
		char *d = ember_demangle(key);
		readable = d ? intern_str(in, d) : key;
		free(d);
	}
	if (!readable)
		return NULL;
	/* Interning may have rehashed the table and moved `e`. */
	e = intern_entry(in, key, strlen(key));
	if (!e)
		return NULL;
	e->readable = readable;
	return readable;
}
