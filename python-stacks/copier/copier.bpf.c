/* The copier's in-kernel half: attached to ember's perf events, it runs in
 * the sampled thread's context right before the kernel writes the sample,
 * and copies that thread's Python frame chain (the raw bytes of each
 * frame, innermost first) into a ring buffer.  User space then walks these
 * bytes exactly as it walks frames it reads itself, so the Python stack
 * and the native stack are of the same instant.
 *
 * With each frame goes the header of its code object (not repeated for a
 * run of frames of the same code), and the thread state's first bytes.
 * Only threads ember registered (tid -> thread state and offsets) are
 * copied; at a sample of a pool's worker that ember gave a peer (the
 * thread that dispatches its work), the peer's frames are, as they are at
 * that instant (one more map lookup).  Cost in the target: two map
 * lookups, a read of the thread state, and one user-memory read per frame
 * and two per code object (at most EMBER_COPIER_MAX_FRAMES frames), two
 * more per frame of a method whose class ember takes from its first
 * argument (<= 3.10), and a lookup per code object; reads never fault
 * pages in, a failing read ends the copy.  The sample itself is always
 * kept.  The record wakes ember only when it must be read at once
 * (copier_record.h says when).
 *
 * Each program comes in two variants, the walks in bpf_loop() or unrolled
 * (copy_frames says why); copier.c loads one. */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <stdbool.h>
#include <bpf/bpf_helpers.h>

#include "copier_record.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EMBER_COPIER_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct ember_copier_thread);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EMBER_COPIER_MAX_CODES);
	__type(key, struct ember_copier_code_key);
	__type(value, __u64);
} codes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EMBER_COPIER_RING_BYTES);
} records SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ember_copier_config);
} config SEC(".maps");

/* The record is built here (too big for the BPF stack), then sent trimmed:
 * one entry per CPU, by the CPU's number (ember sets max_entries to the
 * number of possible CPUs before loading).  Not a per-CPU array: its values
 * are limited to 32 KB.  Runs of this program never nest on one CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ember_copier_record);
} scratch SEC(".maps");

/* A length from ember, as a range the verifier keeps without splitting
 * paths: [8, max] in steps of 8 (max a power of two).  A clamp ("if (len >
 * max) len = max") would make one path per exact value and, over 64
 * iterations, more states than the verifier explores. */
#define LEN_IN(len, max) ((((len) - 8) & ((max) - 8)) + 8)


/* A method's first argument and its type (copier_record.h), into the copy
 * fr of the frame at address at.  (A method calling methods of the same
 * object: its type is read once.) */
static __always_inline void copy_first_arg(struct ember_copier_record *r, __u8 *fr, __u64 at, __u32 arg_off,
					   __u32 mark_off, __u32 type_off)
{
	__u64 arg = 0, type = 0;
	if (bpf_probe_read_user(&arg, sizeof arg, (const void *)(at + arg_off)) != 0 || !arg || (arg & 7))
		return;
	if (arg == r->bpf_arg) {
		type = r->bpf_type;
	} else {
		if (bpf_probe_read_user(&type, sizeof type, (const void *)(arg + type_off)) != 0)
			return;
		r->bpf_arg = arg;
		r->bpf_type = type;
	}
	*(__u64 *)(fr + mark_off) = at ^ EMBER_COPIER_ARG_MARK;
	*(__u64 *)(fr + mark_off + 8) = arg;
	*(__u64 *)(fr + mark_off + 16) = type;
}

/* Where a thread's frames and code headers keep what the copy needs
 * (struct ember_copier_thread), bounded for the verifier (copy_frames). */
struct frame_layout {
	__u32 len, code_len, back, code_at, key[5], hash_off, arg_off, type_off, mark_off;
};

/* The frame walk's state: what copy_frame reads and advances. */
struct frame_walk {
	struct ember_copier_record *r;
	const struct ember_copier_thread *t;
	__u64 f;           /* the next frame's address (0: the chain's end) */
	__u64 last_code;   /* the code object of the frame copied last (0: none, or unread) */
	__u32 off;         /* where in r->data the next entry goes */
	__u32 n, nc;       /* frames and code headers copied */
	__u32 pid;
	struct frame_layout l;
};

