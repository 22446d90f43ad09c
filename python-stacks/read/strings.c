/* The target's str and bytes objects as C strings and bytes, for naming
 * code objects (and threads): PEP 393 str of every kind, Py2 str and
 * unicode, bytes payloads (line tables).  The reads that decode a code
 * object come from the objects the copier took along with it at the
 * sample when those hold the bytes (the object may be freed by now), else
 * from the target.  Names are interned: one copy each, valid until close;
 * a file name also gets its short form, as py-spy shows it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "grow.h"
#include "hash.h"
#include "py_read.h"
#include "strtab.h"

#define MAX_STR_CHARS 4096
#define MAX_BYTES (1u << 20)   /* line tables longer than this are not read */

int py_strings_init(struct ember_python *py)
{
	struct py_strings *s = py->str;
	s->tab = ember_strtab_new();
	if (!s->tab || ember_idtab_init(&s->short_of) != 0) {
		ember_strtab_free(s->tab);
		s->tab = NULL;
		return -1;
	}
	return 0;
}

void py_strings_free(struct ember_python *py)
{
	struct py_strings *s = py->str;
	ember_strtab_free(s->tab);
	ember_idtab_free(&s->short_of);
	free(s->files);
	memset(s, 0, sizeof *s);
}

void py_strings_source(struct ember_python *py, const struct ember_copier_record *rec)
{
	py->str->objs = rec;
}

void py_strings_begin(struct ember_python *py)
{
	py->str->objs_missed = 0;
}

bool py_strings_all_copied(const struct ember_python *py)
{
	return py->str->objs && !py->str->objs_missed;
}

/* A read for decoding a code object: from the objects the copier took
 * with it at the sample when they hold the bytes, else from the target --
 * counted: then the code object must be checked alive afterwards. */
static bool decode_read(struct ember_python *py, uint64_t addr, void *buf, size_t len)
{
	if (py->str->objs && snap_record_obj(py->str->objs, addr, buf, len))
		return true;
	py->str->objs_missed++;
	return rm_read(py->pid, addr, buf, len, NULL, &py->syscalls);
}

/* UTF-8 encode n code points of kind (1, 2, 4 bytes); bytes written (NUL
 * excluded), always NUL-terminated when cap > 0. */
static size_t utf8_from_ucs(const void *data, size_t n, int kind, char *out, size_t cap)
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

/* Where the text of the str at addr (header hdr) is: its address, length in
 * characters and kind (bytes per character); false if it is not a str. */
static bool str_text(const struct ember_python *py, uint64_t addr, const uint8_t *hdr, uint64_t *at, int64_t *len,
		     int *kind, bool *ascii)
{
	const struct py_offsets *o = &py->rt.off;
	uint64_t type = rd64(hdr, o->ob_type);
	*kind = 1;
	*ascii = false;
	if (py->rt.major == 2) {
		if (type == py->rt.t_str) {          /* PyStringObject: bytes inline */
			*len = (int64_t)rd64(hdr, o->ob_size);
			*at = addr + o->bytes_sval;
			*ascii = true;                   /* copied as is (normally UTF-8) */
			return true;
		}
		if (type != py->rt.t_py2unicode || !py->rt.t_py2unicode)
			return false;
		*len = (int64_t)rd64(hdr, o->uni_length);
		*at = rd64(hdr, o->uni_str);
		*kind = o->unicode_size;
		return true;
	}
	if (type != py->rt.t_str)
		return false;
	*len = (int64_t)rd64(hdr, o->str_length);
	uint32_t state = (uint32_t)rd32(hdr, o->str_state);
	*kind = (state >> 2) & 7;
	bool compact = (state >> 5) & 1;
	*ascii = (state >> 6) & 1;
	bool ready = py->rt.minor >= 12 || ((state >> 7) & 1);
	if ((*kind != 1 && *kind != 2 && *kind != 4) || !ready)
		return false;
	*at = compact ? addr + (*ascii ? o->str_ascii_data : o->str_compact_data)
		      : rd64(hdr, o->str_compact_data);   /* PyUnicodeObject.data */
	return true;
}

