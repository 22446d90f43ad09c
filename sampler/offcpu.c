/* The off-CPU tracer's user-space half (offcpu.h): the BPF object loaded
 * and attached, the processes to trace named to it, and each interval it
 * reports turned into a sample (registers in perf's order, the stack
 * copy as is) that the sampler unwinds and delivers like its own. */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "grow.h"
#include "hash.h"
#include "idtab.h"
#include "offcpu.h"
#include "offcpu_record.h"
#include "sampler_deliver.h"
#include "sampler_state.h"

#define PROC_PID_INIT_INO 0xEFFFFFFCu   /* the root pid namespace's inode */

extern const unsigned char ember_offcpu_bpf_obj[], ember_offcpu_bpf_obj_end[];

/* A thread off CPU whose interval has not ended yet: what it stopped with. */
struct pending {
	uint32_t key;                  /* its root-namespace tid (offcpu_record.h) */
	bool used;
	struct ember_offcpu_record *rec;
	size_t cap;                    /* bytes at rec */
};

struct offcpu {
	struct bpf_object *obj;
	struct bpf_link *link;
	struct ring_buffer *ring;
	int targets_fd, counters_fd;
	struct ember_sampler *s;      /* during offcpu_drain */
	struct pending *pend;         /* by slot; unused ones are reused */
	size_t npend, pend_cap;
	struct ember_idtab index;     /* used slots by key */
	uint32_t *free_slots;
	size_t nfree, free_cap;
	uint64_t detached_ns;         /* when the tracer was detached (CLOCK_MONOTONIC), 0 before */
};

#if defined(__x86_64__)
/* struct pt_regs: r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di orig_ax ip cs flags sp ss */
#define PT_REGS_WORDS 21
static const uint8_t pt_index[X86_REGS_COUNT] = {
	[X86_REG_AX] = 10, [X86_REG_BX] = 5, [X86_REG_CX] = 11, [X86_REG_DX] = 12, [X86_REG_SI] = 13,
	[X86_REG_DI] = 14, [X86_REG_BP] = 4, [X86_REG_SP] = 19, [X86_REG_IP] = 16, [X86_REG_FLAGS] = 18,
	[X86_REG_CS] = 17, [X86_REG_SS] = 20, [X86_REG_R8] = 9, [X86_REG_R9] = 8, [X86_REG_R10] = 7,
	[X86_REG_R11] = 6, [X86_REG_R12] = 3, [X86_REG_R13] = 2, [X86_REG_R14] = 1, [X86_REG_R15] = 0,
};
#elif defined(__aarch64__)
/* struct pt_regs starts with struct user_pt_regs: x0..x30, sp, pc, pstate:
 * perf's order already. */
#define PT_REGS_WORDS 34
#endif

/* perf's register array from the saved pt_regs words. */
static void to_perf_regs(const __u64 *pt, uint64_t *regs)
{
	for (int i = 0; i < PERF_REGS_COUNT; i++) {
#if defined(__x86_64__)
		regs[i] = pt[pt_index[i]];
#else
		regs[i] = pt[i];
#endif
	}
}

static bool pend_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct offcpu *)ctx)->pend[id].key == *(const uint32_t *)key;
}

static uint64_t key_hash(uint32_t key)
{
	return ember_hash_mix(key);
}

/* A thread left the CPU: its record kept (a copy) until the interval ends. */
static void on_out(struct offcpu *o, const struct ember_offcpu_record *r, size_t size)
{
	uint32_t id = ember_idtab_find(&o->index, key_hash(r->key), pend_eq, o, &r->key);
	if (id == UINT32_MAX) {   /* a free slot, or a new one */
		if (o->nfree) {
			id = o->free_slots[--o->nfree];
		} else {
			if (EMBER_GROW(o->pend, o->pend_cap, o->npend + 1) != 0)
				return;
			o->pend[o->npend] = (struct pending){ 0 };
			id = (uint32_t)o->npend++;
		}
		if (ember_idtab_insert(&o->index, key_hash(r->key), id) != 0) {
			if (id == o->npend - 1 && !o->pend[id].rec)
				o->npend--;                       /* the new slot, unused */
			else
				o->free_slots[o->nfree++] = id;   /* back where it came from */
			return;
		}
	}
	struct pending *p = &o->pend[id];
	if (p->cap < size) {
		void *n = realloc(p->rec, size);
		if (!n) {
			ember_idtab_remove(&o->index, key_hash(r->key), id);
			p->used = false;
			if (EMBER_GROW(o->free_slots, o->free_cap, o->nfree + 1) == 0)
				o->free_slots[o->nfree++] = id;
			return;
		}
		p->rec = n;
		p->cap = size;
	}
	memcpy(p->rec, r, size);
	p->key = r->key;
	p->used = true;
}