/* One frame of the walk, and the header of its code object when it differs
 * from the frame before's: 0, or 1 when the walk ends here (no frame left,
 * no room, a failed read). */
static __always_inline int copy_frame(struct frame_walk *w, struct frame_layout l)
{
	struct ember_copier_record *r = w->r;
	const struct ember_copier_thread *t = w->t;
	__u32 len = l.len, code_len = l.code_len, back = l.back, code_at = l.code_at, hash_off = l.hash_off;
	__u32 key0 = l.key[0], key1 = l.key[1], key2 = l.key[2], key3 = l.key[3], key4 = l.key[4];
	__u32 arg_off = l.arg_off, type_off = l.type_off, mark_off = l.mark_off;
	__u64 f = w->f;
	if (!f)
		return 1;
	/* The offset goes through memory: the verifier then knows only the
	 * bound below, the same on every path, and can prune; tracked
	 * exactly, each mix of frames and code headers so far is a path of its
	 * own (past its 1M-instruction limit at 64 frames, unrolled). */
	r->bpf_off = w->off;
	__u32 off = *(volatile __u32 *)&r->bpf_off;
	w->off = off;
	if (off > EMBER_COPIER_FRAMES_BYTES - 3 * 8 - EMBER_COPIER_FRAME_BYTES - EMBER_COPIER_CODE_BYTES)
		return 1;
	__u8 *slot = r->data + off, *fr = slot + 8;
	__u64 at = f;
	*(__u64 *)slot = f;
	if (bpf_probe_read_user(fr, len, (const void *)f) != 0) {
		r->flags |= EMBER_COPIER_UNREADABLE;
		return 1;
	}
	w->n++;
	off += 8 + len;
	w->off = off;
	__u64 code = *(__u64 *)(fr + code_at) & ~(__u64)(t->code_tag & 7);
	w->f = *(__u64 *)(fr + back);
	if (!code || (code & 7))
		return 0;
	if (code == w->last_code) {
		if (r->bpf_method && arg_off)
			copy_first_arg(r, fr, at, arg_off, mark_off, type_off);
		return 0;
	}
	slot = r->data + off;
	*(__u64 *)slot = code | EMBER_COPIER_CODE_TAG;
	if (bpf_probe_read_user(slot + 8, code_len, (const void *)code) != 0) {
		r->flags |= EMBER_COPIER_WOKE;   /* that frame's code is read afterwards: now */
		w->last_code = 0;
		return 0;
	}
	__u32 hdr_at = off + 8;
	const __u8 *h = slot + 8;
	/* The name's cached hash: its contents, where every pointer of a
	 * new code object can equal a freed one's (copier_record.h). */
	__u64 name = *(const __u64 *)(h + key0), name_hash = 0;
	if (hash_off && name && !(name & 7) &&
	    bpf_probe_read_user(&name_hash, sizeof name_hash, (const void *)(name + hash_off)) != 0)
		name_hash = 0;
	*(__u64 *)(slot + 8 + code_len) = name_hash;
	off += 8 + code_len + 8;
	w->off = off;
	w->nc++;
	w->last_code = code;
	/* Seen before, and still the same object? */
	__u64 id = *(const __u64 *)(h + key0) ^ (*(const __u64 *)(h + key1) << 1) ^
		   (*(const __u64 *)(h + key2) << 2) ^ (*(const __u64 *)(h + key3) << 3) ^
		   (*(const __u64 *)(h + key4) << 4) ^ (name_hash * 0x9E3779B97F4A7C15ull);
	id &= ~EMBER_COPIER_CODE_METHOD;
	struct ember_copier_code_key ck = { .addr = code, .pid = w->pid };
	__u64 *seen = bpf_map_lookup_elem(&codes, &ck);
	/* (through memory, as off: not a path of its own per frame) */
	r->bpf_method = seen && (*seen & ~EMBER_COPIER_CODE_METHOD) == id && (*seen & EMBER_COPIER_CODE_METHOD);
	if (r->bpf_method && arg_off)
		copy_first_arg(r, fr, at, arg_off, mark_off, type_off);
	if (!seen || (*seen & ~EMBER_COPIER_CODE_METHOD) != id) {
		bpf_map_update_elem(&codes, &ck, &id, BPF_ANY);
		r->flags |= EMBER_COPIER_WOKE;
		/* its objects are copied below (a count kept in memory,
		 * like off, so as not to split the verifier's paths) */
		__u32 k = *(volatile __u32 *)&r->nobjs;
		if (k < EMBER_COPIER_NEW_CODES) {
			r->bpf_new[k & (EMBER_COPIER_NEW_CODES - 1)] = hdr_at;
			r->nobjs = k + 1;
		}
	}
	return 0;
}

