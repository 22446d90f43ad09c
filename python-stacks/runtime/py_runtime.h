/* python-stacks/runtime/: the bottom layer of the Python reader (README.md,
 * "Layers"): reads of the target's memory (remote_mem.c), the offsets of
 * CPython's structs per version (offsets.c, generated offsets_table.c and
 * offsets_table_aarch64.c), line tables (linetable.c), and the runtime
 * found in the target at open (runtime.c).
 *
 * It also defines struct ember_python, the reader of one process, which
 * every layer's functions take: the target and its runtime in place, each
 * upper layer's state by a pointer to a type only that layer's header
 * defines (read/py_read.h, check/py_check.h, copier/copier_user.h), each
 * written by that layer's files only (upper layers read lower ones').  A
 * lower layer tells an upper one something only through a hook the upper
 * one registered (py_code_cache.on_unnamed, py_frames.on_method) or a
 * counter it reads (py_threads.scans).  Not thread-safe, like the reader. */
#ifndef EMBER_PY_RUNTIME_H
#define EMBER_PY_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch.h"
#include "python_stacks.h"

static inline uint64_t rd64(const uint8_t *p, int32_t off)
{
	uint64_t v;
	__builtin_memcpy(&v, p + off, 8);
	return v;
}
static inline int32_t rd32(const uint8_t *p, int32_t off)
{
	int32_t v;
	__builtin_memcpy(&v, p + off, 4);
	return v;
}

/* ---- offsets (offsets.c, generated offsets_table.c) ---- */

/* The fields of _Py_DebugOffsets the reader uses (py_offsets.dbg). */
enum py_dbg {
	PY_DBG_RT_INTERP_HEAD, PY_DBG_IS_NEXT, PY_DBG_IS_THREADS_HEAD, PY_DBG_IS_CEVAL_GIL,
	PY_DBG_IS_IMPORTS_MODULES, PY_DBG_TS_NEXT, PY_DBG_TS_INTERP, PY_DBG_TS_CURRENT_FRAME,
	PY_DBG_TS_THREAD_ID, PY_DBG_TS_NATIVE_THREAD_ID, PY_DBG_TS_STATUS, PY_DBG_TS_HOLDS_GIL,
	PY_DBG_IF_SIZE, PY_DBG_IF_PREVIOUS, PY_DBG_IF_EXECUTABLE, PY_DBG_IF_INSTR_PTR, PY_DBG_IF_OWNER,
	PY_DBG_CO_SIZE, PY_DBG_CO_FILENAME, PY_DBG_CO_NAME, PY_DBG_CO_QUALNAME, PY_DBG_CO_LINETABLE,
	PY_DBG_CO_FIRSTLINENO, PY_DBG_CO_CODE_ADAPTIVE, PY_DBG_OB_TYPE, PY_DBG_TP_FLAGS,
	PY_DBG_DICT_MA_KEYS, PY_DBG_DICT_MA_VALUES, PY_DBG_LONG_LV_TAG, PY_DBG_LONG_OB_DIGIT,
	PY_DBG_BYTES_OB_SIZE, PY_DBG_BYTES_OB_SVAL, PY_DBG_UNICODE_STATE, PY_DBG_UNICODE_LENGTH,
	PY_DBG_UNICODE_ASCII_SIZE,
	PY_DBG_COUNT
};
/* Larger than every known version's _Py_DebugOffsets (3.15: 888 bytes). */
#define PY_DBG_MAX 2048

/* Byte offsets, -1 = no such field.  Field meanings: see
 * scripts/gen_python_offsets.py (rt_ = _PyRuntimeState, is_ = interpreter,
 * ts_ = thread state, cf_ = _PyCFrame, fo_ = PyFrameObject, if_ =
 * _PyInterpreterFrame, co_ = code object, str_ = PEP 393 str, uni_ = Py2
 * unicode, gil_ = struct _gil_runtime_state). */
