/* unit.python.locals: the values `ember dump --locals` shows, from byte
 * images of CPython objects laid out with each version's measured offsets
 * (the generated table) and read back through the reader's own memory
 * reads, pointed at this process.  Covers the frame slot's encodings (a
 * plain pointer up to 3.13; from 3.14 a _PyStackRef: a pointer with or
 * without the borrow tag, the empty slot, a small int tagged in the bits,
 * a non-object tag) and the reprs of int (3.11 ob_size sign, 3.12+ lv_tag
 * with 3.14's immortal bit), float, None, bool, bytes and other types. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "py_read.h"

/* One object image: zeroed 8-byte words, big enough for every header. */
struct img {
	uint64_t w[16];
};

static uint64_t addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void put64(struct img *m, int32_t at, uint64_t v)
{
	memcpy((uint8_t *)m->w + at, &v, 8);
}

static void put32(struct img *m, int32_t at, uint32_t v)
{
	memcpy((uint8_t *)m->w + at, &v, 4);
}

/* An int of ndigits digits d[] (30-bit) and sign, as that version lays it out. */
static void make_int(const struct py_offsets *o, struct img *m, const struct img *type, int sign, int ndigits,
		     const uint32_t *d, bool immortal)
{
	memset(m, 0, sizeof *m);
	put64(m, o->ob_type, addr(type));
	uint64_t tag;
	if (o->long_tag_bits > 0)   /* lv_tag: digits above, sign below (0 +, 1 zero, 2 -), 3.14+ immortal bit */
		tag = ((uint64_t)ndigits << o->long_tag_bits) | (uint64_t)(sign < 0 ? 2 : sign == 0 ? 1 : 0) |
		      (immortal && o->stackref_tag_bits > 0 ? 4 : 0);
	else
		tag = (uint64_t)(sign < 0 ? -ndigits : ndigits);
	put64(m, o->long_tag, tag);
	for (int i = 0; i < ndigits; i++)
		put32(m, o->long_digit + 4 * i, d[i]);
}

static void make_type(const struct py_offsets *o, struct img *t, const char *name)
{
	memset(t, 0, sizeof *t);
	put64(t, o->type_name, addr(name));
}

/* The repr of slot, "-" when the slot holds no value. */
static const char *shown(struct ember_python *py, uint64_t slot, char *buf, size_t len)
{
	if (!py_local_repr(py, slot, buf, len))
		snprintf(buf, len, "-");
	return buf;
}

/* Every object image of one version, laid out with its offsets. */
struct images {
	struct img t_int, t_bool, t_float, t_none, t_bytes, t_dict;
	struct img i42, ineg7, izero, i2dig, i3dig, itrue, fl, fl1, none, bytes, dict;
};

static void make_plain(const struct py_offsets *o, struct img *m, const struct img *type)
{
	memset(m, 0, sizeof *m);
	put64(m, o->ob_type, addr(type));
}

static void make_images(const struct py_offsets *o, struct images *im)
{
	make_type(o, &im->t_int, "int");
	make_type(o, &im->t_bool, "bool");
	make_type(o, &im->t_float, "float");
	make_type(o, &im->t_none, "NoneType");
	make_type(o, &im->t_bytes, "bytes");
	make_type(o, &im->t_dict, "dict");
	make_int(o, &im->i42, &im->t_int, 1, 1, (const uint32_t[]){ 42 }, true);
	make_int(o, &im->ineg7, &im->t_int, -1, 1, (const uint32_t[]){ 7 }, false);
	make_int(o, &im->izero, &im->t_int, 0, 0, NULL, true);
	make_int(o, &im->i2dig, &im->t_int, 1, 2, (const uint32_t[]){ 5, 3 }, false);   /* 3 << 30 | 5 */
	make_int(o, &im->i3dig, &im->t_int, 1, 3, (const uint32_t[]){ 1, 1, 1 }, false);
	make_int(o, &im->itrue, &im->t_bool, 1, 1, (const uint32_t[]){ 1 }, true);
	double d = 3.25, one = 1.0;
	make_plain(o, &im->fl, &im->t_float);
	memcpy((uint8_t *)im->fl.w + o->float_val, &d, 8);
	make_plain(o, &im->fl1, &im->t_float);
	memcpy((uint8_t *)im->fl1.w + o->float_val, &one, 8);
	make_plain(o, &im->none, &im->t_none);
	make_plain(o, &im->bytes, &im->t_bytes);
	put64(&im->bytes, o->ob_size, 3);
	memcpy((uint8_t *)im->bytes.w + o->bytes_sval, "\0ab", 4);
	make_plain(o, &im->dict, &im->t_dict);
}

