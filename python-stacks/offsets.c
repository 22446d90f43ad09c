/* Per-version struct offsets: the generated table (offsets_table.c, from
 * each version's headers, with entries of their own for patch releases laid
 * out differently) plus the 3.13 run-time _Py_DebugOffsets. */
#include <stdio.h>
#include <string.h>

#include "py_internal.h"

const struct py_offsets *py_offsets_for(int major, int minor, int micro)
{
	for (size_t i = 0; i < py_offsets_table_len; i++) {
		const struct py_offsets *o = &py_offsets_table[i];
		bool every = o->micro_first == 0 && o->micro_last == 255;
		if (o->major == major && o->minor == minor &&
		    (micro < 0 ? every : micro >= o->micro_first && micro <= o->micro_last))
			return o;
	}
	return NULL;
}

/* Byte positions of the fields we use inside the 3.13 _Py_DebugOffsets
 * struct (Include/internal/pycore_runtime.h; stable within 3.13.x). */
enum {
	D_VERSION = 8, D_FREE_THREADED = 16,
	D_RT_INTERP_HEAD = 40,
	D_IS_NEXT = 64, D_IS_THREADS_HEAD = 72, D_IS_IMPORTS_MODULES = 88, D_IS_CEVAL_GIL = 112,
	D_TS_NEXT = 168, D_TS_INTERP = 176, D_TS_CURRENT_FRAME = 184, D_TS_THREAD_ID = 192,
	D_TS_NATIVE_THREAD_ID = 200, D_TS_STATUS = 216,
	D_IF_SIZE = 224, D_IF_PREVIOUS = 232, D_IF_EXECUTABLE = 240, D_IF_INSTR_PTR = 248, D_IF_OWNER = 264,
	D_CO_SIZE = 272, D_CO_FILENAME = 280, D_CO_NAME = 288, D_CO_QUALNAME = 296, D_CO_LINETABLE = 304,
	D_CO_FIRSTLINENO = 312, D_CO_CODE_ADAPTIVE = 344,
	D_OB_TYPE = 360, D_TP_FLAGS = 392,
	D_DICT_MA_KEYS = 456, D_DICT_MA_VALUES = 464, D_LONG_LV_TAG = 496, D_LONG_OB_DIGIT = 504,
	D_BYTES_OB_SIZE = 520, D_BYTES_OB_SVAL = 528,
	D_UNICODE_STATE = 544, D_UNICODE_LENGTH = 552, D_UNICODE_ASCII_SIZE = 560,
	D_END = 568,
};

static uint64_t u64(const uint8_t *p, size_t off)
{
	uint64_t v;
	memcpy(&v, p + off, 8);
	return v;
}

