/* Demangling, and the symbolizer's names (demangle.h).
 *
 * All strings in returned frames live in the name table's interner until
 * the symbolizer is freed: the public contract promises that, and it lets a
 * module's Dwfl (whose memory raw names point into) be dropped when the
 * module is re-declared.  Demangling costs ~5 us per C++ name, so each raw
 * name remembers its readable form and a symbol is demangled once however
 * often it is hit. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "grow.h"
#include "hash.h"

/* libstdc++'s demangler (extern "C" in <cxxabi.h>); the library links stdc++. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define MAX_DEMANGLE_INPUT 8192 /* longer names are kept raw: not worth it */

int sym_names_init(struct sym_names *n)
{
	memset(n, 0, sizeof(*n));
	n->strs = ember_strtab_new();
	if (!n->strs || ember_idtab_init(&n->index) < 0) {
		sym_names_free(n);
		return -1;
	}
	return 0;
}

void sym_names_free(struct sym_names *n)
{
	ember_strtab_free(n->strs);
	ember_idtab_free(&n->index);
	free(n->readable);
	memset(n, 0, sizeof(*n));
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

static bool raw_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct sym_names *)ctx)->readable[id].raw == key;
}

const char *ember_readable_name(struct sym_names *n, const char *raw)
{
	const char *key = ember_strtab_cstr(n->strs, raw);
	if (!key)
		return NULL;
	uint64_t h = ember_hash_ptr(key);
	uint32_t id = ember_idtab_find(&n->index, h, raw_eq, n, key);
	if (id != UINT32_MAX)
		return n->readable[id].readable;
	const char *readable;
	const char *at = strchr(key, '@');
	if (at && at > key) {
		/* .symtab keeps symbol versions ("__libc_start_main@@GLIBC_2.34"):
		 * noise in a profile, and they would split one function in two. */
		const char *base = ember_strtab_intern(n->strs, key, (size_t)(at - key));
		readable = base ? ember_readable_name(n, base) : NULL;
	} else {
		char *d = ember_demangle(key);
		readable = d ? ember_strtab_cstr(n->strs, d) : key;
		free(d);
	}
	if (!readable || n->nreadable >= UINT32_MAX - 1 ||
	    EMBER_GROW(n->readable, n->readable_cap, n->nreadable + 1) < 0 ||
	    ember_idtab_insert(&n->index, h, (uint32_t)n->nreadable) < 0)
		return NULL;
	n->readable[n->nreadable++] = (struct sym_readable){ .raw = key, .readable = readable };
	return readable;
}
