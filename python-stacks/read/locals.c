/* Local variables of the frames of the last read (python_stacks.h,
 * "Local variables"): the frame's slots (f_localsplus up to 3.10, the
 * interpreter frame's localsplus from 3.11), named by the code object's
 * co_varnames (up to 3.10) or co_localsplusnames (3.11+), each value shown
 * by a short repr for the simple types and by its type's name otherwise
 * (3.14+: the slots are tagged references, decoded by slot_decode).
 * Every read is bounded: at most max slots, strings and bytes cut short,
 * ints of at most two digits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "py_read.h"

#define REPR_CHARS 40

bool ember_python_locals_supported(const struct ember_python *py, char *why, size_t len)
{
	const struct py_offsets *o = &py->rt.off;
	bool old = o->fo_localsplus >= 0 && o->co_varnames >= 0;
	bool tagged = o->stackref_tag_bits > 0;
	bool new = o->if_localsplus >= 0 && o->co_localsplusnames >= 0 &&
		   (!tagged || (o->stackref_borrow_tag >= 0 && o->stackref_int_tag >= 0 && o->stackref_int_shift >= 0));
	if (old || new)
		return true;
	snprintf(why, len, "CPython %s: --locals not supported (2.7 and 3.6-3.15 are)", py->rt.version);
	return false;
}

/* The type name of object v into buf ("" when unreadable). */
static void type_name(struct ember_python *py, uint64_t v, char *buf, size_t len)
{
	const struct py_offsets *o = &py->rt.off;
	uint64_t type = 0, name = 0;
	buf[0] = 0;
	if (!rm_read(py->pid, v + (uint64_t)o->ob_type, &type, 8, NULL, &py->syscalls) || !rm_ptr_ok(type, 8) ||
	    !rm_read(py->pid, type + (uint64_t)o->type_name, &name, 8, NULL, &py->syscalls) || !name ||
	    !rm_read(py->pid, name, buf, len - 1, NULL, &py->syscalls))
		buf[0] = 0;
	buf[len - 1] = 0;
}

/* An int (3.x int, 2.7 long) of at most two digits; false when bigger. */
static bool long_value(struct ember_python *py, uint64_t v, long long *out)
{
	const struct py_offsets *o = &py->rt.off;
	uint8_t b[64];
	if (o->long_tag < 0 || o->long_digit + 8 > (int32_t)sizeof b ||
	    !rm_read(py->pid, v, b, (size_t)o->long_digit + 8, NULL, &py->syscalls))
		return false;
	int64_t tag = (int64_t)rd64(b, o->long_tag), ndigits;
	bool neg;
	if (o->long_tag_bits > 0) {   /* 3.12+: sign in the low bits (2 = negative), digit count above */
		neg = (tag & 3) == 2;
		ndigits = (int64_t)((uint64_t)tag >> o->long_tag_bits);
	} else {
		neg = tag < 0;
		ndigits = neg ? -tag : tag;
	}
	if (ndigits > 2)
		return false;
	uint32_t d0 = ndigits > 0 ? (uint32_t)rd32(b, o->long_digit) : 0;
	uint32_t d1 = ndigits > 1 ? (uint32_t)rd32(b, o->long_digit + 4) : 0;
	if (o->long_shift == 15) {     /* 16-bit digits: the two are in the first word */
		d1 = ndigits > 1 ? d0 >> 16 : 0;
		d0 &= 0xffff;
	}
	long long x = (long long)d0 + ((long long)d1 << o->long_shift);
	*out = neg ? -x : x;
	return true;
}

/* Python's repr of a float: the shortest form that reads back the same,
 * with ".0" when it would read as an int. */
static void float_repr(double d, char *buf, size_t len)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	if (!strpbrk(buf, ".eninf") && strlen(buf) + 3 <= len)
		strcat(buf, ".0");
}

/* An int: 2.7's int (and bool) holds a C long, every other a PyLong. */
static bool int_value(struct ember_python *py, uint64_t v, long long *out)
{
	int64_t iv = 0;
	bool small = py->rt.major == 2 && py->rt.off.int_ival >= 0;
	if (!small)
		return long_value(py, v, out);
	if (!rm_read(py->pid, v + (uint64_t)py->rt.off.int_ival, &iv, 8, NULL, &py->syscalls))
		return false;
	*out = iv;
	return true;
}

/* A quoted, escaped, bounded copy of s (prefix "b" for bytes). */
static void quote(const char *prefix, const uint8_t *s, size_t n, char *buf, size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "%s'", prefix);
	for (size_t i = 0; i < n && at + 6 < len; i++) {
		if (i >= REPR_CHARS) {
			at += (size_t)snprintf(buf + at, len - at, "...");
			break;
		}
		uint8_t c = s[i];
		if (c == '\'' || c == '\\')
			at += (size_t)snprintf(buf + at, len - at, "\\%c", c);
		else if (c < 0x20 || c == 0x7f || (*prefix && c >= 0x80))
			at += (size_t)snprintf(buf + at, len - at, "\\x%02x", c);
		else
			buf[at++] = (char)c;
	}
	snprintf(buf + at, len - at, "'");
}

