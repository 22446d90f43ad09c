/* Internal interfaces of python-stacks/ (not for other modules), one
 * section per layer, the lowest first:
 *
 *   remote memory, offsets, line tables
 *   -> the runtime found in the target
 *   -> the per-read snapshot
 *   -> code objects (strings, the code cache, the bytecode index)
 *   -> frames
 *   -> threads (the thread table; one read of a thread)
 *   -> { the sample check, thread names, the copier's user-space half }
 *   -> the entry points (reader.c; session.c and merge.c above them)
 *
 * A file calls functions of its own layer's files below it and of lower
 * layers only, and no two files call each other.  A lower layer tells an
 * upper one something only through a hook the upper one registered
 * (py_code_cache.on_unnamed, py_frames.on_method) or a counter it reads
 * (py_threads.scans).  struct ember_python holds one sub-struct per layer,
 * each written by its own files only (upper layers read lower ones').
 * Not thread-safe, like the reader. */
#ifndef EMBER_PY_INTERNAL_H
#define EMBER_PY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch.h"
#include "idtab.h"
#include "python_stacks.h"

struct ember_copier_record;

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

/* ---- the per-read snapshot (snapshot.c) ---- */

/* What one thread's next read prefetches (snapshot.c's; a thread keeps
 * it, and frees it with free()). */
struct py_plan;

/* One remote object of the read, as the snapshot hands it out.  The walk
 * marks the frames it met (visited: a second visit is a cycle). */
struct snap_ent {
	uint64_t addr;
	uint32_t len, off;  /* off: its place in the buffer */
	uint16_t slot;      /* its slot in the snapshot's table */
	bool ok, used, visited, fetched;
	bool copied;        /* its bytes are the record's (copied at the sample) */
};
struct py_snapshot;     /* snapshot.c's; one per reader */

struct py_snapshot *snap_new(void);
void snap_free(struct py_snapshot *s);
/* Start a read: ONE process_vm_readv of plan's ranges (NULL: none). */
void snap_begin(struct ember_python *py, const struct py_plan *plan);
/* This read answers from rec (frames copied at the sample, valid until
 * snap_begin) first: the thread state's bytes and its entries. */
void snap_use_record(struct ember_python *py, const struct ember_copier_record *rec);
/* The len bytes at addr as of this read (NULL: unreadable), valid until
 * snap_begin; *ent (may be NULL) gets its entry, NULL for a read the table
 * had no room for. */
const uint8_t *snap_get_ent(struct ember_python *py, uint64_t addr, uint32_t len, struct snap_ent **ent);
const uint8_t *snap_get(struct ember_python *py, uint64_t addr, uint32_t len);
/* End a read: *plan (allocated on first use) is what it used. */
void snap_end(struct ember_python *py, struct py_plan **plan);
/* The objects of a plan are no longer a thread's (its state changed). */
void snap_plan_reset(struct py_plan *plan);
/* Reads past the snapshot, now (a check that nothing moved meanwhile):
 * whether all of reqs were read. */
bool snap_read_now(struct ember_python *py, struct rm_req *reqs, size_t n);
/* Whether this read came from the one batched prefetch (and the record)
 * alone, and whether it saw the process gone (ESRCH). */
bool snap_prefetch_only(const struct ember_python *py);
bool snap_gone(const struct ember_python *py);
/* The len bytes at addr from the objects record r copied for new code
 * objects (copier_record.h): true when they hold them all. */
bool snap_record_obj(const struct ember_copier_record *r, uint64_t addr, void *buf, size_t len);
/* Objects served from the prefetch, and read one by one, so far. */
void snap_counts(const struct ember_python *py, uint64_t *prefetch_hits, uint64_t *single_reads);

/* ---- code objects: strings (strings.c) ---- */

