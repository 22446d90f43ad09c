/* The record the in-kernel frame copier (copier.bpf.c) hands to ember,
 * and the per-thread entry ember gives it: the format both sides share
 * (BPF C and user space; its inline helpers are plain C for both). */
#ifndef EMBER_COPIER_RECORD_H
#define EMBER_COPIER_RECORD_H

#include <linux/types.h>

#define EMBER_COPIER_MAX_FRAMES 128    /* frames copied per sample; a deeper stack's outer
                                    * frames are read afterwards, from the target */
#define EMBER_COPIER_FRAME_BYTES 128   /* >= every version's frame length (fr_len) */
#define EMBER_COPIER_CODE_BYTES 256    /* >= every version's code-object header (co_len) */
#define EMBER_COPIER_TS_BYTES 256      /* >= every version's thread-state prefix (ts_len) */
#define EMBER_COPIER_MAX_THREADS 16384
#define EMBER_COPIER_MAX_CODES 32768   /* code objects the copier remembers having seen */
#define EMBER_COPIER_NEW_THREAD_WAKES 64 /* samples of a thread ember has not registered
                                    * that wake it (then it is taken as not Python) */
#define EMBER_COPIER_RING_BYTES (4u << 20)
#define EMBER_COPIER_OBJ_BYTES 256     /* bytes copied per object a new code object names */
#define EMBER_COPIER_NEW_CODES 4       /* new code objects per record whose objects are copied */
#define EMBER_COPIER_OBJS 4            /* objects per code object: name, qualname, file, line table */
#define EMBER_COPIER_OBJ_TABLE 3       /* ... the line table's index there */
#define EMBER_COPIER_TABLE_MORE 4096   /* line-table bytes copied past the first EMBER_COPIER_OBJ_BYTES
                                    * (a power of two) */

/* What ember registers per OS thread (key: the tid as the kernel sees it). */
struct ember_copier_thread {
	__u32 pid;          /* the process it belongs to: a reused tid elsewhere is ignored */
	__u32 frame_len;    /* bytes copied per frame, <= EMBER_COPIER_FRAME_BYTES */
	__u64 tstate;       /* its PyThreadState */
	__s32 top_off;      /* tstate offset of the top-frame pointer (<= 3.10 frame,
	                     * 3.13 current_frame) or of the _PyCFrame pointer (3.11/3.12) */
	__s32 cf_off;       /* 3.11/3.12: offset of current_frame in _PyCFrame; -1 otherwise */
	__u32 back_off;     /* frame offset of the link to the caller's frame (multiple of 8) */
	__u32 code_off;     /* frame offset of its code object pointer (multiple of 8) */
	__u32 code_len;     /* bytes copied per code object, <= EMBER_COPIER_CODE_BYTES */
	__u32 ts_len;       /* bytes of the thread state copied, <= EMBER_COPIER_TS_BYTES */
	__u32 key_off[5];   /* code-header offsets of the words that identify a code
	                     * object (name, filename, line table, bytecode or size,
	                     * 3.12+ co_version's word; multiples of 8, < code_len):
	                     * what ember's cache checks */
	__u32 obj_off[EMBER_COPIER_OBJS]; /* code-header offsets of the pointers to the objects
	                     * a new code object's name is read from (multiples of 8,
	                     * < code_len; 0: none) */
	__u32 table_sval;   /* offset of the bytes in the line table (a bytes object; its
	                     * ob_size at 16): how much of it to copy (0: the first
	                     * EMBER_COPIER_OBJ_BYTES only) */
	__u32 name_hash_off;/* offset of the cached hash in the str key_off[0] points to
	                     * (a multiple of 8, < 256; 0: none) */
	__u32 arg_off;      /* <= 3.10: frame offset of the first argument (f_localsplus[0],
	                     * a multiple of 8); 0: none */
	__u32 mark_off;     /* ... where in the frame's copy to put it (three words ember
	                     * does not read: a multiple of 8, + 24 <= frame_len) */
	__u32 ob_type_off;  /* an object's offset of its type pointer */
	__u32 code_tag;     /* 3.14+: the low bits of the code pointer that tag a _PyStackRef */
	__u64 gil_holder;   /* --gil before 3.13: where the GIL holder's thread state
	                     * pointer is (2.7-3.11 the current tstate, 3.12 the GIL's
	                     * last_holder); 0: not asked */
	__u64 gil_locked;   /* 3.12: the GIL's locked word (an int; 1: held); 0: none */
	__u32 wakes;        /* the copier's own count, for threads not registered yet */
	__u32 comm_mix;     /* ... and a mix of its comm when counted */
	__u32 peer;         /* a thread with no Python state (tstate 0), a pool's worker: the
	                     * registered thread of its process whose frames to copy at its
	                     * samples instead (the one that dispatches its work); 0: none */
	__u32 pad;
};
/* A thread the copier met before ember registered it has an entry with
 * tstate 0: nothing to copy; its first EMBER_COPIER_NEW_THREAD_WAKES samples
 * wake ember (with a record without frames), which then reads them at once
 * and registers the thread if it runs Python.  A new comm (an exec: a
 * wrapper that ends in `exec python`) starts the count again. */