/* copy_frame as bpf_loop()'s callback (ctx: the walk, on the caller's
 * stack).  The layout is bounded here again (LEN_IN and the masks give
 * back what they are given): read back from the stack, it is numbers the
 * verifier need not have kept the range of. */
static long frame_step(__u32 i, void *ctx)
{
	struct frame_walk *w = ctx;
	struct frame_layout l = {
		.len = LEN_IN(w->l.len, EMBER_COPIER_FRAME_BYTES),
		.code_len = LEN_IN(w->l.code_len, EMBER_COPIER_CODE_BYTES),
		.back = w->l.back & (EMBER_COPIER_FRAME_BYTES - 8),
		.code_at = w->l.code_at & (EMBER_COPIER_FRAME_BYTES - 8),
		.key = { w->l.key[0] & (EMBER_COPIER_CODE_BYTES - 8), w->l.key[1] & (EMBER_COPIER_CODE_BYTES - 8),
			 w->l.key[2] & (EMBER_COPIER_CODE_BYTES - 8), w->l.key[3] & (EMBER_COPIER_CODE_BYTES - 8),
			 w->l.key[4] & (EMBER_COPIER_CODE_BYTES - 8) },
		.hash_off = w->l.hash_off & (EMBER_COPIER_CODE_BYTES - 8),
		.arg_off = w->l.arg_off & 0x3f8,
		.type_off = w->l.type_off & 0xf8,
		.mark_off = w->l.mark_off & (EMBER_COPIER_FRAME_BYTES - 8),
	};
	(void)i;
	return copy_frame(w, l);
}

/* The walk over the new code objects' objects: what copy_objs advances. */
struct objs_walk {
	struct ember_copier_record *r;
	const struct ember_copier_thread *t;
	__u32 off;   /* where in r->data the next entry goes */
	__u32 no;    /* entries copied */
};

/* The objects a new code object is named from: those of the k-th one
 * (r->bpf_new), after the entries so far.  0, or 1 when the header's
 * offset is out of bounds (none after it is copied). */
static __always_inline int copy_objs(struct objs_walk *w, __u32 k)
{
	struct ember_copier_record *r = w->r;
	const struct ember_copier_thread *t = w->t;
	__u32 h = r->bpf_new[k & (EMBER_COPIER_NEW_CODES - 1)];
	if (h > EMBER_COPIER_FRAMES_BYTES - EMBER_COPIER_CODE_BYTES)
		return 1;
	__u64 prev = 0;
	for (__u32 j = 0; j < EMBER_COPIER_OBJS; j++) {
		__u32 at = t->obj_off[j] & (EMBER_COPIER_CODE_BYTES - 8);
		__u64 p = *(const __u64 *)(r->data + h + at);
		if (!at || !p || (p & 7) || p == prev)
			continue;
		prev = p;
		r->bpf_off = w->off;
		__u32 off = *(volatile __u32 *)&r->bpf_off;
		w->off = off;
		if (off > EMBER_COPIER_DATA_BYTES - 8 - EMBER_COPIER_OBJ_BYTES)
			break;
		__u8 *slot = r->data + off;
		*(__u64 *)slot = p | EMBER_COPIER_OBJ_TAG;
		if (bpf_probe_read_user(slot + 8, EMBER_COPIER_OBJ_BYTES, (const void *)p) != 0)
			continue;   /* (at the end of a mapping): ember reads it from the target */
		off += 8 + EMBER_COPIER_OBJ_BYTES;
		w->off = off;
		w->no++;
		/* A longer line table: the rest of it (copier_record.h) */
		if (j != EMBER_COPIER_OBJ_TABLE || !t->table_sval)
			continue;
		__u64 need = (t->table_sval & 63) + *(const __u64 *)(slot + 8 + 16);
		if (need <= EMBER_COPIER_OBJ_BYTES || need > EMBER_COPIER_OBJ_BYTES + EMBER_COPIER_TABLE_MORE)
			continue;
		__u32 more = LEN_IN((__u32)(need - EMBER_COPIER_OBJ_BYTES + 7) & ~7u, EMBER_COPIER_TABLE_MORE);
		r->bpf_off = off;
		off = *(volatile __u32 *)&r->bpf_off;
		w->off = off;
		if (off > EMBER_COPIER_DATA_BYTES - 16 - EMBER_COPIER_TABLE_MORE)
			break;
		slot = r->data + off;
		*(__u64 *)slot = (p + EMBER_COPIER_OBJ_BYTES) | EMBER_COPIER_OBJ_TAG | EMBER_COPIER_LONG_TAG;
		*(__u64 *)(slot + 8) = more;
		if (bpf_probe_read_user(slot + 16, more, (const void *)(p + EMBER_COPIER_OBJ_BYTES)) != 0)
			continue;
		off += 16 + more;
		w->off = off;
		w->no++;
	}
	return 0;
}