/* Reads that decode a code object, and the strings of str objects. */
struct py_strings {
	struct ember_strtab *tab;            /* every name and file name, interned */
	struct ember_idtab short_of;         /* file name -> its entry in files[] */
	struct py_short_name { const char *name, *short_name; } *files;
	size_t nfiles, files_cap;
	const struct ember_copier_record *objs;  /* decode from its copies first (NULL: none) */
	uint32_t objs_missed;                /* reads since py_strings_begin it did not serve */
};
int py_strings_init(struct ember_python *py);
void py_strings_free(struct ember_python *py);
/* Reads for decoding come from rec's copies first (NULL: the target). */
void py_strings_source(struct ember_python *py, const struct ember_copier_record *rec);
/* Count from now the reads rec's copies did not serve; whether none so far. */
void py_strings_begin(struct ember_python *py);
bool py_strings_all_copied(const struct ember_python *py);
/* Text of a str/bytes object as malloc'ed UTF-8 ("?" if unreadable); cold path. */
char *py_read_string(struct ember_python *py, uint64_t addr);
/* A bytes object's payload, malloc'ed (*n its length), NULL if none; its
 * length alone (-1 if it is not one). */
uint8_t *py_read_bytes(struct ember_python *py, uint64_t addr, size_t *n);
int64_t py_bytes_len(struct ember_python *py, uint64_t addr);

/* locals.c: the short repr of what one frame slot holds (its raw 8 bytes:
 * 3.14+ a tagged reference) into buf; false when the slot holds no Python
 * value (not bound yet). */
bool py_local_repr(struct ember_python *py, uint64_t slot, char *buf, size_t len);
/* s interned (valid until close); a file name also gets its short form,
 * py-spy's package-relative path, in *short_out (may be NULL). */
const char *py_intern(struct ember_python *py, const char *s, bool filename, const char **short_out);

/* ---- code objects: the cache (code_cache.c) and the bytecode index (code_index.c) ---- */

struct py_code_entry {
	struct ember_py_code pub;
	uint64_t addr;
	/* validation key: header words that must match on every reuse */
	uint64_t k_name, k_filename, k_linetable, k_code;
	uint64_t k_name_hash;       /* the name's cached hash at first sight (0: not known) */
	uint32_t k_version;         /* 3.12+ co_version */
	int64_t k_size;             /* ob_size (3.11+: code units) */
	int32_t k_firstlineno;
	int64_t ninstr_bytes;       /* bytes of bytecode (bounds for the instruction offset); -1 unknown */
	int32_t firsttraceable;     /* 3.11+ _co_firsttraceable (code units) */
	bool generator;             /* <= 3.10: a generator's or coroutine's code (co_flags) */
	uint64_t checked_ns;        /* last time the header was compared */
	uint64_t bc_start;          /* remote address of the bytecode, 0 unknown */
	struct py_lines lines;
	int64_t memo_addr1;         /* the last line looked up: instruction offset + 1 (0: none) */
	int32_t memo_line;          /* ... and its line (a steady caller asks for the same one) */
	uint8_t first_arg;          /* <= 3.10: PY_ARG_SELF / PY_ARG_CLS when the first argument is
	                             * named so (the class is guessed from it, as py-spy does) */
	uint32_t base;              /* a class variant: the code id it names (0: a real code entry;
	                             * lines and bytecode are the base's) */
	uint64_t v_type, v_tp_name; /* a variant: its type object and that type's tp_name pointer */
	uint32_t prev;              /* the entry this one replaced at the same address (0: none):
	                             * samples still queued may hold the older object */
	uint64_t born_ns;           /* the instant it was first seen (now_ns): an older object
	                             * at its address can only be in samples before it */
};
enum { PY_ARG_NONE = 0, PY_ARG_SELF = 1, PY_ARG_CLS = 2 };

struct py_bc_range {
	uint64_t start, end;
	uint32_t code;
};
struct py_code_cache {
	struct py_code_entry **v;      /* id = index + 1; append-only until close */
	size_t n, cap;
	struct ember_idtab by_addr;    /* address -> the newest id there */
	struct ember_idtab variants;   /* (base id, type) -> class variant id */
	struct py_bc_range *bc;        /* bytecode address -> code id, sorted by start (code_index.c) */
	size_t nbc, bc_cap;
	uint64_t now_ns;               /* the instant of the bytes being decoded (py_code_at) */
	uint64_t created, revalidations_failed;   /* stats */
	/* Hook: the code object at addr could not be named (freed before ember
	 * read it); set by whoever must forget it (the copier), or NULL. */
	void (*on_unnamed)(struct ember_python *py, uint64_t addr);
};
int py_code_init(struct ember_python *py);
void py_code_free(struct ember_python *py);
/* Set (NULL: clear) the on_unnamed hook. */
void py_code_on_unnamed(struct ember_python *py, void (*fn)(struct ember_python *py, uint64_t addr));
/* The bytes about to be decoded are of instant ns (CLOCK_MONOTONIC): when
 * code objects count as validated, and which of several objects that held
 * an address a sample saw. */
