/* Internal interfaces of python-stacks/ (not for other modules). */
#ifndef EMBER_PY_INTERNAL_H
#define EMBER_PY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python_stacks.h"

/* ---- offsets (offsets.c, generated offsets_table.c) ---- */

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
	int32_t co_size, co_firstlineno, co_code, co_filename, co_name, co_qualname;
	int32_t co_linetable, co_firsttraceable, co_code_adaptive, co_argcount, co_varnames;
	int32_t co_flags;            /* <= 3.10 only: generators are told from their code */
	int32_t co_version;          /* 3.12+: a number no other code object got (u32) */
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
};
extern const struct py_offsets py_offsets_table[];
extern const size_t py_offsets_table_len;

/* The entry for release major.minor.micro (micro -1: unknown, then the
 * entry for every patch release), NULL if none. */
const struct py_offsets *py_offsets_for(int major, int minor, int micro);
/* 3.13+: overwrite o with the values of the _Py_DebugOffsets struct read
 * from &_PyRuntime (dbg = its bytes).  Returns false if implausible. */
bool py_offsets_apply_debug(struct py_offsets *o, const uint8_t *dbg, size_t len, char *msg, size_t msglen);

/* ---- remote memory (remote_mem.c) ---- */

struct rm_req {
	uint64_t addr;
	void *buf;
	uint32_t len;
	bool ok;         /* out: fully read */
};
/* Read len bytes at addr; true only if all were read.  *err gets errno on failure. */
bool rm_read(pid_t pid, uint64_t addr, void *buf, size_t len, int *err, uint64_t *syscalls);
/* Read many; each req's ok tells.  Returns the number read fully.  Retries
 * past a failed element so one bad address does not hide the others. */
size_t rm_readv(pid_t pid, struct rm_req *reqs, size_t n, int *err, uint64_t *syscalls);

static inline bool rm_ptr_ok(uint64_t p, uint64_t align)
{
	return p >= 4096 && p < 0x800000000000ull && (p & (align - 1)) == 0;
}

/* ---- ELF + runtime discovery (proc_maps.c, elf_syms.c, find_runtime.c) ---- */

struct map_entry {
	uint64_t start, end, offset, inode;
	char perms[5];
	char *path;       /* NULL for anonymous */
};
struct proc_maps {
	struct map_entry *v;
	size_t n;
};
int proc_maps_read(pid_t pid, struct proc_maps *m);
void proc_maps_free(struct proc_maps *m);

struct elf_file {
	const uint8_t *data;
	size_t size;
	bool is_exec;            /* ET_EXEC (non-PIE) */
	bool has_symtab;
	uint8_t build_id[20];
	size_t build_id_len;
	uint64_t build_id_vaddr; /* vaddr of the note descriptor, 0 if none */
	uint64_t first_load_vaddr, first_load_offset; /* PT_LOAD containing file offset 0 */
};
int elf_open(struct elf_file *e, const char *path);
void elf_close(struct elf_file *e);
/* Symbol value (st_value) by exact name from .symtab then .dynsym; 0 if absent.
 * *size gets st_size when non-NULL. */
uint64_t elf_symbol(const struct elf_file *e, const char *name, uint64_t *size);
/* Section address (sh_addr) by name, 0 if absent. */
uint64_t elf_section(const struct elf_file *e, const char *name, uint64_t *size);
/* File bytes at a virtual address (via PT_LOAD), NULL if outside the file. */
const uint8_t *elf_at_vaddr(const struct elf_file *e, uint64_t vaddr, size_t len);

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

/* ---- strings (strings.c) ---- */

/* UTF-8 encode code points; returns bytes written (excl. NUL), always NUL-terminates when cap>0. */
size_t py_utf8_from_ucs(const void *data, size_t n, int kind, char *out, size_t cap);


/* ---- the reader's state (find_runtime.c, threads.c, frames.c, code_cache.c) ---- */

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
	uint64_t born_ns;           /* the instant it was first seen (read_ns): an older object
	                             * at its address can only be in samples before it */
};
enum { PY_ARG_NONE = 0, PY_ARG_SELF = 1, PY_ARG_CLS = 2 };