/* copy_objs as bpf_loop()'s callback (ctx: the walk, on the caller's stack). */
static long objs_step(__u32 k, void *ctx)
{
	return copy_objs(ctx, k);
}

/* The copy, in the current thread's context: the body of the four
 * programs below.  Its parts: find the thread, read the GIL holder, copy
 * the thread state, walk the frames (copy_frame: each frame and its code
 * header), walk the new code objects (copy_objs: the objects they are
 * named from), and send.  Everything is inlined into each program except
 * bpf_loop()'s callbacks: what the verifier checks is this compiled code,
 * and the way it is written (lengths as LEN_IN ranges, the packing offset
 * and counts through the record's memory, so that paths differing only in
 * them merge) is what keeps its paths within the verifier's budget.
 *
 * loop (a constant in each program): each walk is a bpf_loop() callback
 * (kernel 5.17+), which the verifier checks as one body, not once per
 * iteration (~13k instructions processed, against ~280k unrolled: a
 * third of a second on a fast CPU, seconds on a slow one, before ember
 * can start its command); else the walks are plain loops the compiler
 * unrolls, for kernels without bpf_loop.  Both run the same body and
 * write the same record.  at_switch (also a constant): the thread is
 * leaving the CPU, not sampled; only threads ember registered are copied
 * then (a switch is no way to discover threads). */