char *py_read_string(struct ember_python *py, uint64_t addr)
{
	uint8_t hdr[PY_STR_HDR_MAX];
	uint64_t at;
	int64_t len;
	int kind;
	bool ascii;
	if (!rm_ptr_ok(addr, 8) || py->rt.str_hdr_len > sizeof hdr || !decode_read(py, addr, hdr, py->rt.str_hdr_len) ||
	    !str_text(py, addr, hdr, &at, &len, &kind, &ascii) || len < 0)
		return strdup("?");
	if (len > MAX_STR_CHARS)
		len = MAX_STR_CHARS;
	size_t nbytes = (size_t)len * kind;
	uint8_t *data = malloc(nbytes + 1);
	char *res = malloc((size_t)len * 4 + 1);
	if (!data || !res || (nbytes && !decode_read(py, at, data, nbytes))) {
		free(data);
		free(res);
		return strdup("?");
	}
	if (ascii && kind == 1) {
		memcpy(res, data, nbytes);
		res[nbytes] = 0;
		/* Py2 str may legitimately hold NULs; stop there */
	} else {
		utf8_from_ucs(data, (size_t)len, kind, res, (size_t)len * 4 + 1);
	}
	free(data);
	return res;
}

uint8_t *py_read_bytes(struct ember_python *py, uint64_t addr, size_t *n)
{
	const struct py_offsets *o = &py->rt.off;
	uint8_t hdr[PY_BYTES_HDR_MAX];
	*n = 0;
	if (!rm_ptr_ok(addr, 8) || o->bytes_sval < 0 || (size_t)o->bytes_sval > sizeof hdr ||
	    !decode_read(py, addr, hdr, (size_t)o->bytes_sval) ||
	    rd64(hdr, o->ob_type) != py->rt.t_bytes)
		return NULL;
	int64_t len = (int64_t)rd64(hdr, o->ob_size);
	if (len < 0 || len > MAX_BYTES)
		return NULL;
	uint8_t *b = malloc(len ? len : 1);
	if (!b || (len && !decode_read(py, addr + o->bytes_sval, b, len))) {
		free(b);
		return NULL;
	}
	*n = (size_t)len;
	return b;
}

int64_t py_bytes_len(struct ember_python *py, uint64_t addr)
{
	const struct py_offsets *o = &py->rt.off;
	uint8_t hdr[PY_OBJ_HDR_MAX];
	if (!rm_ptr_ok(addr, 8) || !decode_read(py, addr, hdr, sizeof hdr) || rd64(hdr, o->ob_type) != py->rt.t_bytes)
		return -1;
	return (int64_t)rd64(hdr, o->ob_size);
}

/* ------------------------------------------------------------- interning */

static bool pkg_dir(const struct ember_python *py, const char *dir, size_t len)
{
	char p[4600];
	struct stat st;
	if (snprintf(p, sizeof p, "%s%.*s/__init__.py", py->rt.root, (int)len, dir) >= (int)sizeof p)
		return false;
	return stat(p, &st) == 0;
}

/* py-spy's rule: strip the directories above the outermost package that
 * contains the file ("…/site-packages/numpy/core/x.py" -> "numpy/core/x.py",
 * "/home/u/script.py" -> "script.py").  Names the file system does not know
 * ("<string>", "<frozen …>", relative paths) are kept as they are. */
static const char *shorten(const struct ember_python *py, const char *f)
{
	char p[4600];
	struct stat st;
	if (f[0] != '/' || snprintf(p, sizeof p, "%s%s", py->rt.root, f) >= (int)sizeof p || stat(p, &st) != 0)
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

static bool file_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct py_strings *s = ctx;
	return s->files[id].name == key;   /* interned: the same string is the same pointer */
}

/* The short form of the interned file name f (computed once: it stats the
 * file and its directories), NULL on OOM. */
static const char *short_name(struct ember_python *py, const char *f)
{
	struct py_strings *s = py->str;
	uint64_t h = ember_hash_ptr(f);
	uint32_t id = ember_idtab_find(&s->short_of, h, file_eq, s, f);
	if (id != UINT32_MAX)
		return s->files[id].short_name;
	if (EMBER_GROW(s->files, s->files_cap, s->nfiles + 1) != 0 ||
	    ember_idtab_insert(&s->short_of, h, (uint32_t)s->nfiles) != 0)
		return NULL;
	s->files[s->nfiles] = (struct py_short_name){ f, shorten(py, f) };   /* points into f */
	return s->files[s->nfiles++].short_name;
}

const char *py_intern(struct ember_python *py, const char *s, bool filename, const char **short_out)
{
	const char *v = ember_strtab_cstr(py->str->tab, s);
	const char *sh = v && filename ? short_name(py, v) : NULL;
	if (!v || (filename && !sh))
		return NULL;
	if (short_out)
		*short_out = sh ? sh : v;
	return v;
}