void py_code_at(struct ember_python *py, uint64_t ns);
/* Code id for the code object at addr whose header bytes (co_len) are hdr
 * and whose name's cached hash is name_hash (read with the header; 0 or -1:
 * not known, then not checked); 0 if it is not a code object or cannot be
 * read. */
uint32_t py_code_get(struct ember_python *py, uint64_t addr, const uint8_t *hdr, uint64_t name_hash);
/* The same for a header in record rec (copier_record.h), named from rec's copies
 * and as of rec's instant. */
uint32_t py_code_from_record(struct ember_python *py, const struct ember_copier_record *rec, uint64_t addr,
			     const uint8_t *hdr, uint64_t name_hash);
/* The cached hash of the name of the code object whose header is hdr, read
 * in the read's snapshot (prefetched by the next read); 0 when unreadable. */
uint64_t py_code_name_hash(struct ember_python *py, const uint8_t *hdr);
/* Line of byte offset addr of code id: 0 no line, -2 outside the code. */
int py_code_line(struct ember_python *py, uint32_t id, int64_t addr);
/* <= 3.10 methods: the id naming code `base` as "Class.name", for the class
 * whose type object is `type` (tp_name pointer tp_name); base if unknown. */
uint32_t py_code_variant(struct ember_python *py, uint32_t base, uint64_t type, uint64_t tp_name);
/* ... the one made before for that type, when its name cannot be read now
 * (the target has exited); base if none. */
uint32_t py_code_variant_known(struct ember_python *py, uint32_t base, uint64_t type);
/* Whether code id's object is still at its address, unchanged (one read of
 * its header; it then counts as validated now).  For evidence that would
 * change a read: a code object freed since it was indexed may have left its
 * address, and its bytecode range, to another. */
bool py_code_still_there(struct ember_python *py, uint32_t id);
/* Id cached for addr if it was validated less than code_recheck_ms ago, else 0. */
uint32_t py_code_recent(struct ember_python *py, uint64_t addr);
/* code_index.c: index a new code id's bytecode range; the code id whose
 * bytecode holds addr, validated in the last 2 s, preferring one of the
 * frames fr[0..n) (0: none); the line of the instruction before the one
 * addr points at (a "next instruction" pointer), 0 if none. */
void py_bc_add(struct ember_python *py, uint32_t id);
uint32_t py_bc_lookup(const struct ember_python *py, uint64_t addr, const struct ember_py_frame *fr, int n);
int py_bc_line(const struct ember_python *py, uint32_t id, uint64_t addr);

/* ---- frames (frames.c) ---- */

#define PY_FRAME_ADDRS 256
struct py_frames {
	/* addresses of the last read's frames (frame objects up to 3.10,
	 * interpreter frames from 3.11), innermost first: the sample check
	 * pairs them with the frame pointers the sample held */
	uint64_t addrs[PY_FRAME_ADDRS];
	uint32_t naddrs;
	uint64_t memo_code;            /* this walk's last code object: address */
	uint32_t memo_id;              /* and code id (recursion asks for the same one again) */
	uint32_t mark_off;             /* <= 3.10: where in a frame's copy the copier puts a
	                                * method's first argument (copier_record.h; 0: nowhere) */
	/* Hook: a method's frame copied without its first argument: the code
	 * object at addr wants it copied (set by the copier), or NULL. */
	void (*on_method)(struct ember_python *py, uint64_t code_addr);
};
void py_frames_init(struct ember_python *py);
/* Set (NULL: clear) the on_method hook. */
void py_frames_on_method(struct ember_python *py, void (*fn)(struct ember_python *py, uint64_t code_addr));
/* A read starts: no frame addresses yet. */
void py_frames_reset(struct ember_python *py);
/* Walk the frames of the thread state at tstate (interpreter interp) whose
 * bytes are ts, through the snapshot; rec: the record the snapshot answers
 * from (frames copied at the sample), or NULL.  Innermost first, at most
 * max; returns the count and ORs enum ember_py_read_flags into *flags. */
int py_walk(struct ember_python *py, uint64_t tstate, uint64_t interp, const uint8_t *ts,
	    const struct ember_copier_record *rec, struct ember_py_frame *out, int max, uint32_t *flags);