/* Slots referring to the images: each repr as the dump shows it. */
static void check_objects(struct ember_python *py, const struct images *im)
{
	const struct py_offsets *o = &py->rt.off;
	char buf[96], what[64];
	/* 3.14+ keep the borrow tag on references to immortal objects and
	 * deferred ones; both tags must read as the object. */
	uint64_t borrow = o->stackref_tag_bits > 0 ? (uint64_t)o->stackref_borrow_tag : 0;
	struct { uint64_t slot; const char *want; } cases[] = {
		{ addr(&im->i42) | borrow, "42" },
		{ addr(&im->ineg7), "-7" },
		{ addr(&im->izero) | borrow, "0" },
		{ addr(&im->i2dig), "3221225477" },
		{ addr(&im->i3dig), "<int>" },
		{ addr(&im->itrue) | borrow, "True" },
		{ addr(&im->fl), "3.25" },
		{ addr(&im->fl1), "1.0" },
		{ addr(&im->none) | borrow, "None" },
		{ addr(&im->bytes), "b'\\x00ab'" },
		{ addr(&im->dict), "<dict>" },
		{ 0, "-" },            /* not bound */
		{ borrow, "-" },       /* 3.14+: the empty slot, NULL with the borrow tag */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(what, sizeof what, "%s case %zu", py->rt.version, i);
		shown(py, cases[i].slot, buf, sizeof buf);
		CHECK_MSG(strcmp(buf, cases[i].want) == 0, what);
		if (strcmp(buf, cases[i].want) != 0)
			fprintf(stderr, "  got %s, want %s\n", buf, cases[i].want);
	}
}

/* 3.14+: a small int in the reference's bits, a tag that is no object's,
 * and the refusal of a version whose tags were not measured. */
static void check_tagged(struct ember_python *py, const struct images *im)
{
	const struct py_offsets *o = &py->rt.off;
	char buf[96], why[128];
	uint64_t t = (uint64_t)o->stackref_int_tag, sh = (uint64_t)o->stackref_int_shift;
	CHECK_STR(shown(py, (17ULL << sh) | t, buf, sizeof buf), "17");
	CHECK_STR(shown(py, ((uint64_t)-5 << sh) | t, buf, sizeof buf), "-5");
	uint64_t other = 0;
	for (uint64_t k = 1; k <= (uint64_t)o->stackref_tag_bits; k++)
		if (k != t && k != (uint64_t)o->stackref_borrow_tag && (k & ~(uint64_t)o->stackref_tag_bits) == 0)
			other = k;
	if (other)
		CHECK_STR(shown(py, addr(&im->i42) | other, buf, sizeof buf), "-");
	py->rt.off.stackref_int_tag = -1;
	CHECK(!ember_python_locals_supported(py, why, sizeof why) && strstr(why, py->rt.version));
}

static void check_version(int minor, int micro)
{
	const struct py_offsets *o = py_offsets_for(3, minor, micro);
	CHECK_MSG(o != NULL, "offsets of the version are in the table");
	if (!o)
		return;
	/* a reader with the parts these reads use: no copies to decode from */
	struct ember_python *py = calloc(1, sizeof *py);
	struct py_strings *str = calloc(1, sizeof *str);
	struct images *im = calloc(1, sizeof *im);
	if (!py || !str || !im)
		abort();
	py->str = str;
	py->pid = getpid();
	py->rt.major = 3;
	py->rt.minor = minor;
	py->rt.off = *o;
	snprintf(py->rt.version, sizeof py->rt.version, "3.%d.%d", minor, micro);
	char why[128];
	CHECK_MSG(ember_python_locals_supported(py, why, sizeof why), py->rt.version);
	make_images(o, im);
	py->rt.t_bytes = addr(&im->t_bytes);
	check_objects(py, im);
	if (o->stackref_tag_bits > 0)
		check_tagged(py, im);
	free(im);
	free(str);
	free(py);
}

int main(void)
{
	check_version(11, 7);
	check_version(12, 1);
	check_version(13, 0);
	check_version(14, 10);
	check_version(15, 2);
	return check_report();
}