static __always_inline int copy_frames(bool at_switch, bool loop)
{
	__u32 zero = 0, tid, pid;

	struct ember_copier_config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)
		return 1;
	if (cfg->ns_ino) {
		struct bpf_pidns_info ns;
		if (bpf_get_ns_current_pid_tgid(cfg->ns_dev, cfg->ns_ino, &ns, sizeof ns) != 0)
			return 1;   /* not in ember's namespace or below: not its target */
		tid = ns.pid;
		pid = ns.tgid;
	} else {
		__u64 id = bpf_get_current_pid_tgid();
		tid = (__u32)id;
		pid = (__u32)(id >> 32);
	}
	struct ember_copier_thread *t = bpf_map_lookup_elem(&threads, &tid);
	if (at_switch && (!t || t->pid != pid || !t->tstate))
		return 0;
	/* A pool's worker (no Python state of its own): the frames of the
	 * thread that dispatches its work, as they are at this sample. */
	__u32 peer = 0;
	if (t && t->pid == pid && !t->tstate && t->peer) {
		__u32 pk = t->peer;
		struct ember_copier_thread *pt = bpf_map_lookup_elem(&threads, &pk);
		if (pt && pt->pid == pid && pt->tstate) {
			peer = pk;
			t = pt;
		}
	}
	__u32 comm_mix = 0;
	if (!t || t->pid != pid || !t->tstate) {
		__u32 comm[4] = { 0 };
		bpf_get_current_comm(comm, sizeof comm);
		comm_mix = (comm[0] * 0x9E3779B1u) ^ comm[1] ^ (comm[2] * 0x85EBCA77u) ^ comm[3];
	}
	if (t && t->pid == pid && !t->tstate) {
		if (comm_mix != t->comm_mix) {   /* it exec'd: perhaps Python now */
			t->comm_mix = comm_mix;
			t->wakes = 0;
		}
		if (t->wakes >= EMBER_COPIER_NEW_THREAD_WAKES)
			return 1;   /* not a Python thread, as far as ember knows */
	}
	__u32 cpu = bpf_get_smp_processor_id();
	struct ember_copier_record *r = bpf_map_lookup_elem(&scratch, &cpu);
	if (!r)
		return 1;
	r->pid = pid;
	r->tid = tid;
	r->peer = peer;
	r->time_ns = bpf_ktime_get_ns();
	r->tstate = 0;
	r->nframes = 0;
	r->ncodes = 0;
	r->flags = EMBER_COPIER_WOKE;
	r->top = 0;
	r->ts_len = r->frame_len = r->code_len = 0;
	r->nobjs = 0;
	r->bpf_method = 0;
	r->bpf_arg = 0;
	__u32 off = 0;
	if (!t || t->pid != pid) {
		/* New to the copier: remember it, and let ember look now. */
		struct ember_copier_thread fresh = { .pid = pid, .wakes = 1, .comm_mix = comm_mix };
		bpf_map_update_elem(&threads, &tid, &fresh, BPF_ANY);
		goto send;
	}
	if (!t->tstate) {
		t->wakes++;
		goto send;
	}
	r->flags = peer ? EMBER_COPIER_PEER : 0;
	r->tstate = t->tstate;
	/* --gil: who held the GIL at the sample (3.13: a bit in the thread
	 * state, copied below) */
	if (t->gil_holder) {
		__u64 holder = 0;
		__u32 locked = 1;
		if (bpf_probe_read_user(&holder, sizeof holder, (const void *)t->gil_holder) == 0 &&
		    (!t->gil_locked || bpf_probe_read_user(&locked, sizeof locked, (const void *)t->gil_locked) == 0)) {
			r->flags |= EMBER_COPIER_GIL_KNOWN;
			if (holder == t->tstate && locked == 1)
				r->flags |= EMBER_COPIER_HOLDS_GIL;
		}
	}

	__u32 len = LEN_IN(t->frame_len, EMBER_COPIER_FRAME_BYTES);
	__u32 code_len = LEN_IN(t->code_len, EMBER_COPIER_CODE_BYTES);
	__u32 ts_len = LEN_IN(t->ts_len, EMBER_COPIER_TS_BYTES);
	r->frame_len = len;
	r->code_len = code_len;
	__u32 back = t->back_off & (EMBER_COPIER_FRAME_BYTES - 8);
	__u32 code_at = t->code_off & (EMBER_COPIER_FRAME_BYTES - 8);
	__u32 key0 = t->key_off[0] & (EMBER_COPIER_CODE_BYTES - 8), key1 = t->key_off[1] & (EMBER_COPIER_CODE_BYTES - 8);
	__u32 key2 = t->key_off[2] & (EMBER_COPIER_CODE_BYTES - 8), key3 = t->key_off[3] & (EMBER_COPIER_CODE_BYTES - 8);
	__u32 key4 = t->key_off[4] & (EMBER_COPIER_CODE_BYTES - 8);
	__u32 hash_off = t->name_hash_off & (EMBER_COPIER_CODE_BYTES - 8);
	__u32 arg_off = t->arg_off & 0x3f8, type_off = t->ob_type_off & 0xf8;
	__u32 mark_off = t->mark_off & (EMBER_COPIER_FRAME_BYTES - 8);
	if (!mark_off || mark_off + 24 > len)
		arg_off = 0;   /* (no room in the frame's copy: not copied) */
	if (bpf_probe_read_user(r->data, ts_len, (const void *)t->tstate) != 0) {
		ts_len = 0;
		r->flags |= EMBER_COPIER_WOKE;
	}
	r->ts_len = ts_len;
	off = ts_len;

	__u64 f = 0;
	if (bpf_probe_read_user(&f, sizeof f, (const void *)(t->tstate + t->top_off)) != 0) {
		r->flags |= EMBER_COPIER_UNREADABLE;
		goto send;
	}
	if (t->cf_off >= 0 && f) {   /* 3.11/3.12: through the _PyCFrame */
		__u64 cf = f;
		f = 0;
		if (bpf_probe_read_user(&f, sizeof f, (const void *)(cf + t->cf_off)) != 0) {
			r->flags |= EMBER_COPIER_UNREADABLE;
			goto send;
		}
	}
	r->top = f;

	/* Entries, packed (copier_record.h): each frame, then the header of its
	 * code object when it differs from the frame before's. */
	struct frame_layout l = { .len = len, .code_len = code_len, .back = back, .code_at = code_at,
				  .key = { key0, key1, key2, key3, key4 }, .hash_off = hash_off, .arg_off = arg_off,
				  .type_off = type_off, .mark_off = mark_off };
	struct frame_walk w = { .r = r, .t = t, .f = f, .off = off, .pid = pid, .l = l };
	if (loop) {
		bpf_loop(EMBER_COPIER_MAX_FRAMES, frame_step, &w, 0);
	} else {
		for (__u32 i = 0; i < EMBER_COPIER_MAX_FRAMES; i++)
			if (copy_frame(&w, l))
				break;
	}
	off = w.off;
	if (w.f && w.n == EMBER_COPIER_MAX_FRAMES)
		r->flags |= EMBER_COPIER_MORE | EMBER_COPIER_WOKE;
	r->nframes = w.n;
	r->ncodes = w.nc;

	/* The objects new code objects are named from, while they still are
	 * what the code object points to. */
	struct objs_walk ow = { .r = r, .t = t, .off = off };
	__u32 nnew = r->nobjs;
	if (loop) {
		bpf_loop(nnew < EMBER_COPIER_NEW_CODES ? nnew : EMBER_COPIER_NEW_CODES, objs_step, &ow, 0);
	} else {
		for (__u32 k = 0; k < EMBER_COPIER_NEW_CODES && k < nnew; k++)
			if (copy_objs(&ow, k))
				break;
	}
	off = ow.off;
	r->nobjs = ow.no;