struct py_offsets {
	uint8_t major, minor;
	uint8_t micro_first, micro_last;   /* the patch releases it is for (0-255: all) */
	const char *headers_version;
	int32_t rt_size, rt_interp_head, rt_interp_main, rt_main_thread, rt_tstate_current;
	int32_t rt_gil_last_holder, rt_gil_locked;
	int32_t is_next, is_tstate_head, is_ceval_gil, gil_last_holder, gil_locked;
	int32_t ts_size, ts_next, ts_interp, ts_frame, ts_cframe, ts_current_frame;
	int32_t ts_thread_id, ts_native_thread_id, ts_status;
	int32_t cf_current_frame;
	int32_t fo_back, fo_code, fo_lasti, fo_localsplus;
	int32_t if_size, if_code, if_previous, if_instr, if_owner, if_is_entry;
	int32_t if_owner_shim;       /* 3.12+: owners >= this are frames the interpreter pushed for itself */
	int32_t if_owner_last;       /* 3.11+: the largest owner value (a larger one is garbage) */
	int32_t stackref_tag_bits;   /* 3.14+: tag bits of a _PyStackRef (f_executable); -1: untagged */
	int32_t ts_holds_gil;        /* 3.14+: the thread state's int holds_gil (3.13: a _status bit) */
	int32_t co_size, co_firstlineno, co_code, co_filename, co_name, co_qualname;
	int32_t co_linetable, co_firsttraceable, co_code_adaptive, co_argcount, co_varnames;
	int32_t co_flags;            /* <= 3.10 only: generators are told from their code */
	int32_t co_version;          /* 3.12+: a number no other code object got (u32) */
	int32_t if_localsplus;       /* 3.11+: the frame's local slots (3.14+: tagged _PyStackRefs) */
	int32_t co_localsplusnames;  /* 3.11+: the names of the local slots (a tuple) */
	int32_t float_val;           /* PyFloatObject.ob_fval */
	int32_t stackref_borrow_tag; /* 3.14+: the tag of a reference owning no count (NULL with it: empty) */
	int32_t stackref_int_tag;    /* 3.14+: the tag of a _PyStackRef holding an int in its bits; -1: none */
	int32_t stackref_int_shift;  /* 3.14+: that int is the reference shifted right this many bits */
	int32_t tuple_item, type_name;
	int32_t ob_type, ob_size, bytes_sval;
	int32_t str_length, str_state, str_ascii_data, str_compact_data, str_utf8, str_utf8_length;
	int32_t uni_length, uni_str, unicode_size;
	/* thread names (thread_names.c): is_modules = sys.modules of an
	 * interpreter, mod_dict = PyModuleObject.md_dict, dict_ = PyDictObject
	 * (2.7: ma_mask/ma_table), dk_ = PyDictKeysObject, dke_/dku_ =
	 * PyDictKeyEntry/PyDictUnicodeEntry, dv_ = PyDictValues, tp_/tpf_ =
	 * PyTypeObject fields/flag values, obj_*_before = bytes before an object
	 * of its managed dict (3.12: dict-or-values) and values pointers,
	 * obj_inline_values = 3.13 inline values, long_ = PyLongObject (tag =
	 * ob_size, 3.12+ lv_tag), int_ival = Py2 PyIntObject. */
	int32_t is_modules, mod_dict;
	int32_t dict_keys, dict_values, dict_mask, dict_table;
	int32_t dk_size, dk_log2_size, dk_log2_index_bytes, dk_kind, dk_kind_general, dk_nentries, dk_indices;
	int32_t dke_size, dke_key, dke_value, dku_size, dku_key, dku_value;
	int32_t dv_values, dv_capacity, dv_valid;
	int32_t tp_basicsize, tp_dictoffset, tp_flags, ht_cached_keys, tpf_heaptype, tpf_managed_dict;
	int32_t tpf_inline_values;
	int32_t obj_dict_before, obj_values_before, obj_inline_values;
	int32_t long_tag, long_digit, long_shift, long_tag_bits, int_ival;
	/* 3.13+: the size of that version's _Py_DebugOffsets and where in it
	 * the value of each field the reader takes from the running process
	 * is (-1 or 0: not there); -1 before 3.13. */
	int32_t dbg_size;
	int32_t dbg[PY_DBG_COUNT];
};
extern const struct py_offsets py_offsets_table[];
extern const size_t py_offsets_table_len;

/* The entry for release major.minor.micro (micro -1: unknown, then the
 * entry for every patch release), NULL if none. */
const struct py_offsets *py_offsets_for(int major, int minor, int micro);
/* The object headers strings.c reads whole into fixed buffers: any object
 * (type and size words), a bytes object up to its inline data, a str up to
 * its compact data pointer.  Offsets that reach past them are refused. */
#define PY_OBJ_HDR_MAX 24
#define PY_BYTES_HDR_MAX 64
#define PY_STR_HDR_MAX 128
/* 3.13+: overwrite o with the values of the _Py_DebugOffsets struct read
 * from &_PyRuntime (dbg = its bytes).  Returns false if implausible,
 * including object-header offsets past the buffers above. */
bool py_offsets_apply_debug(struct py_offsets *o, const uint8_t *dbg, size_t len, char *msg, size_t msglen);

/* ---- remote memory (remote_mem.c) ---- */

struct rm_req {
	uint64_t addr;
	void *buf;
	uint32_t len;
	bool ok;         /* out: fully read */
};
/* Read len bytes at addr of process pid; true only if all were read.  *err
 * (may be NULL) gets errno on failure; *syscalls (may be NULL) counts the
 * process_vm_readv calls. */
bool rm_read(pid_t pid, uint64_t addr, void *buf, size_t len, int *err, uint64_t *syscalls);
/* Read many; each req's ok tells.  Returns the number read fully.  Retries
 * past a failed element so one bad address does not hide the others. */
