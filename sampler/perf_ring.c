/* perf_event_open, its ring buffers and its records: the kernel side of
 * capture (perf_ring.h).  docs/sampling.md says what each attribute and
 * record field is; the comments here say what would break without them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perf_regs.h"
#include "perf_ring.h"

int perf_online_cpus(int *cpus, int max)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	int n = 0;
	if (f) {
		/* A list like "0-3,6,8-9"; it can be sparse. */
		int a, b;
		char sep;
		while (n < max && fscanf(f, "%d", &a) == 1) {
			b = a;
			if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
				if (fscanf(f, "%d", &b) != 1)
					break;
				if (fscanf(f, "%c", &sep) != 1)
					sep = 0;
			}
			for (int c = a; c <= b && n < max; c++)
				cpus[n++] = c;
			if (sep != ',')
				break;
		}
		fclose(f);
	}
	if (n == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		for (int i = 0; i < c && n < max; i++)
			cpus[n++] = i;
	}
	return n;
}

void perf_fill_attr(struct perf_event_attr *attr, const struct ember_sampler_opts *opts,
		    bool wake_per_sample, bool launch, bool exclude_kernel)
{
	memset(attr, 0, sizeof *attr);
	attr->size = sizeof *attr;
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->freq = 1;
	attr->sample_freq = opts->freq_hz;
	attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			    PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	if (opts->kernel && !exclude_kernel) {
		attr->sample_type |= PERF_SAMPLE_CALLCHAIN;
		attr->exclude_callchain_user = 1;   /* user frames come from our unwinder */
	} else {
		attr->exclude_callchain_kernel = 1;
	}
	attr->sample_regs_user = PERF_REGS_MASK;
	attr->sample_stack_user = opts->stack_size;
	/* With exclude_kernel=1 a tick that lands in a syscall is dropped, so
	 * time in syscalls would vanish; with 0 the user registers and stack at
	 * syscall entry still come with the sample. */
	attr->exclude_kernel = exclude_kernel;
	attr->exclude_hv = 1;
	attr->mmap = 1;         /* mmap2 alone emits no mapping records at all */
	attr->mmap2 = 1;
	attr->comm = 1;
	attr->comm_exec = 1;
	attr->task = 1;
	attr->sample_id_all = 1;
	attr->build_id = 1;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
	attr->inherit = 1;      /* threads and children created later are sampled too */
	/* ... and each of them, as it ends, reports its CPU time on this
	 * event (PERF_RECORD_READ): the part after its last sample is not in
	 * the profile, as every new task's clock starts a full period away. */
	attr->inherit_stat = 1;
	attr->disabled = 1;
	attr->enable_on_exec = launch;
	if (wake_per_sample) {
		attr->watermark = 0;
		attr->wakeup_events = 1;
	} else {
		attr->watermark = 1;    /* wake at half the ring; poll's timeout drains the rest */
	}
}

int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int perf_ring_map(struct perf_ring *r, int fd, size_t pages)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (1 + pages) * page;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	struct perf_event_mmap_page *pg = p;
	r->fd = fd;
	r->base = p;
	r->map_len = len;
	r->data = (uint8_t *)p + (pg->data_offset ? pg->data_offset : page);
	r->data_size = pg->data_size ? pg->data_size : pages * page;
	return 0;
}

void perf_ring_unmap(struct perf_ring *r)
{
	if (r->base)
		munmap(r->base, r->map_len);
	r->base = NULL;
}

/* The time of the record at pos (header h): a sample's follows its ip and
 * pid/tid; any other record carries it in its sample_id trailer (tid,
 * time, cpu: sample_id_all with ember's sample_type).  Fields are 8-byte
 * aligned, so none straddles the end of the ring.  0 for a record too
 * short to hold one: it then goes first. */
static uint64_t record_time(const struct perf_ring *r, uint64_t pos, const struct perf_event_header *h)
{
	uint64_t off, t;
	if (h->type == PERF_RECORD_SAMPLE)
		off = sizeof *h + 16;
	else if (h->size >= sizeof *h + 24)
		off = h->size - 16u;
	else
		return 0;
	if (off + 8 > h->size)
		return 0;
	memcpy(&t, r->data + ((pos + off) & (r->data_size - 1)), 8);
	return t;
}