/* The real code entry behind id (itself unless a class variant). */
static inline uint32_t py_code_base(const struct ember_python *py, uint32_t id);

#define PY_PREF_MAX 512         /* remote objects prefetched per thread read */
struct py_pref {
	uint64_t addr;
	uint32_t len;
};
/* What one thread's next read prefetches: the objects its last read used
 * (in the order the walk met them, to notice a change cheaply), and, built
 * only when that set changes, the same objects sorted and merged into the
 * ranges of the one process_vm_readv. */
struct py_plan_range {
	uint64_t addr;
	uint32_t len, off;                 /* bytes; offset in the snapshot buffer */
	uint32_t first;                    /* its objects: sorted[first .. next range's first) */
};
struct py_plan {
	uint32_t npref, nranges;
	size_t used;                       /* snapshot buffer bytes the ranges take */
	struct py_pref pref[PY_PREF_MAX];  /* discovery order */
	struct py_pref sorted[PY_PREF_MAX];
	struct py_plan_range range[PY_PREF_MAX + 1];
};
struct py_thread {
	uint32_t tid;
	uint32_t own_tid;                  /* the same thread's id in the target's own pid namespace
	                                    * (what CPython records); == tid outside containers */
	uint64_t tstate, interp, pthread;  /* tstate 0: no Python state at the last scan */
	struct py_plan *plan;              /* allocated on first read */
	uint64_t copier_tstate;                /* thread state registered with the frame copier */
	uint64_t copier_since_ns;              /* ... since then (CLOCK_MONOTONIC, as samples) */
	uint64_t tid_checked_ns;           /* <= 3.10: last check of the TID in struct pthread */
};

/* Read-through snapshot of remote objects for one read_thread call. */
#define SNAP_MAX 1024
#define SNAP_SLOTS 2048
#define SNAP_REC_FRAMES 256      /* > the frames of a record (EMBER_COPIER_MAX_FRAMES) */
struct snap_ent {
	uint64_t addr;
	uint32_t len, off;  /* off: its place in the buffer */
	uint16_t slot;      /* its hash slot, cleared at the next read */
	bool ok, used, visited, fetched;
};
struct snap {
	struct snap_ent e[SNAP_MAX];
	uint16_t slot[SNAP_SLOTS];  /* entry index + 1; 0 = empty */
	uint32_t n;
	uint8_t *buf;
	size_t cap, used;
	uint8_t scratch[4][512];    /* overflow reads when e[] is full (rotating) */
	uint64_t memo_code;         /* this read's last code object found in it: address */
	uint32_t memo_id;           /* and code id (recursion asks for the same one again) */
	/* Frames copied at the sample (NULL: none), used where they lie: the
	 * walk asks for them in the record's order, so a cursor finds them. */
	const struct ember_copier_record *rec;
	const uint8_t *rec_cur, *rec_end;  /* the next entry, the end of the entries */
	bool rec_ts;                /* it holds the thread state's bytes */
	uint64_t rec_seen;          /* frames handed out from it, one bit per hash, */
	uint64_t rec_frames[SNAP_REC_FRAMES];   /* and their addresses */
	uint32_t rec_nframes;
	struct snap_ent rec_ent;    /* stands for the record entry just handed out */
	unsigned flip;
	bool gone;                  /* ESRCH seen */
};

struct py_bc_range {
	uint64_t start, end;
	uint32_t code;
};
/* Learning which evidence candidate holds an activation's instruction
 * pointer (evidence.c). */
struct py_calib {
	uint64_t pc;                   /* the activation's pc (0: free slot) */
	uint16_t trials;
	uint16_t code_hits[EMBER_PY_EVIDENCE_MAX];
	uint16_t line_hits[EMBER_PY_EVIDENCE_MAX];
	int16_t cand;                  /* -1: not learnt */
	bool lines;                    /* its line agrees often enough to replace the read's */
	/* which candidate holds the activation's (innermost) frame */
	uint16_t ftrials;
	uint16_t frame_hits[EMBER_PY_EVIDENCE_MAX];
	int16_t fcand;                 /* -1: not learnt */
};
#define PY_FRAME_ADDRS 256