size_t rm_readv(pid_t pid, struct rm_req *reqs, size_t n, int *err, uint64_t *syscalls);

static inline bool rm_ptr_ok(uint64_t p, uint64_t align)
{
	return p >= 4096 && p < EMBER_USER_ADDR_END && (p & (align - 1)) == 0;
}

/* ---- line tables (linetable.c) ---- */

enum py_linetable_kind {
	PY_LT_LNOTAB_UNSIGNED, /* 2.7 co_lnotab */
	PY_LT_LNOTAB,          /* 3.6-3.9 co_lnotab (signed line deltas) */
	PY_LT_310,             /* 3.10 co_linetable (PEP 626, -128 = no line) */
	PY_LT_LOCATIONS,       /* 3.11+ location table */
};
/* Direct decoders: line for byte offset addr; -1 = no line. */
int py_line_direct(enum py_linetable_kind k, const uint8_t *t, size_t n, int firstlineno, int addr);

/* Pre-decoded table: sorted runs; line of addr = line of the last run with
 * start <= addr (for lnotab), or of the run [start, next start) (others). */
struct py_line_run {
	uint32_t start;   /* byte offset */
	int32_t line;     /* -1 = no line */
};
struct py_lines {
	struct py_line_run *runs;
	uint32_t n;
	uint32_t end;        /* first byte offset past the table's coverage (unbounded for lnotab) */
	bool open_ended;     /* lnotab: the last run extends forever */
	int32_t firstlineno;
};
int py_lines_build(struct py_lines *out, enum py_linetable_kind k, const uint8_t *t, size_t n, int firstlineno);
int py_lines_lookup(const struct py_lines *l, int addr);   /* -1 = no line */
void py_lines_free(struct py_lines *l);

/* ---- the runtime (runtime.c): found at open, read-only afterwards ---- */

struct py_runtime {
	char version[40];            /* "3.11.7" */
	char where[512];             /* where and how it was found (ember_python_describe) */
	int major, minor, micro;     /* micro -1: unknown */
	struct py_offsets off;
	enum py_linetable_kind lt_kind;
	uint64_t runtime;            /* &_PyRuntime (3.7+) */
	uint64_t interp_head_addr;   /* where the first interpreter pointer lives */
	uint64_t gil_tstate_addr;    /* 2.7-3.11: where the GIL holder's tstate pointer lives */
	uint64_t t_code, t_frame, t_str, t_bytes, t_py2unicode;   /* type objects */
	uint32_t ts_len, fr_len, co_len, str_hdr_len;   /* bytes read of a thread state, frame,
	                                                 * code object header, str header */
	uint32_t str_hash_off;       /* of the cached hash in a str (2.7: PyStringObject.ob_shash);
	                              * 0 on 3.12+, whose code objects are numbered (co_version):
	                              * code objects' names are not hashed there */
	char root[64];               /* "/proc/PID/root" */
	char path[4096];             /* the runtime object as mapped (maps path) */
	char opened[4200];           /* ... as ember opened it (the same bytes), for the DWARF */
	uint64_t bias;               /* its load bias: absolute = file vaddr + bias */
	uint64_t eval_lo[2], eval_hi[2];   /* the eval function (and its .cold part) by the
	                                    * symbols, absolute */
	uint32_t neval;
};
/* From the offsets in rt->off: the bytes read of a thread state, a frame,
 * a code object and a str header, and where a str's hash is. */
void py_runtime_set_lengths(struct py_runtime *rt);
/* Find the runtime of process py->pid (py->opts read): libpython or the
 * executable, its version, offsets and type objects.  EMBER_PY_OK, or
 * another status with a one-line reason in msg. */
int py_runtime_find(struct ember_python *py, char *msg, size_t msglen);

/* ---- the reader of one process ---- */

struct py_snapshot;     /* read/: snapshot.c */
struct py_strings;      /* read/: strings.c */
struct py_code_cache;   /* read/: code_cache.c, code_index.c */
struct py_frames;       /* read/: frames.c */
struct py_threads;      /* read/: threads.c, thread_read.c */
struct py_tn_cache;     /* read/: thread_names.c */
struct py_eval;         /* check/: eval_dwarf.c */
struct py_check;        /* check/: calib.c, evidence.c */
struct py_copier_link;  /* copier/: copier.c */

struct ember_python {
	pid_t pid;                       /* session/reader.c, at open; read by all */
	struct ember_python_opts opts;   /* ... */
	uint64_t syscalls;               /* process_vm_readv calls of every layer */
	char describe[720];              /* session/reader.c: rt.where and eval->note */
	struct py_runtime rt;            /* runtime.c */
	struct py_snapshot *snap;
	struct py_strings *str;
	struct py_code_cache *code;
	struct py_frames *fr;
	struct py_threads *th;
	struct py_tn_cache *tn;
	struct py_eval *eval;
	struct py_check *chk;
	struct py_copier_link *cp;
};

#endif