/* The short repr of object v into buf. */
static void obj_repr(struct ember_python *py, uint64_t v, char *buf, size_t len)
{
	char tn[64];
	long long x;
	type_name(py, v, tn, sizeof tn);
	bool py2 = py->rt.major == 2;
	if (strcmp(tn, "NoneType") == 0) {
		snprintf(buf, len, "None");
	} else if (strcmp(tn, "bool") == 0 && int_value(py, v, &x)) {
		snprintf(buf, len, "%s", x ? "True" : "False");
	} else if (strcmp(tn, "int") == 0 || strcmp(tn, "long") == 0) {
		if (tn[0] == 'l' ? long_value(py, v, &x) : int_value(py, v, &x))
			snprintf(buf, len, "%lld", x);
		else
			snprintf(buf, len, "<int>");
	} else if (strcmp(tn, "float") == 0) {
		double d = 0;
		if (rm_read(py->pid, v + (uint64_t)py->rt.off.float_val, &d, 8, NULL, &py->syscalls))
			float_repr(d, buf, len);
		else
			snprintf(buf, len, "<float>");
	} else if ((strcmp(tn, "str") == 0 && !py2) || strcmp(tn, "unicode") == 0) {
		char *s = py_read_string(py, v);
		quote("", (const uint8_t *)(s ? s : "?"), s ? strlen(s) : 1, buf, len);
		free(s);
	} else if (strcmp(tn, "bytes") == 0 || (strcmp(tn, "str") == 0 && py2)) {
		size_t n = 0;
		uint8_t *s = py_read_bytes(py, v, &n);
		quote(py2 ? "" : "b", s ? s : (const uint8_t *)"", s ? n : 0, buf, len);
		free(s);
	} else {
		snprintf(buf, len, "<%s>", tn[0] ? tn : "?");
	}
}

/* What a frame slot holds.  Up to 3.13 an object's address (NULL: not
 * bound).  From 3.14 a _PyStackRef: an object's address with tag bits
 * below it (the borrow tag marks a reference owning no count: immortal
 * objects, deferred ones; NULL with it is the empty slot), or, with the int
 * tag, a small int in the bits above the shift.  Any other tag is not a
 * Python object (3.15: a raw pointer the interpreter parks there). */
enum slot_kind { SLOT_EMPTY, SLOT_OBJECT, SLOT_INT, SLOT_OTHER };

static enum slot_kind slot_decode(const struct py_offsets *o, uint64_t bits, uint64_t *obj, long long *iv)
{
	*obj = bits;
	if (o->stackref_tag_bits > 0) {
		uint64_t tag = bits & (uint64_t)o->stackref_tag_bits;
		if (tag == (uint64_t)o->stackref_int_tag) {
			*iv = (long long)((int64_t)bits >> o->stackref_int_shift);
			return SLOT_INT;
		}
		if (tag != 0 && tag != (uint64_t)o->stackref_borrow_tag)
			return SLOT_OTHER;
		*obj = bits & ~(uint64_t)o->stackref_tag_bits;
	}
	if (!*obj)
		return SLOT_EMPTY;
	return rm_ptr_ok(*obj, 8) ? SLOT_OBJECT : SLOT_OTHER;
}

bool py_local_repr(struct ember_python *py, uint64_t slot, char *buf, size_t len)
{
	uint64_t obj;
	long long iv = 0;
	switch (slot_decode(&py->rt.off, slot, &obj, &iv)) {
	case SLOT_OBJECT:
		obj_repr(py, obj, buf, len);
		return true;
	case SLOT_INT:
		snprintf(buf, len, "%lld", iv);
		return true;
	default:
		return false;
	}
}

/* Where frame depth's slots are and the tuple of their names. */
static bool frame_slots(struct ember_python *py, uint32_t depth, const struct ember_py_frame *f, uint64_t *slots,
			uint64_t *names)
{
	const struct py_offsets *o = &py->rt.off;
	if (depth >= py->fr->naddrs || depth >= PY_FRAME_ADDRS || !f->code)
		return false;
	uint64_t frame = py->fr->addrs[depth], code = py_code(py, py_code_base(py, f->code))->addr;
	bool old = o->fo_localsplus >= 0;
	*slots = frame + (uint64_t)(old ? o->fo_localsplus : o->if_localsplus);
	int32_t at = old ? o->co_varnames : o->co_localsplusnames;
	return rm_read(py->pid, code + (uint64_t)at, names, 8, NULL, &py->syscalls) && rm_ptr_ok(*names, 8);
}

int ember_python_frame_locals(struct ember_python *py, uint32_t depth, const struct ember_py_frame *frame,
			      struct ember_py_local *out, int max)
{
	const struct py_offsets *o = &py->rt.off;
	uint64_t slots, names, size = 0, name_ptrs[64], vals[64];
	char why[8];
	if (max <= 0 || !ember_python_locals_supported(py, why, sizeof why) ||
	    !frame_slots(py, depth, frame, &slots, &names) ||
	    !rm_read(py->pid, names + (uint64_t)o->ob_size, &size, 8, NULL, &py->syscalls))
		return -1;
	int n = (int64_t)size < 0 ? 0 : size > 64 ? 64 : (int)size;
	if (n > max)
		n = max;
	if (n == 0)
		return 0;
	if (!rm_read(py->pid, names + (uint64_t)o->tuple_item, name_ptrs, (size_t)n * 8, NULL, &py->syscalls) ||
	    !rm_read(py->pid, slots, vals, (size_t)n * 8, NULL, &py->syscalls))
		return -1;
	int k = 0;
	for (int i = 0; i < n; i++) {
		if (!py_local_repr(py, vals[i], out[k].value, sizeof out[k].value))
			continue;   /* not bound (yet), or no Python value */
		char *name = py_read_string(py, name_ptrs[i]);
		snprintf(out[k].name, sizeof out[k].name, "%s", name ? name : "?");
		free(name);
		k++;
	}
	return k;
}