bool py_offsets_apply_debug(struct py_offsets *o, const uint8_t *d, size_t len, char *msg, size_t msglen)
{
	if (len < D_END || memcmp(d, "xdebugpy", 8) != 0) {
		snprintf(msg, msglen, "no _Py_DebugOffsets cookie at _PyRuntime");
		return false;
	}
	struct { size_t off; int32_t *dst; } map[] = {
		{ D_RT_INTERP_HEAD, &o->rt_interp_head },
		{ D_IS_NEXT, &o->is_next }, { D_IS_THREADS_HEAD, &o->is_tstate_head },
		{ D_IS_CEVAL_GIL, &o->is_ceval_gil },
		{ D_TS_NEXT, &o->ts_next }, { D_TS_INTERP, &o->ts_interp },
		{ D_TS_CURRENT_FRAME, &o->ts_current_frame }, { D_TS_THREAD_ID, &o->ts_thread_id },
		{ D_TS_NATIVE_THREAD_ID, &o->ts_native_thread_id }, { D_TS_STATUS, &o->ts_status },
		{ D_IF_SIZE, &o->if_size }, { D_IF_PREVIOUS, &o->if_previous },
		{ D_IF_EXECUTABLE, &o->if_code }, { D_IF_INSTR_PTR, &o->if_instr }, { D_IF_OWNER, &o->if_owner },
		{ D_CO_SIZE, &o->co_size }, { D_CO_FILENAME, &o->co_filename }, { D_CO_NAME, &o->co_name },
		{ D_CO_QUALNAME, &o->co_qualname }, { D_CO_LINETABLE, &o->co_linetable },
		{ D_CO_FIRSTLINENO, &o->co_firstlineno }, { D_CO_CODE_ADAPTIVE, &o->co_code_adaptive },
		{ D_OB_TYPE, &o->ob_type }, { D_BYTES_OB_SIZE, &o->ob_size }, { D_BYTES_OB_SVAL, &o->bytes_sval },
		{ D_UNICODE_STATE, &o->str_state }, { D_UNICODE_LENGTH, &o->str_length },
		{ D_UNICODE_ASCII_SIZE, &o->str_ascii_data },
		/* thread names */
		{ D_IS_IMPORTS_MODULES, &o->is_modules }, { D_TP_FLAGS, &o->tp_flags },
		{ D_DICT_MA_KEYS, &o->dict_keys }, { D_DICT_MA_VALUES, &o->dict_values },
		{ D_LONG_LV_TAG, &o->long_tag }, { D_LONG_OB_DIGIT, &o->long_digit },
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		uint64_t v = u64(d, map[i].off);
		if (v > (1u << 20)) {
			snprintf(msg, msglen, "implausible _Py_DebugOffsets value %llu at +%zu",
				 (unsigned long long)v, map[i].off);
			return false;
		}
		*map[i].dst = (int32_t)v;
	}
	/* PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 (3.12+). */
	o->str_utf8_length = o->str_ascii_data;
	o->str_utf8 = o->str_ascii_data + 8;
	o->str_compact_data = o->str_ascii_data + 16;
	/* The target's own numbers decide where ember reads inside headers it
	 * holds in fixed buffers: each word must lie inside its buffer. */
	if (o->ob_type + 8 > PY_OBJ_HDR_MAX || o->ob_size + 8 > PY_OBJ_HDR_MAX ||
	    o->bytes_sval < o->ob_size + 8 || o->bytes_sval > PY_BYTES_HDR_MAX ||
	    o->str_compact_data + 8 > PY_STR_HDR_MAX || o->str_length + 8 > o->str_compact_data + 8 ||
	    o->str_state + 4 > o->str_compact_data + 8) {
		snprintf(msg, msglen, "_Py_DebugOffsets places object header fields past their headers");
		return false;
	}
	return true;
}

/* Bytes read of each object, and where a str's hash is. */
void py_runtime_set_lengths(struct py_runtime *rt)
{
	const struct py_offsets *o = &rt->off;
	int32_t ts[] = { o->ts_next + 8, o->ts_interp + 8, o->ts_frame + 8, o->ts_cframe + 8,
			 o->ts_current_frame + 8, o->ts_thread_id + 8, o->ts_native_thread_id + 8,
			 o->ts_status + 4 };
	int32_t fr[] = { o->fo_back + 8, o->fo_code + 8, o->fo_lasti + 4, o->if_code + 8,
			 o->if_previous + 8, o->if_instr + 8, o->if_owner + 1, o->if_is_entry + 1, o->ob_type + 8 };
	int32_t co[] = { o->ob_type + 8, o->ob_size + 8, o->co_firstlineno + 4, o->co_code + 8,
			 o->co_filename + 8, o->co_name + 8, o->co_qualname + 8, o->co_linetable + 8,
			 o->co_firsttraceable + 4, o->co_argcount + 4, o->co_varnames + 8, o->co_flags + 4,
			 o->co_version + 4 };
	rt->ts_len = rt->fr_len = rt->co_len = 0;
	for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
		if (ts[i] > (int32_t)rt->ts_len) rt->ts_len = ts[i];
	for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++)
		if (fr[i] > (int32_t)rt->fr_len) rt->fr_len = fr[i];
	for (size_t i = 0; i < sizeof co / sizeof co[0]; i++)
		if (co[i] > (int32_t)rt->co_len) rt->co_len = co[i];
	rt->ts_len = (rt->ts_len + 7) & ~7u;
	rt->fr_len = (rt->fr_len + 7) & ~7u;
	rt->co_len = (rt->co_len + 7) & ~7u;
	rt->str_hdr_len = (uint32_t)(o->major == 2 ? 40 : o->str_compact_data + 8);
	/* The hash follows the length in PyASCIIObject and PyStringObject.  Code
	 * objects are told apart by their names' hashes where they have no
	 * number of their own (co_version, 3.12+): code_cache.c. */
	rt->str_hash_off = o->co_version >= 0 ? 0 : (uint32_t)((o->major == 2 ? o->ob_size : o->str_length) + 8);
}