struct str_intern {
	char **v;                   /* open addressing, cap power of two */
	char **shortv;              /* short filename per slot (filenames only) */
	size_t cap, n;
};

/* thread_names.c: what finding threading._active took, kept between name
 * reads (all zero until the first one; re-validated on every use). */
struct py_tn_cache {
	uint64_t t_dict, t_module, t_int;  /* static type objects, recognised by tp_name */
	uint64_t interp;                   /* the interpreter the rest belongs to */
	uint64_t module, md_dict;          /* its sys.modules["threading"] and that module's dict */
	uint64_t hint_keys, hint_entry, hint_key; /* md_dict["_active"]: keys object, entry, key */
};

struct ember_python {
	pid_t pid;
	struct ember_python_opts opts;
	char version[40];
	char describe[512];
	int major, minor, micro;
	struct py_offsets off;
	enum py_linetable_kind lt_kind;
	uint64_t runtime;            /* &_PyRuntime (3.7+) */
	uint64_t interp_head_addr;   /* where the first interpreter pointer lives */
	uint64_t gil_tstate_addr;    /* 2.7-3.11: where the GIL holder's tstate pointer lives */
	uint64_t t_code, t_frame, t_str, t_bytes, t_py2unicode;
	uint32_t ts_len, fr_len, co_len, str_hdr_len;
	uint32_t copier_mark_off;       /* <= 3.10 with the copier: where in a frame's copy it puts
	                             * a method's first argument (0: nowhere; copier.c) */
	uint32_t str_hash_off;       /* of the cached hash in a str (2.7: PyStringObject.ob_shash);
	                              * 0 on 3.12+, whose code objects are numbered (co_version):
	                              * code objects' names are not hashed there */
	int32_t pthread_tid_off;     /* <=3.10: offset of the TID in glibc's struct pthread, -1 unknown */
	uint32_t own_pid;            /* the pid in the target's own pid namespace (== pid outside
	                              * containers); what its main thread's struct pthread holds */
	bool own_pid_known;          /* own_pid read from /proc (once) */
	bool tid_calibrated;
	char root[64];               /* "/proc/PID/root" */

	struct py_thread *threads;
	size_t nthreads, threads_cap, last_hit;
	uint64_t last_scan_ns;

	struct py_code_entry **codes;  /* id = index + 1 */
	size_t ncodes, codes_cap;
	uint64_t *code_keys;           /* addr -> id hash (open addressing) */
	uint32_t *var_ids;             /* (base id, type) -> class variant id (open addressing) */
	size_t var_cap, var_n;
	uint32_t *code_ids;
	size_t code_hash_cap, code_hash_n;
	struct str_intern strs;

	char rt_path[4096];            /* the runtime object as mapped (maps path) */
	uint64_t rt_bias;              /* its load bias: absolute = file vaddr + rt_bias */
	/* eval-loop function ranges (absolute) */
	uint64_t eval_lo[2], eval_hi[2];
	uint32_t neval;
	struct py_dwarf_job *dwarf_job; /* eval_dwarf.c loader, until adopted */
	char dwarf_path[4200];         /* the runtime object as ember opened it, for a later load */
	uint64_t dwarf_bias;
	bool dwarf_deferred;           /* opts.defer_debug_info: the DWARF not read yet */
	uint32_t reads_without_copy;   /* ... and reads since that had no frames copied at the sample */
	/* where the eval loop's variables live per pc range (eval_dwarf.c),
	 * sorted by variable then pc; absolute */
	struct py_eval_loc *eval_locs;
	size_t neval_locs;
	/* bytecode address -> code id, sorted by start (evidence.c) */
	struct py_bc_range *bc;
	size_t nbc, bc_cap;
	/* addresses of the last read's frames (frame objects up to 3.10,
	 * interpreter frames from 3.11), innermost first: the sample check
	 * pairs them with the frame pointers the sample held */
	uint64_t fr_addrs[PY_FRAME_ADDRS];
	uint32_t nfr_addrs;
	struct py_calib *calib;        /* by pc, open addressing; NULL until needed */
	size_t calib_cap, calib_n;
	uint64_t calib_learnt;         /* sites with a candidate */
	/* <= 3.10: which candidate holds the frame object at sampled pcs, pooled
	 * over all of them (each pc is seen too rarely to learn its own; the
	 * frame object is checked by its f_back before it is used) */
	uint16_t leaf_ftrials;
	uint16_t leaf_fhits[EMBER_PY_EVIDENCE_MAX];