/* <= 3.10: the code id of the frame object at f as it is now (two reads),
 * its f_back and the line of its last instruction; 0 if f is not a frame. */
uint32_t py_frame_object_code(struct ember_python *py, uint64_t f, uint64_t *back, uint32_t *line);
/* 3.11+: whether the interpreter frame at f runs code id and is, by
 * itself, a whole eval-loop activation: 3.11's entry frame, or (3.12+) a
 * generator's frame, which the sample shows resumed from C.  One read. */
bool py_frame_starts_activation(struct ember_python *py, uint64_t f, uint32_t id);

/* ---- threads (threads.c: the table; thread_read.c: one read) ---- */

struct py_thread {
	uint32_t tid;
	uint32_t own_tid;                  /* the same thread's id in the target's own pid namespace
	                                    * (what CPython records); == tid outside containers */
	uint64_t tstate, interp, pthread;  /* tstate 0: no Python state at the last scan */
	struct py_plan *plan;              /* its next read's prefetch (snapshot.c's), or NULL */
	uint64_t tid_checked_ns;           /* <= 3.10: last check of the TID in struct pthread */
	struct {                           /* copier.c's: */
		uint64_t tstate;           /* the thread state the copier was given */
		uint64_t since_ns;         /* ... since then (CLOCK_MONOTONIC, as samples) */
	} copier;
};
struct py_threads {
	struct py_thread *v;
	size_t n, cap, last_hit;
	uint64_t last_scan_ns;
	int32_t pthread_tid_off;     /* <= 3.10: offset of the TID in glibc's struct pthread, -1 unknown */
	bool tid_calibrated;
	uint32_t own_pid;            /* the pid in the target's own pid namespace (== pid outside
	                              * containers); what its main thread's struct pthread holds */
	bool own_pid_known;          /* own_pid read from /proc (once) */
	/* counts: scans also tell who registers threads elsewhere that the
	 * table changed */
	uint64_t scans, reads, torn, torn_retries, unreadable, at_sample;
};
void py_threads_init(struct ember_python *py);
void py_threads_free(struct ember_python *py);
/* Walk the interpreters' thread states and rebuild the table: the count
 * found, or -errno (-ESRCH: the process is gone). */
int py_scan_threads(struct ember_python *py);
struct py_thread *py_thread_find(struct ember_python *py, uint32_t tid);
/* thread_read.c: one read of tid; rec: frames copied at the sample (valid
 * for the call), or NULL; at_ns: the sample's time (rec's instant), or 0.
 * As ember_python_read_thread; *flags (not NULL) gets the flags. */
int py_read_thread(struct ember_python *py, uint32_t tid, const struct ember_copier_record *rec, uint64_t at_ns,
		   struct ember_py_frame *out, int max, uint32_t *flags);
/* The same from rec alone (a peer's frames, copied at another thread's
 * sample): 0 frames when rec does not hold a whole, untorn read of tid. */
int py_read_copy(struct ember_python *py, uint32_t tid, const struct ember_copier_record *rec, uint64_t at_ns,
		 struct ember_py_frame *out, int max, uint32_t *flags);

/* ---- the sample check: where the eval loop keeps its state (eval_cold.c, eval_dwarf.c) ---- */

enum py_eval_var {
	PY_EVAL_NEXT_INSTR,            /* the instruction pointer */
	PY_EVAL_FRAME,                 /* the frame: `f` (PyFrameObject *, <= 3.10), `frame` (3.11+) */
	PY_EVAL_NVARS
};
struct py_eval_loc {
	uint64_t lo, hi;               /* absolute pcs [lo, hi) */
	int16_t cand;                  /* evidence candidate index (python_stacks.h layout) */
	uint8_t var;                   /* enum py_eval_var */
};
struct py_eval {
	struct py_dwarf_job *job;      /* the loader thread's, until adopted */
	struct py_eval_loc *locs;      /* where the variables live per pc range, sorted by
	                                * variable then pc */
	size_t nlocs;
	uint64_t cold_lo, cold_hi;     /* the .cold part the symbols lacked, from DWARF or its
	                                * jumps (absolute; 0: none) */
	bool deferred;                 /* opts.defer_debug_info: the DWARF not read yet */
	uint32_t reads_without_copy;   /* ... and reads since that had no frames copied */
	char note[192];                /* what it found, for ember_python_describe */
};
/* eval_cold.c: libdwfl opened on one file, offline, with its debug file
 * found by build-id or .gnu_debuglink (under root/usr/lib/debug first when
 * root is not NULL: the target's own root, "/proc/PID/root"); module
 * addresses are the file's own vaddrs.  NULL (and d->mod NULL) on failure;
 * py_dwfl_close() it either way.  The .cold part
 * of the function at [hot_lo, hot_hi) (module addresses) from the targets
 * of its jumps and the CFI rows there (with elf, not NULL: the whole frame
 * description those jumps enter), without symbols or DWARF; x86-64 only.
 * py_cold_part_of opens path itself (tests). */