send:;
	if (r->flags & EMBER_COPIER_UNREADABLE)
		r->flags |= EMBER_COPIER_WOKE;
	/* ember drains on a timer: at high rates and deep stacks the ring
	 * could fill up before then */
	if (bpf_ringbuf_query(&records, BPF_RB_AVAIL_DATA) >= EMBER_COPIER_RING_BYTES / 4)
		r->flags |= EMBER_COPIER_WOKE;
	__u64 size = (__u64)__builtin_offsetof(struct ember_copier_record, data) + off;
	if (size > sizeof *r)
		size = sizeof *r;
	/* A wakeup costs the target an irq_work interrupt (~8 us at 99 Hz,
	 * bench/RESULTS.md): only for records ember must read now. */
	bpf_ringbuf_output(&records, r, size, (r->flags & EMBER_COPIER_WOKE) ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return 1;
}

/* At each sample of ember's perf events (the unrolled variant next). */
SEC("perf_event")
int ember_copy_frames(struct bpf_perf_event_data *ctx)
{
	(void)ctx;
	return copy_frames(false, true);
}

SEC("perf_event")
int ember_copy_frames_unrolled(struct bpf_perf_event_data *ctx)
{
	(void)ctx;
	return copy_frames(false, false);
}

/* At each context switch, in the thread leaving the CPU (record --idle:
 * the frames its time off CPU is charged to; loaded only then; the
 * unrolled variant next). */
SEC("tp_btf/sched_switch")
int ember_copy_frames_switch(__u64 *ctx)
{
	(void)ctx;
	return copy_frames(true, true);
}

SEC("tp_btf/sched_switch")
int ember_copy_frames_switch_unrolled(__u64 *ctx)
{
	(void)ctx;
	return copy_frames(true, false);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
