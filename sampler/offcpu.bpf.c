/* The off-CPU tracer's in-kernel half (docs/offcpu.md), on the
 * sched_switch tracepoint, which runs in the thread being switched out:
 * when a thread of a target process leaves the CPU, a record with its
 * saved user registers and a copy of its user stack from the saved SP up
 * (what it stopped in; ember unwinds the copy as it unwinds a sample's);
 * when it gets the CPU again, a small record with the interval.
 *
 * Targets are processes ember lists (by tgid in ember's pid namespace).
 * Cost in the target: a map lookup or two per switch, and per interval
 * the register read, one user-memory read per page of stack copied, and
 * the ring's copy of it. */
#include <linux/bpf.h>
#include <stdbool.h>
#include <bpf/bpf_helpers.h>

#include "offcpu_record.h"

/* The fields read, placed by the kernel's BTF when the program loads. */
struct task_struct {
	int pid;
} __attribute__((preserve_access_index));

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_OFFCPU_MAX_TARGETS);
	__type(key, __u32);
	__type(value, __u32);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EMBER_OFFCPU_MAX_THREADS);
	__type(key, __u32);
	__type(value, __u64);
} switched_out SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EMBER_OFFCPU_RING_BYTES);
} records SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ember_offcpu_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EMBER_OFFCPU_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* The record is built here, one entry per CPU (ember sets max_entries to
 * the number of possible CPUs): too big for the BPF stack, and a per-CPU
 * array's values are limited to 32 KB. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ember_offcpu_record);
} scratch SEC(".maps");

/* The current thread's ids in ember's pid namespace: false when it is
 * not in that namespace or below (not a target). */
static __always_inline bool current_ids(__u32 *tgid, __u32 *tid)
{
	__u32 zero = 0;
	struct ember_offcpu_config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)
		return false;
	if (cfg->ns_ino) {
		struct bpf_pidns_info ns;
		if (bpf_get_ns_current_pid_tgid(cfg->ns_dev, cfg->ns_ino, &ns, sizeof ns) != 0)
			return false;
		*tid = ns.pid;
		*tgid = ns.tgid;
	} else {
		__u64 id = bpf_get_current_pid_tgid();
		*tid = (__u32)id;
		*tgid = (__u32)(id >> 32);
	}
	return *tid != 0;
}

/* Wake ember only when the ring fills: it drains on a timer. */
static __always_inline __u64 wake_flag(void)
{
	return bpf_ringbuf_query(&records, BPF_RB_AVAIL_DATA) >= EMBER_OFFCPU_RING_BYTES / 4 ? BPF_RB_FORCE_WAKEUP
											     : BPF_RB_NO_WAKEUP;
}

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);
	if (c)
		__sync_fetch_and_add(c, 1);
}

/* The stack from sp up, a page at a time, into r->stack: want bytes at
 * most, fewer when a page cannot be read. */
static __always_inline __u32 copy_stack(struct ember_offcpu_record *r, __u64 sp, __u32 want)
{
	__u32 off = 0;
	for (__u32 i = 0; i <= EMBER_OFFCPU_STACK_MAX / EMBER_OFFCPU_CHUNK; i++) {
		__u32 len = i == 0 ? EMBER_OFFCPU_CHUNK - (__u32)(sp & (EMBER_OFFCPU_CHUNK - 1)) : EMBER_OFFCPU_CHUNK;
		if (off >= want)
			break;
		if (len > want - off)
			len = want - off;
		/* (len is in [1, EMBER_OFFCPU_CHUNK] already: said so that the
		 * verifier knows, whatever the compiler makes of the tests) */
		off &= EMBER_OFFCPU_STACK_MAX - 1;
		len = ((len - 1) & (EMBER_OFFCPU_CHUNK - 1)) + 1;
		if (bpf_probe_read_user(r->stack + off, len, (const void *)(sp + off)) != 0)
			break;
		off += len;
	}
	return off;
}

/* A target thread leaves the CPU (in its context): its registers and
 * stack, sent now; when it was, kept for its return. */
static __always_inline void switch_out(__u32 key)
{
	__u32 tgid, tid, zero = 0;
	if (!current_ids(&tgid, &tid) || !bpf_map_lookup_elem(&targets, &tgid))
		return;
	struct ember_offcpu_config *cfg = bpf_map_lookup_elem(&config, &zero);
	__u32 cpu = bpf_get_smp_processor_id();
	struct ember_offcpu_record *r = bpf_map_lookup_elem(&scratch, &cpu);
	if (!cfg || !r)
		return;
	__u64 now = bpf_ktime_get_ns();
	r->kind = EMBER_OFFCPU_OUT;
	r->key = key;
	r->pid = tgid;
	r->tid = tid;
	r->time_ns = now;
	r->stack_len = 0;
	r->regs_ok = 0;
	struct task_struct *task = bpf_get_current_task_btf();
	const void *regs = (const void *)bpf_task_pt_regs(task);
	__u32 words = cfg->regs_words;
	if (words > EMBER_OFFCPU_REG_WORDS)
		words = EMBER_OFFCPU_REG_WORDS;
	if (words && regs && bpf_probe_read_kernel(r->regs, words * 8, regs) == 0) {
		r->regs_ok = 1;
		__u32 sp_at = cfg->regs_words == 21 ? 19 : 31;   /* x86-64 pt_regs.sp, AArch64 .sp */
		__u32 want = cfg->stack_size;
		if (want > EMBER_OFFCPU_STACK_MAX)
			want = EMBER_OFFCPU_STACK_MAX;
		r->stack_len = copy_stack(r, r->regs[sp_at & 31], want);
	}
	__u64 size = __builtin_offsetof(struct ember_offcpu_record, stack) + (r->stack_len & (2 * EMBER_OFFCPU_STACK_MAX - 1));
	if (size > sizeof *r)
		size = sizeof *r;
	if (bpf_ringbuf_output(&records, r, size, wake_flag()) != 0) {
		count(EMBER_OFFCPU_DROPPED);
		return;
	}
	bpf_map_update_elem(&switched_out, &key, &now, BPF_ANY);
}

/* A target thread that left the CPU gets it again: the interval's end. */
static __always_inline void switch_in(__u32 key)
{
	__u64 *start = bpf_map_lookup_elem(&switched_out, &key);
	if (!start)
		return;
	struct ember_offcpu_end e = { .kind = EMBER_OFFCPU_IN, .key = key, .start_ns = *start,
				      .end_ns = bpf_ktime_get_ns() };
	bpf_map_delete_elem(&switched_out, &key);
	count(bpf_ringbuf_output(&records, &e, sizeof e, wake_flag()) == 0 ? EMBER_OFFCPU_SENT : EMBER_OFFCPU_DROPPED);
}

/* Runs in prev's context, before the switch.  Threads are keyed by their
 * id in the root pid namespace here (next's is the only one to be had). */
SEC("tp_btf/sched_switch")
int ember_offcpu_switch(__u64 *ctx)
{
	struct task_struct *prev = (struct task_struct *)ctx[1], *next = (struct task_struct *)ctx[2];
	if (prev && prev->pid)
		switch_out((__u32)prev->pid);
	if (next && next->pid)
		switch_in((__u32)next->pid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