struct Dwfl_Module;
struct Dwfl;
struct py_dwfl {
	struct Dwfl *dwfl;
	struct Dwfl_Module *mod;
	void *cb;                      /* its callbacks and debug path, which it keeps pointers to */
};
struct Dwfl *py_dwfl_open(struct py_dwfl *d, const char *path, const char *root);
void py_dwfl_close(struct py_dwfl *d);
struct ember_elf;
bool py_find_cold_part(struct Dwfl_Module *mod, const struct ember_elf *elf, uint64_t hot_lo, uint64_t hot_hi,
		       uint64_t *lo, uint64_t *hi);
bool py_cold_part_of(const char *path, const char *root, uint64_t hot_lo, uint64_t hot_hi, uint64_t *lo,
		     uint64_t *hi);
/* eval_dwarf.c: at open, start loading the runtime object's DWARF in a
 * thread of its own, as opts ask (opts.defer_debug_info: only the .cold
 * part, by its jumps, until _count has seen enough reads without a copy;
 * nothing with opts.no_debug_info or without DWARF).  _adopt (reader
 * thread) takes the result over once the loader is done (true then): the
 * table, and the .cold part.  _count: a read that found n frames without a
 * copy.  _stop waits for the loader and frees (at close). */
void py_eval_dwarf_open(struct ember_python *py);
bool py_eval_dwarf_adopt(struct ember_python *py);
void py_eval_dwarf_count(struct ember_python *py, int n);
void py_eval_dwarf_stop(struct ember_python *py);
/* Candidate holding variable var at pc, -1 if unknown. */
int py_eval_dwarf_cand(const struct ember_python *py, uint64_t pc, enum py_eval_var var);

/* ---- the sample check: learning and resolving (calib.c) ---- */

/* Learning which evidence candidate holds an activation's instruction
 * pointer and frame, per site (pc). */
struct py_calib {
	uint64_t pc;
	uint16_t trials;
	uint16_t code_hits[EMBER_PY_EVIDENCE_MAX];
	uint16_t line_hits[EMBER_PY_EVIDENCE_MAX];
	int16_t cand;                  /* -1: not learnt */
	bool lines;                    /* its line agrees often enough to replace the read's */
	uint16_t ftrials;              /* which candidate holds the activation's (innermost) frame */
	uint16_t frame_hits[EMBER_PY_EVIDENCE_MAX];
	int16_t fcand;                 /* -1: not learnt */
};
struct py_check {
	struct py_calib *sites;        /* NULL until needed */
	size_t nsites, sites_cap;
	struct ember_idtab by_pc;      /* pc -> index in sites */
	uint64_t learnt;               /* sites with a candidate */
	/* <= 3.10: which candidate holds the frame object at sampled pcs, pooled
	 * over all of them (each pc is seen too rarely to learn its own; the
	 * frame object is checked by its f_back before it is used) */
	uint16_t leaf_ftrials;
	uint16_t leaf_fhits[EMBER_PY_EVIDENCE_MAX];
	uint64_t checked, corrected;   /* ember_python_reconcile's results */
};
/* What an activation's sample says: code and line, or code 0. */
struct py_resolved {
	uint32_t code;    /* 0: unknown */
	uint32_t line;
	bool lines;       /* the line is trusted over the read's */
	bool guess;       /* a site not learnt yet: may confirm a read, never change it */
};
void py_check_free(struct ember_python *py);
/* One trial of site ev->pc: f the read's frame for the activation, frame
 * its address (0 unknown). */
void py_calib_update(struct ember_python *py, const struct ember_py_evidence *ev, const struct ember_py_frame *f,
		     uint64_t frame);