/* Its interval ended: unwound and delivered as a sample of that length. */
static void on_in(struct offcpu *o, const struct ember_offcpu_end *e)
{
	uint32_t id = ember_idtab_find(&o->index, key_hash(e->key), pend_eq, o, &e->key);
	if (id == UINT32_MAX || EMBER_GROW(o->free_slots, o->free_cap, o->nfree + 1) != 0)
		return;
	ember_idtab_remove(&o->index, key_hash(e->key), id);
	o->free_slots[o->nfree++] = id;
	struct pending *p = &o->pend[id];
	p->used = false;
	const struct ember_offcpu_record *r = p->rec;
	if (!r->regs_ok || e->end_ns < e->start_ns)
		return;
	uint64_t regs[PERF_REGS_COUNT];
	to_perf_regs(r->regs, regs);
	/* Its time is the switch-out's: what was read of the thread then (the
	 * Python frames) is found by it. */
	struct ember_sample smp = { .pid = r->pid, .tid = r->tid, .time_ns = r->time_ns,
				    .flags = EMBER_SAMPLE_OFF_CPU, .off_cpu_ns = e->end_ns - e->start_ns };
	struct unwind_input in = { .regs = regs, .stack = r->stack, .stack_len = r->stack_len,
				   .stack_reserved = o->s->opts.stack_size };
	sampler_deliver(o->s, &smp, &in);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct offcpu *o = ctx;
	const struct ember_offcpu_record *r = data;
	size_t head = offsetof(struct ember_offcpu_record, stack);
	if (size >= head && r->kind == EMBER_OFFCPU_OUT && r->stack_len <= size - head)
		on_out(o, r, head + r->stack_len);
	else if (size >= sizeof(struct ember_offcpu_end) && r->kind == EMBER_OFFCPU_IN)
		on_in(o, data);
	return 0;
}

/* Thread ids as ember sees them: its own pid namespace. */
static int configure(struct offcpu *o, uint32_t stack_size)
{
	struct ember_offcpu_config cfg = { .stack_size = stack_size, .regs_words = PT_REGS_WORDS };
	struct stat ns;
	if (stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino != PROC_PID_INIT_INO) {
		cfg.ns_dev = ns.st_dev;
		cfg.ns_ino = ns.st_ino;
	}
	uint32_t zero = 0;
	struct bpf_map *config = bpf_object__find_map_by_name(o->obj, "config");
	return config && bpf_map_update_elem(bpf_map__fd(config), &zero, &cfg, BPF_ANY) == 0 ? 0 : -EINVAL;
}

/* Open, load, attach: 0 or -errno, with what failed in *what. */
static int load_attach(struct offcpu *o, uint32_t stack_size, const char **what)
{
	*what = "load";
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "ember_offcpu");
	o->obj = bpf_object__open_mem(ember_offcpu_bpf_obj, (size_t)(ember_offcpu_bpf_obj_end - ember_offcpu_bpf_obj), &oo);
	if (!o->obj)
		return -errno;
	struct bpf_map *scratch = bpf_object__find_map_by_name(o->obj, "scratch");
	int ncpus = libbpf_num_possible_cpus();
	if (!scratch || ncpus <= 0 || bpf_map__set_max_entries(scratch, (uint32_t)ncpus) != 0)
		return ncpus < 0 ? ncpus : -EINVAL;
	int rc = bpf_object__load(o->obj);
	if (rc == 0)
		rc = configure(o, stack_size);
	if (rc)
		return rc;
	*what = "attach";
	struct bpf_program *prog = bpf_object__find_program_by_name(o->obj, "ember_offcpu_switch");
	if (!prog)
		return -ENOENT;
	o->link = bpf_program__attach(prog);
	if (!o->link)
		return -errno;
	struct bpf_map *targets = bpf_object__find_map_by_name(o->obj, "targets");
	struct bpf_map *counters = bpf_object__find_map_by_name(o->obj, "counters");
	struct bpf_map *records = bpf_object__find_map_by_name(o->obj, "records");
	if (!targets || !counters || !records)
		return -ENOENT;
	o->targets_fd = bpf_map__fd(targets);
	o->counters_fd = bpf_map__fd(counters);
	o->ring = ring_buffer__new(bpf_map__fd(records), on_record, o, NULL);
	return o->ring ? 0 : -errno;
}

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level, (void)fmt, (void)ap;
	return 0;
}

