/* python-stacks/read/: one read of a thread's Python frames (README.md,
 * "Layers"), above runtime/: the per-read snapshot (snapshot.c), code
 * objects (strings.c, code_index.c, code_cache.c), the frame walk
 * (frames.c), the thread table and one read of a thread (threads.c,
 * thread_read.c), thread names (py_dict.c, thread_names.c) and local
 * variables (locals.c).  The record the BPF copier makes at a sample, which
 * a read answers from, is copier_record.h's.
 *
 * A file calls functions of its own layer's files listed before it and of
 * lower layers only. */
#ifndef EMBER_PY_READ_H
#define EMBER_PY_READ_H

#include "idtab.h"
#include "py_runtime.h"

struct ember_copier_record;

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
/* The walk has gone deeper than any record holds: the rest of this read
 * is read now, from the target (no record is searched per object). */
void snap_deep(struct ember_python *py);
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

/* The real code entry behind id (itself unless a class variant). */
static inline uint32_t py_code_base(const struct ember_python *py, uint32_t id)
{
	return id && py->code->v[id - 1]->base ? py->code->v[id - 1]->base : id;
}
static inline struct py_code_entry *py_code(const struct ember_python *py, uint32_t id)
{
	return py->code->v[id - 1];
}

#endif