/* Look at r's next record: false when there is none (or no sane one). */
static bool ring_peek(struct perf_ring *r)
{
	if (r->tail >= r->head)
		return false;
	const struct perf_event_header *h = (const void *)(r->data + (r->tail & (r->data_size - 1)));
	if (h->size < sizeof *h || r->head - r->tail < h->size)
		return false;   /* cannot happen with a sane kernel; never loop on it */
	r->next_ns = record_time(r, r->tail, h);
	return true;
}

/* Hand r's next record to fn (contiguous: a record that wraps around the
 * end of the ring is copied into scratch first), then its space back to
 * the kernel at once: a long drain must not starve the kernel of room and
 * turn into LOST records. */
static void ring_consume(struct perf_ring *r, uint8_t *scratch, perf_record_fn fn, void *arg)
{
	struct perf_event_mmap_page *pg = (struct perf_event_mmap_page *)r->base;
	uint64_t off = r->tail & (r->data_size - 1);
	const struct perf_event_header *h = (const void *)(r->data + off);
	uint16_t size = h->size;
	if (off + size > r->data_size) {
		size_t first = (size_t)(r->data_size - off);
		memcpy(scratch, r->data + off, first);
		memcpy(scratch + first, r->data, size - first);
		h = (const void *)scratch;
	}
	fn(arg, h);
	r->tail += size;
	__atomic_store_n(&pg->data_tail, r->tail, __ATOMIC_RELEASE);
}

size_t perf_rings_drain(struct perf_ring *rings, int nrings, int *active, uint8_t *scratch, perf_record_fn fn,
			void *arg)
{
	int nactive = 0;
	size_t n = 0;
	/* The heads of all rings at (nearly) one instant: what is written later
	 * is later than everything drained now. */
	for (int i = 0; i < nrings; i++) {
		struct perf_ring *r = &rings[i];
		if (!r->base)
			continue;
		struct perf_event_mmap_page *pg = (struct perf_event_mmap_page *)r->base;
		r->head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
		r->tail = pg->data_tail;
		if (ring_peek(r))
			active[nactive++] = i;
	}
	while (nactive > 0) {
		/* The ring whose next record is the oldest, and the time up to
		 * which it goes on alone: the next record of any other ring.  A
		 * thread stays on its CPU for many samples, so runs are long. */
		int best = 0;
		for (int k = 1; k < nactive; k++)
			if (rings[active[k]].next_ns < rings[active[best]].next_ns)
				best = k;
		uint64_t until = UINT64_MAX;
		for (int k = 0; k < nactive; k++)
			if (k != best && rings[active[k]].next_ns < until)
				until = rings[active[k]].next_ns;
		struct perf_ring *r = &rings[active[best]];
		bool more;
		do {
			ring_consume(r, scratch, fn, arg);
			n++;
			more = ring_peek(r);
		} while (more && r->next_ns <= until);
		if (!more)
			active[best] = active[--nactive];
	}
	return n;
}

/* ---- records ---- */

/* The record's bytes after its header, and how many. */
static const uint8_t *body(const struct perf_event_header *h, size_t *len)
{
	*len = h->size - sizeof *h;
	return (const uint8_t *)(h + 1);
}

/* Reads the 8-byte fields of a SAMPLE record in order; ok turns false at
 * the first that does not fit. */
struct sample_reader {
	const uint8_t *p, *end;
	bool ok;
};

static uint64_t next_u64(struct sample_reader *r)
{
	uint64_t v = 0;
	if (r->end - r->p < 8) {
		r->ok = false;
		return 0;
	}
	memcpy(&v, r->p, 8);
	r->p += 8;
	return v;
}