struct offcpu *offcpu_open(uint32_t stack_size, char *err, size_t errlen)
{
	struct offcpu *o = calloc(1, sizeof *o);
	if (!o) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	o->targets_fd = o->counters_fd = -1;
	if (ember_idtab_init(&o->index) != 0) {
		snprintf(err, errlen, "out of memory");
		free(o);
		return NULL;
	}
	libbpf_print_fn_t old = libbpf_set_print(quiet_print);
	const char *what;
	int rc = load_attach(o, stack_size > EMBER_OFFCPU_STACK_MAX ? EMBER_OFFCPU_STACK_MAX : stack_size, &what);
	libbpf_set_print(old);
	if (rc == 0)
		return o;
	int e = rc < 0 ? -rc : EINVAL;
	snprintf(err, errlen, "cannot %s the BPF context-switch tracer: %s%s", what, strerror(e),
		 e == EPERM || e == EACCES ? " (needs root, or CAP_BPF and CAP_PERFMON)" : "");
	offcpu_free(o);
	return NULL;
}

void offcpu_add_process(struct offcpu *o, pid_t pid)
{
	uint32_t key = (uint32_t)pid, one = 1;
	if (o && pid > 0)
		bpf_map_update_elem(o->targets_fd, &key, &one, BPF_ANY);
}

int offcpu_poll_fd(const struct offcpu *o)
{
	return o && o->ring ? ring_buffer__epoll_fd(o->ring) : -1;
}

/* After the detach: the intervals still open (threads that left the CPU
 * and had not run again) end at the detach, as the run does, so that a
 * thread blocked at the end is charged up to it.  A thread that is gone
 * left the CPU to exit: nothing to charge. */
static void end_open_intervals(struct offcpu *o)
{
	for (size_t id = 0; id < o->npend; id++) {
		const struct pending *p = &o->pend[id];
		if (!p->used)
			continue;
		const struct ember_offcpu_record *r = p->rec;
		bool alive = syscall(SYS_tgkill, (pid_t)r->pid, (pid_t)r->tid, 0) == 0 || errno == EPERM;
		struct ember_offcpu_end e = { .kind = EMBER_OFFCPU_IN, .key = p->key, .start_ns = r->time_ns,
					      .end_ns = alive ? o->detached_ns : 0 };
		on_in(o, &e);   /* (an end before the start: dropped) */
	}
}

void offcpu_drain(struct offcpu *o, struct ember_sampler *s)
{
	if (!o || !o->ring)
		return;
	o->s = s;
	ring_buffer__consume(o->ring);
	if (o->detached_ns)
		end_open_intervals(o);
	o->s = NULL;
}

void offcpu_detach(struct offcpu *o)
{
	if (o && o->link) {
		bpf_link__destroy(o->link);
		o->link = NULL;
		o->detached_ns = ember_now_ns();
	}
}

void offcpu_counts(const struct offcpu *o, uint64_t *sent, uint64_t *dropped)
{
	uint32_t k0 = EMBER_OFFCPU_SENT, k1 = EMBER_OFFCPU_DROPPED;
	*sent = *dropped = 0;
	if (o && o->counters_fd >= 0) {
		bpf_map_lookup_elem(o->counters_fd, &k0, sent);
		bpf_map_lookup_elem(o->counters_fd, &k1, dropped);
	}
}

void offcpu_free(struct offcpu *o)
{
	if (!o)
		return;
	offcpu_detach(o);
	ring_buffer__free(o->ring);
	bpf_object__close(o->obj);
	for (size_t i = 0; i < o->npend; i++)
		free(o->pend[i].rec);
	free(o->pend);
	free(o->free_slots);
	ember_idtab_free(&o->index);
	free(o);
}
