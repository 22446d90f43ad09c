/* Per-version struct offsets: the generated table (offsets_table.c, from
 * each version's headers, with entries of their own for patch releases laid
 * out differently) plus, from 3.13, the running process's _Py_DebugOffsets. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "py_runtime.h"

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

static uint64_t u64(const uint8_t *p, size_t off)
{
	uint64_t v;
	memcpy(&v, p + off, 8);
	return v;
}

/* The struct py_offsets field each _Py_DebugOffsets value goes to. */
#define F(x) offsetof(struct py_offsets, x)
static const size_t dbg_dst[PY_DBG_COUNT] = {
	[PY_DBG_RT_INTERP_HEAD] = F(rt_interp_head), [PY_DBG_IS_NEXT] = F(is_next),
	[PY_DBG_IS_THREADS_HEAD] = F(is_tstate_head), [PY_DBG_IS_CEVAL_GIL] = F(is_ceval_gil),
	[PY_DBG_IS_IMPORTS_MODULES] = F(is_modules), [PY_DBG_TS_NEXT] = F(ts_next),
	[PY_DBG_TS_INTERP] = F(ts_interp), [PY_DBG_TS_CURRENT_FRAME] = F(ts_current_frame),
	[PY_DBG_TS_THREAD_ID] = F(ts_thread_id), [PY_DBG_TS_NATIVE_THREAD_ID] = F(ts_native_thread_id),
	[PY_DBG_TS_STATUS] = F(ts_status), [PY_DBG_TS_HOLDS_GIL] = F(ts_holds_gil),
	[PY_DBG_IF_SIZE] = F(if_size), [PY_DBG_IF_PREVIOUS] = F(if_previous),
	[PY_DBG_IF_EXECUTABLE] = F(if_code), [PY_DBG_IF_INSTR_PTR] = F(if_instr), [PY_DBG_IF_OWNER] = F(if_owner),
	[PY_DBG_CO_SIZE] = F(co_size), [PY_DBG_CO_FILENAME] = F(co_filename), [PY_DBG_CO_NAME] = F(co_name),
	[PY_DBG_CO_QUALNAME] = F(co_qualname), [PY_DBG_CO_LINETABLE] = F(co_linetable),
	[PY_DBG_CO_FIRSTLINENO] = F(co_firstlineno), [PY_DBG_CO_CODE_ADAPTIVE] = F(co_code_adaptive),
	[PY_DBG_OB_TYPE] = F(ob_type), [PY_DBG_TP_FLAGS] = F(tp_flags),
	[PY_DBG_DICT_MA_KEYS] = F(dict_keys), [PY_DBG_DICT_MA_VALUES] = F(dict_values),
	[PY_DBG_LONG_LV_TAG] = F(long_tag), [PY_DBG_LONG_OB_DIGIT] = F(long_digit),
	[PY_DBG_BYTES_OB_SIZE] = F(ob_size), [PY_DBG_BYTES_OB_SVAL] = F(bytes_sval),
	[PY_DBG_UNICODE_STATE] = F(str_state), [PY_DBG_UNICODE_LENGTH] = F(str_length),
	[PY_DBG_UNICODE_ASCII_SIZE] = F(str_ascii_data),
};
#undef F

bool py_offsets_apply_debug(struct py_offsets *o, const uint8_t *d, size_t len, char *msg, size_t msglen)
{
	if (o->dbg_size <= 0 || len < (size_t)o->dbg_size || memcmp(d, "xdebugpy", 8) != 0) {
		snprintf(msg, msglen, "no _Py_DebugOffsets cookie at _PyRuntime");
		return false;
	}
	/* The version the struct says it is must be the one its layout was
	 * measured for: the layout changes between minor versions. */
	uint64_t ver = u64(d, 8);
	if ((ver >> 24) != o->major || ((ver >> 16) & 255) != o->minor) {
		snprintf(msg, msglen, "_Py_DebugOffsets of version %llu.%llu, not %d.%d",
			 (unsigned long long)(ver >> 24), (unsigned long long)((ver >> 16) & 255), o->major, o->minor);
		return false;
	}
	for (int i = 0; i < PY_DBG_COUNT; i++) {
		int32_t at = o->dbg[i];
		if (at <= 0)
			continue;
		uint64_t v = at + 8 <= o->dbg_size ? u64(d, (size_t)at) : UINT64_MAX;
		if (v > (1u << 20)) {
			snprintf(msg, msglen, "implausible _Py_DebugOffsets value %llu at +%d", (unsigned long long)v, at);
			return false;
		}
		int32_t *dst = (int32_t *)((char *)o + dbg_dst[i]);
		*dst = (int32_t)v;
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
			 o->ts_status + 4, o->ts_holds_gil + 4 };
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