bool perf_parse_sample(const struct perf_event_header *h, uint64_t sample_type, struct perf_sample *out,
		       uint64_t *kernel_ips, uint32_t max_kernel)
{
	size_t len;
	const uint8_t *b = body(h, &len);
	struct sample_reader r = { b, b + len, true };
	memset(out, 0, sizeof *out);
	/* The fields come in the order of their PERF_SAMPLE_* bits. */
	next_u64(&r);                               /* ip (a kernel address when in the kernel) */
	uint64_t pidtid = next_u64(&r);
	out->pid = (uint32_t)pidtid;
	out->tid = (uint32_t)(pidtid >> 32);
	out->time_ns = next_u64(&r);
	next_u64(&r);                               /* cpu, reserved */
	next_u64(&r);                               /* period */
	if (sample_type & PERF_SAMPLE_CALLCHAIN) {
		uint64_t nr = next_u64(&r);
		for (uint64_t i = 0; i < nr && r.ok; i++) {
			uint64_t ip = next_u64(&r);
			if (ip >= (uint64_t)PERF_CONTEXT_MAX)
				continue;   /* context markers */
			if (out->nkernel < max_kernel)
				kernel_ips[out->nkernel++] = ip;
		}
	}
	out->abi = next_u64(&r);
	if (out->abi) {
		for (int i = 0; i < PERF_REGS_COUNT; i++)
			out->regs[i] = next_u64(&r);
	}
	out->stack_size = next_u64(&r);
	out->stack = r.p;
	if (out->stack_size && r.ok && (uint64_t)(r.end - r.p) >= out->stack_size + 8) {
		r.p += out->stack_size;
		out->stack_len = next_u64(&r);
		if (out->stack_len > out->stack_size)
			out->stack_len = out->stack_size;
	}
	return r.ok;
}

/* The fixed part of an MMAP2 record after its header, as the kernel lays
 * it out; the file name follows.  The union holds the build-id when the
 * header's misc has PERF_RECORD_MISC_MMAP_BUILD_ID, else device and inode. */
struct mmap2_layout {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	union {
		struct {
			uint32_t maj, min;
			uint64_t ino, ino_generation;
		};
		struct {
			uint8_t build_id_size, reserved1;
			uint16_t reserved2;
			uint8_t build_id[20];
		};
	};
	uint32_t prot, flags;
};
_Static_assert(offsetof(struct mmap2_layout, build_id) == 36 && offsetof(struct mmap2_layout, prot) == 56 &&
	       sizeof(struct mmap2_layout) == 64, "MMAP2 layout");

bool perf_parse_mmap2(const struct perf_event_header *h, struct perf_mmap2 *out)
{
	size_t len;
	const uint8_t *b = body(h, &len);
	struct mmap2_layout m;
	if (len < sizeof m + 1)
		return false;
	memcpy(&m, b, sizeof m);
	*out = (struct perf_mmap2){ .pid = m.pid, .tid = m.tid, .addr = m.addr, .len = m.len, .pgoff = m.pgoff,
				    .prot = m.prot, .flags = m.flags };
	if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		out->build_id = b + offsetof(struct mmap2_layout, build_id);
		out->build_id_len = m.build_id_size <= sizeof m.build_id ? m.build_id_size : sizeof m.build_id;
	}
	out->name = (const char *)b + sizeof m;
	out->name_len = strnlen(out->name, len - sizeof m);
	return true;
}

bool perf_parse_comm(const struct perf_event_header *h, struct perf_comm *out)
{
	size_t len;
	const uint8_t *b = body(h, &len);
	uint32_t ids[2];
	if (len < sizeof ids + 1)
		return false;
	memcpy(ids, b, sizeof ids);
	out->pid = ids[0];
	out->tid = ids[1];
	out->comm = (const char *)b + sizeof ids;
	out->comm_len = strnlen(out->comm, len - sizeof ids);
	return true;
}

bool perf_parse_task(const struct perf_event_header *h, struct perf_task *out)
{
	size_t len;
	const uint8_t *b = body(h, &len);
	if (len < sizeof *out)
		return false;
	memcpy(out, b, sizeof *out);   /* (the time that follows is not read) */
	return true;
}

bool perf_parse_read(const struct perf_event_header *h, struct perf_read *out)
{
	size_t len;
	const uint8_t *b = body(h, &len);
	if (len < sizeof *out)
		return false;
	memcpy(out, b, sizeof *out);   /* (the sample_id trailer that follows is not read) */
	return true;
}

bool perf_parse_lost(const struct perf_event_header *h, uint64_t *lost)
{
	size_t len;
	const uint8_t *b = body(h, &len);
	uint64_t f[2];   /* id, lost */
	if (len < sizeof f)
		return false;
	memcpy(f, b, sizeof f);
	*lost = f[1];
	return true;
}