/* The code and line activation ev ran, by DWARF or the site's learning;
 * fr, n: the read (its code objects win an address range several held). */
struct py_resolved py_resolve(struct ember_python *py, const struct ember_py_evidence *ev,
			      const struct ember_py_frame *fr, int n);
/* The frame activation ev ran, per DWARF or learnt; 0 if unknown. */
uint64_t py_frame_of(struct ember_python *py, const struct ember_py_evidence *ev);

/* ---- thread names (py_dict.c, thread_names.c) ---- */

/* What finding threading._active took, kept between name reads (all zero
 * until the first one; re-validated on every use): thread_names.c's. */
struct py_tn_cache {
	uint64_t t_dict, t_module, t_int;  /* static type objects, recognised by tp_name */
	uint64_t interp;                   /* the interpreter the rest belongs to */
	uint64_t module, md_dict;          /* its sys.modules["threading"] and that module's dict */
	uint64_t hint_keys, hint_entry, hint_key; /* md_dict["_active"]: keys object, entry, key */
};
/* ember_python_thread_name for thread t of the table. */
int py_thread_name(struct ember_python *py, const struct py_thread *t, char *buf, size_t len);

/* ---- the copier's user-space half (copier.c, copier_intake.c, copier_ring.c) ---- */

struct py_copier_link {
	struct ember_py_copier *copier;  /* not owned; NULL: none */
	uint64_t scans_seen;             /* py_threads.scans when every thread was registered */
};
/* What the copier is told about t (false: it cannot copy this version). */
struct ember_copier_thread;
bool py_copier_thread_entry(const struct ember_python *py, const struct py_thread *t,
			    struct ember_copier_thread *v);
/* After a read of tid (0: none): register with the copier the threads a
 * scan found since the last call, and tid's state if it changed. */
void py_copier_sync(struct ember_python *py, uint32_t tid);
/* copier.c: tell the copier to copy thread peer's frames at thread tid's
 * samples (tid has no Python state; peer 0: none). */
void py_copier_set_peer(struct ember_python *py, uint32_t tid, uint32_t peer);
/* Whether a sample of tid at time_ns came before the copier knew its state. */
bool py_copier_unregistered(struct ember_python *py, uint32_t tid, uint64_t time_ns);
/* Stop using the copier (ember_python_close). */
void py_copier_detach(struct ember_python *py);
/* copier_intake.c: the record of the sample of py's thread tid taken at
 * time_ns (CLOCK_MONOTONIC), kept or still in the ring, or NULL; valid, and
 * the ring consumed no further, until py_copier_done.  A record is handed
 * out once. */
const struct ember_copier_record *py_copier_take(struct ember_python *py, uint32_t tid, uint64_t time_ns);
void py_copier_done(struct ember_python *py);

/* ---- the entry points (reader.c) ---- */

/* The OS thread ids of the thread states found by a scan now (tests):
 * fills up to max tids, returns the count (< 0: -errno). */
int py_list_threads(struct ember_python *py, uint32_t *tids, int max);

/* ---- the reader: one sub-struct per layer ---- */

struct ember_python {
	pid_t pid;                       /* reader.c, at open; read by all */
	struct ember_python_opts opts;   /* ... */
	uint64_t syscalls;               /* process_vm_readv calls of every layer */
	char describe[720];              /* reader.c: rt.where and eval.note */
	struct py_runtime rt;            /* runtime.c */
	struct py_snapshot *snap;        /* snapshot.c */
	struct py_strings str;           /* strings.c */
	struct py_code_cache code;       /* code_cache.c, code_index.c */
	struct py_frames fr;             /* frames.c */
	struct py_threads th;            /* threads.c, thread_read.c */
	struct py_eval eval;             /* eval_dwarf.c */
	struct py_check chk;             /* calib.c, evidence.c */
	struct py_tn_cache tn;           /* thread_names.c */
	struct py_copier_link cp;        /* copier.c */
};

/* The real code entry behind id (itself unless a class variant). */
static inline uint32_t py_code_base(const struct ember_python *py, uint32_t id)
{
	return id && py->code.v[id - 1]->base ? py->code.v[id - 1]->base : id;
}
static inline struct py_code_entry *py_code(const struct ember_python *py, uint32_t id)
{
	return py->code.v[id - 1];
}

#endif