/* The code objects the copier has seen, by process and address, with the
 * mix of their identifying words (a reused address is a new object), bit 0
 * cleared: ember sets it for a method (<= 3.10, no co_qualname: its class is
 * that of its first argument, `self` or `cls`).  For a frame of such a code
 * object the copier reads the first argument and its type, and writes, at
 * mark_off in the frame's copy, the frame's address ^ EMBER_COPIER_ARG_MARK, the
 * argument and its type: by the time ember reads the record the call may be
 * over, its arguments cleared and `self` freed. */
#define EMBER_COPIER_CODE_METHOD 1ull
#define EMBER_COPIER_ARG_MARK 0x5e1f7e9e5e1f7e9eull
struct ember_copier_code_key {
	__u64 addr;
	__u32 pid, pad;
};

/* ember's pid namespace (st_dev and st_ino of /proc/self/ns/pid): threads
 * are looked up by their tid as ember sees it (the same as in its samples),
 * also when ember runs inside a container.  ino 0: the root namespace's. */
struct ember_copier_config {
	__u64 ns_dev, ns_ino;
};

enum ember_copier_flags {
	EMBER_COPIER_UNREADABLE = 1u << 0,   /* a read failed (page not present, bad pointer) */
	EMBER_COPIER_MORE = 1u << 1,         /* the chain goes on past the frames copied */
	EMBER_COPIER_WOKE = 1u << 2,         /* the record woke ember (see below) */
	EMBER_COPIER_GIL_KNOWN = 1u << 3,    /* the GIL's holder was read at the sample (gil_holder) */
	EMBER_COPIER_HOLDS_GIL = 1u << 4,    /* ... and it was this thread */
	EMBER_COPIER_PEER = 1u << 5,         /* the frames are those of thread `peer`, copied at the
	                                      * sample of thread `tid` (its pool's worker) */
};

/* ember drains its rings on a timer, not at every sample (a wakeup costs
 * the target an interrupt), so most records are read milliseconds after
 * their sample.  That is fine while everything the record points to is
 * already known to ember.  The copier wakes ember, for this record, when
 * the late read could go wrong: a code object it has not seen before
 * (ember must read its names and line table before it is freed: a module's
 * code lives only during its import), a read that failed or a chain longer
 * than the copy (the rest is read live), an unregistered thread, or a ring
 * a quarter full. */