	struct snap *snap;
	struct ember_py_copier *copier; /* the frame copier (not owned), or NULL */
	bool seeded;                   /* this read walks frames copied at the sample */
	const struct ember_copier_record *objs; /* a record whose copied objects code objects are
	                                * decoded from (copier.h), or NULL */
	uint32_t objs_missed;          /* reads of this decode its objects did not cover */
	uint64_t seed_top;             /* ... from this innermost frame */
	bool prefetch_only;            /* this read so far came from its one batched prefetch */
	uint64_t read_ns;              /* time of the current read (code_recheck_ms) */
	struct ember_python_stats st;
	struct py_tn_cache tn;         /* thread_names.c */
};

/* eval_dwarf.c: where the eval loop keeps `next_instr`, from the
 * interpreter's DWARF (its own or a separate debug file), per pc range. */
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
/* Start loading, in a thread, for the runtime object opened at elf_path
 * (load bias `bias`) once eval_lo/hi[0] is known; nothing when there is no
 * DWARF.  cold_only: only the .cold part, by its jumps (no DWARF read).
 * _adopt (reader thread, at each read) takes the result over once the
 * loader is done: the table, and the .cold part from DWARF when the
 * symbols lacked it.  _stop waits for the loader and frees (at close). */
void py_eval_dwarf_start(struct ember_python *py, const char *elf_path, uint64_t bias, bool cold_only);
void py_eval_dwarf_adopt(struct ember_python *py);
void py_eval_dwarf_stop(struct ember_python *py);
/* Candidate holding variable var at pc, -1 if unknown. */
int py_eval_dwarf_cand(const struct ember_python *py, uint64_t pc, enum py_eval_var var);

/* eval_cold.c: the .cold part of the function at [hot_lo, hot_hi) (module
 * addresses) found from the targets of its jumps and the CFI rows there,
 * without symbols or DWARF; x86-64 only.  py_cold_part_of opens path itself
 * (tests). */
struct Dwfl_Module;
struct Dwfl;
/* eval_dwarf.c: libdwfl opened on one file, offline, with its debug file
 * found by build-id or .gnu_debuglink; module addresses are the file's own
 * vaddrs.  NULL (and *mod NULL) on failure; dwfl_end() it. */
struct Dwfl *py_dwfl_open(const char *path, struct Dwfl_Module **mod);
bool py_find_cold_part(struct Dwfl_Module *mod, uint64_t hot_lo, uint64_t hot_hi, uint64_t *lo, uint64_t *hi);
bool py_cold_part_of(const char *path, uint64_t hot_lo, uint64_t hot_hi, uint64_t *lo, uint64_t *hi);

/* threads.c */
int py_scan_threads(struct ember_python *py);
struct py_thread *py_thread_find(struct ember_python *py, uint32_t tid);
uint64_t py_now_ns(void);
/* snapshot (threads.c) */
void snap_begin(struct ember_python *py, struct py_thread *t);
const uint8_t *snap_get(struct ember_python *py, uint64_t addr, uint32_t len);
struct snap_ent *snap_find(struct snap *s, uint64_t addr);
/* this read answers from rec (copied at the sample) first */
struct ember_copier_record;
void snap_use_record(struct snap *s, const struct ember_copier_record *rec, uint32_t ts_len);
/* snap_get, also giving the object's snapshot entry (NULL: none) */
const uint8_t *snap_get_ent(struct ember_python *py, uint64_t addr, uint32_t len, struct snap_ent **ent);
void snap_end(struct ember_python *py, struct py_thread *t);

