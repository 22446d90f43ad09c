/* In-kernel half of sample-time Python frames: attached to ember's perf
 * events, it runs in the sampled thread's context right before the kernel
 * writes the sample, and copies that thread's Python frame chain (the raw
 * bytes of each frame, innermost first) into a ring buffer.  User space then
 * walks these bytes exactly as it walks frames it reads itself, so the
 * Python stack and the native stack are of the same instant.
 *
 * Only threads ember registered (tid -> thread state and offsets) are
 * copied.  Cost in the target: one map lookup and one user-memory read per
 * frame (at most EMBER_SF_MAX_FRAMES); reads never fault pages in, a
 * failing read ends the copy.  The sample itself is always kept. */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>

#include "sample_frames.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EMBER_SF_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct ember_sf_thread);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EMBER_SF_RING_BYTES);
} records SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ember_sf_config);
} config SEC(".maps");

/* The record is built here (too big for the BPF stack), then sent trimmed. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ember_sf_record);
} scratch SEC(".maps");

#define HEADER_BYTES ((__u32)__builtin_offsetof(struct ember_sf_record, frames))

SEC("perf_event")
int ember_copy_frames(struct bpf_perf_event_data *ctx)
{
	__u32 zero = 0, tid, pid;
	(void)ctx;

	struct ember_sf_config *cfg = bpf_map_lookup_elem(&config, &zero);
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
	struct ember_sf_thread *t = bpf_map_lookup_elem(&threads, &tid);
	if (!t || t->pid != pid)
		return 1;
	struct ember_sf_record *r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return 1;
	r->pid = t->pid;
	r->tid = tid;
	r->time_ns = bpf_ktime_get_ns();
	r->tstate = t->tstate;
	r->nframes = 0;
	r->flags = 0;
	r->top = 0;

	__u32 len = t->frame_len;
	if (len > EMBER_SF_FRAME_BYTES)
		len = EMBER_SF_FRAME_BYTES;
	r->frame_len = len;
	__u32 back = t->back_off & (EMBER_SF_FRAME_BYTES - 8);

	__u64 f = 0;
	if (bpf_probe_read_user(&f, sizeof f, (const void *)(t->tstate + t->top_off)) != 0) {
		r->flags |= EMBER_SF_UNREADABLE;
		goto send;
	}
	if (t->cf_off >= 0 && f) {   /* 3.11/3.12: through the _PyCFrame */
		__u64 cf = f;
		f = 0;
		if (bpf_probe_read_user(&f, sizeof f, (const void *)(cf + t->cf_off)) != 0) {
			r->flags |= EMBER_SF_UNREADABLE;
			goto send;
		}
	}
	r->top = f;

	__u32 n = 0;
	for (__u32 i = 0; i < EMBER_SF_MAX_FRAMES; i++) {
		if (!f)
			break;
		struct ember_sf_frame *fr = &r->frames[i];
		fr->addr = f;
		if (bpf_probe_read_user(fr->bytes, len, (const void *)f) != 0) {
			r->flags |= EMBER_SF_UNREADABLE;
			break;
		}
		n = i + 1;
		f = *(__u64 *)(fr->bytes + back);
	}
	if (f && n == EMBER_SF_MAX_FRAMES)
		r->flags |= EMBER_SF_MORE;
	r->nframes = n;
send:;
	__u64 size = HEADER_BYTES + (__u64)r->nframes * sizeof(struct ember_sf_frame);
	if (size > sizeof *r)
		size = sizeof *r;
	bpf_ringbuf_output(&records, r, size, 0);
	return 1;
}

/* bpf_probe_read_user is for GPL-compatible programs only. */
char LICENSE[] SEC("license") = "Dual BSD/GPL";