/* A record: this header, then data[] packed, every part a multiple of 8
 * bytes: the thread state's first ts_len bytes (ts_len 0: not copied), then
 * entries { u64 address; bytes }, innermost frame first: nframes frames of
 * frame_len bytes, each followed, when its code object differs from the
 * frame before's, by that code object's header of code_len bytes and the
 * cached hash of its name (8 bytes; 0 when unreadable), its address tagged
 * with EMBER_COPIER_CODE_TAG (ncodes of them).  Code objects can be freed right
 * after the sample (a module's code, once imported) and their addresses
 * reused: a copy of the same instant tells.  The name's hash tells a code
 * object from a freed one whose name, file name, line table and bytecode
 * were at the same addresses (code.replace(co_name=...) of one code object,
 * each freed before the next is made: every pointer in the headers equal).
 *
 * After them, for the first EMBER_COPIER_NEW_CODES code objects the copier had
 * not seen, the first EMBER_COPIER_OBJ_BYTES of each object their obj_off
 * pointers lead to (names, file name, line table), addresses tagged with
 * EMBER_COPIER_OBJ_TAG (nobjs of them): ember names a new code object from
 * these when it gets to the record, even if the object was freed by then
 * (ember late: a stolen CPU, a loaded machine).  A line table longer than
 * that (a module's code: 0.4-2 KB in numpy's) is followed by the rest of it,
 * up to EMBER_COPIER_TABLE_MORE bytes, as an entry { u64 address (of its byte
 * EMBER_COPIER_OBJ_BYTES) tagged EMBER_COPIER_OBJ_TAG | EMBER_COPIER_LONG_TAG; u64
 * length, a multiple of 8; bytes } (also counted in nobjs): a module's code
 * object is freed as soon as its import is done, often before ember could
 * read it.  Longer objects are read from the target. */
#define EMBER_COPIER_CODE_TAG 1ull
#define EMBER_COPIER_OBJ_TAG 2ull
#define EMBER_COPIER_LONG_TAG 4ull
#define EMBER_COPIER_TAGS (EMBER_COPIER_CODE_TAG | EMBER_COPIER_OBJ_TAG | EMBER_COPIER_LONG_TAG)
#define EMBER_COPIER_FRAMES_BYTES (EMBER_COPIER_TS_BYTES + \
	EMBER_COPIER_MAX_FRAMES * (8 + EMBER_COPIER_FRAME_BYTES + 8 + EMBER_COPIER_CODE_BYTES + 8))
#define EMBER_COPIER_DATA_BYTES (EMBER_COPIER_FRAMES_BYTES + \
	EMBER_COPIER_NEW_CODES * (EMBER_COPIER_OBJS * (8 + EMBER_COPIER_OBJ_BYTES) + 16 + EMBER_COPIER_TABLE_MORE))

struct ember_copier_record {
	__u32 pid, tid;
	__u32 peer, pad;    /* with EMBER_COPIER_PEER: the thread whose frames these are */
	__u64 time_ns;      /* CLOCK_MONOTONIC, taken just before the kernel writes the sample */
	__u64 tstate;
	__u64 top;          /* the innermost frame's address (0: no frame) */
	__u32 nframes, ncodes;
	__u32 flags;
	__u32 ts_len, frame_len, code_len;
	__u32 nobjs;
	__u32 bpf_off;      /* the BPF program's own scratch (see there) */
	__u32 bpf_method, bpf_pad; /* ... (the last code object's EMBER_COPIER_CODE_METHOD) */
	__u64 bpf_arg, bpf_type;   /* ... (the last first argument copied, and its type) */
	__u32 bpf_new[EMBER_COPIER_NEW_CODES];
	__u8 data[EMBER_COPIER_DATA_BYTES];   /* only the used part is sent */
};

/* Bytes after the address word of the entry whose (tagged) address is a. */
static inline __u32 ember_copier_entry_bytes(const struct ember_copier_record *r, __u64 a)
{
	return a & EMBER_COPIER_OBJ_TAG ? EMBER_COPIER_OBJ_BYTES : a & EMBER_COPIER_CODE_TAG ? r->code_len + 8 : r->frame_len;
}

/* The object entry at q (after the frames and code objects): its bytes,
 * and how many (*len); the next entry follows them. */
static inline const __u8 *ember_copier_obj_bytes(const __u8 *q, __u64 *len)
{
	__u64 a;
	__builtin_memcpy(&a, q, 8);
	if (a & EMBER_COPIER_LONG_TAG) {
		__builtin_memcpy(len, q + 8, 8);
		return q + 16;
	}
	*len = EMBER_COPIER_OBJ_BYTES;
	return q + 8;
}

/* Bytes of the frames and code objects after the thread state. */
static inline __u64 ember_copier_frames_bytes(const struct ember_copier_record *r)
{
	return r->nframes * (8ull + r->frame_len) + r->ncodes * (8ull + r->code_len + 8);
}

#endif