/* threads.c: one read of tid; rec: frames copied at the sample (valid for
 * the call), or NULL; at_ns: the sample's time (rec's instant), or 0. */
struct ember_copier_record;
int py_read_thread(struct ember_python *py, uint32_t tid, const struct ember_copier_record *rec, uint64_t at_ns,
		   struct ember_py_frame *out, int max, uint32_t *flags);

/* copier.c: register t's thread state with the frame copier (once
 * per state).  py_copier_read: read the sample of tid at time_ns with the
 * record copied at that sample (py_read_thread; n its result) and return
 * true, or false when there is none (a record is used once). */
struct py_copier_read {
	uint32_t tid;
	uint64_t time_ns;
	struct ember_py_frame *out;
	int max;
	uint32_t *flags;
	int n;
};
void py_copier_register(struct ember_python *py, struct py_thread *t);
bool py_copier_read(struct ember_python *py, struct py_copier_read *rd);
/* Stop using the copier (ember_python_close). */
void py_copier_detach(struct ember_python *py);
/* The code object at addr could not be named (freed before ember read it):
 * the copier is to take it as new again, so that its next sample wakes
 * ember again, rather than every later sample of it failing the same way. */
void py_copier_forget_code(struct ember_python *py, uint64_t addr);
/* <= 3.10, a method's frame f whose bytes b came from the copier's record:
 * its first argument and that one's type as the copier read them at the
 * sample (true), else false, and the copier is asked to read them from the
 * code object's next sample on (copier.h). */
bool py_copier_first_arg(struct ember_python *py, uint64_t f, const uint8_t *b, uint32_t code_id, uint64_t *arg,
		     uint64_t *type);
/* The len bytes at addr from the objects r copied for new code objects:
 * true when one of them holds them all. */
bool py_copier_obj_read(const struct ember_copier_record *r, uint64_t addr, void *buf, size_t len);
/* What the copier is told about t (false: it cannot copy this version) */
struct ember_copier_thread;
bool py_copier_thread_entry(const struct ember_python *py, const struct py_thread *t, struct ember_copier_thread *v);

/* frames.c */
int py_walk(struct ember_python *py, struct py_thread *t, const uint8_t *ts, struct ember_py_frame *out,
            int max, uint32_t *flags);

/* <= 3.10: the code id of the frame object at f as it is now (two reads),
 * its f_back and the line of its last instruction; 0 if f is not a frame. */
uint32_t py_frame_object_code(struct ember_python *py, uint64_t f, uint64_t *back, uint32_t *line);

/* 3.11+: whether the interpreter frame at f runs code id and is, by
 * itself, a whole eval-loop activation: 3.11's entry frame, or (3.12+) a
 * generator's frame, which the sample shows resumed from C.  One read. */
bool py_frame_starts_activation(struct ember_python *py, uint64_t f, uint32_t id);

/* code_cache.c */
/* Code id for the code object at addr whose header bytes (co_len) are hdr
 * and whose name's cached hash is name_hash (read with the header; 0 or -1:
 * not known, then not checked); 0 if it is not a code object or cannot be
 * read. */
uint32_t py_code_get(struct ember_python *py, uint64_t addr, const uint8_t *hdr, uint64_t name_hash);
/* The cached hash of the name of the code object whose header is hdr, read
 * from the target in the read's snapshot (prefetched by the next read); 0
 * when unreadable. */
uint64_t py_code_name_hash(struct ember_python *py, const uint8_t *hdr);
void py_code_free_all(struct ember_python *py);
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
/* evidence.c: index a new code id's bytecode range */
void py_bc_add(struct ember_python *py, uint32_t id);
/* Read a str/bytes object's text as UTF-8 ("?" if unreadable); cold path. */
char *py_read_string(struct ember_python *py, uint64_t addr);
const char *py_intern(struct ember_python *py, const char *s, bool filename, const char **short_out);

static inline uint32_t py_code_base(const struct ember_python *py, uint32_t id)
{
	return id && py->codes[id - 1]->base ? py->codes[id - 1]->base : id;
}

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

#endif
