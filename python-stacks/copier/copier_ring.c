/* The copier's BPF ring buffer, read in place.  The kernel's layout: a
 * page holding the consumer position (user space writes it), then a page
 * holding the producer position followed by the data, mapped twice in a
 * row so that a record that wraps around the end reads as one piece.  Each
 * record starts with an 8-byte header whose first word is its length, with
 * a busy bit while the program writes it and a discard bit.  The kernel
 * reuses a record's bytes only once the consumer position is past it: a
 * record handed out is valid until it is released, without a copy. */
#include <errno.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "copier_user.h"

int py_ring_open(struct py_ring *r, int map_fd, uint32_t max_entries)
{
	*r = (struct py_ring){ .epoll_fd = -1 };
	long page = sysconf(_SC_PAGESIZE);
	if (page <= 0 || !max_entries || (max_entries & (max_entries - 1)))
		return -EINVAL;
	r->page = (size_t)page;
	r->size = max_entries;
	r->mask = max_entries - 1;
	void *c = mmap(NULL, r->page, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (c == MAP_FAILED)
		return -errno;
	r->consumer_pos = c;
	void *p = mmap(NULL, r->page + 2 * (size_t)max_entries, PROT_READ, MAP_SHARED, map_fd, (off_t)r->page);
	if (p == MAP_FAILED) {
		int e = -errno;
		py_ring_close(r);
		return e;
	}
	r->producer_pos = p;
	r->data = (const uint8_t *)p + r->page;
	struct epoll_event ev = { .events = EPOLLIN };
	r->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (r->epoll_fd < 0 || epoll_ctl(r->epoll_fd, EPOLL_CTL_ADD, map_fd, &ev) != 0) {
		int e = -errno;
		py_ring_close(r);
		return e;
	}
	return 0;
}

void py_ring_close(struct py_ring *r)
{
	if (r->consumer_pos)
		munmap(r->consumer_pos, r->page);
	if (r->producer_pos)
		munmap((void *)r->producer_pos, r->page + 2 * r->size);
	if (r->epoll_fd >= 0)
		close(r->epoll_fd);
	*r = (struct py_ring){ .epoll_fd = -1 };
}

const void *py_ring_peek(struct py_ring *r, uint32_t *len)
{
	if (!r->data)
		return NULL;
	for (;;) {
		uint64_t cons = __atomic_load_n(r->consumer_pos, __ATOMIC_ACQUIRE);
		uint64_t prod = __atomic_load_n(r->producer_pos, __ATOMIC_ACQUIRE);
		if (cons >= prod)
			return NULL;
		const uint32_t *hdr = (const uint32_t *)(r->data + (cons & r->mask));
		uint32_t word = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
		if (word & BPF_RINGBUF_BUSY_BIT)
			return NULL;   /* not committed yet */
		uint32_t n = word & ~(uint32_t)(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
		r->next = cons + ((n + BPF_RINGBUF_HDR_SZ + 7) & ~7u);
		if (!(word & BPF_RINGBUF_DISCARD_BIT)) {
			*len = n;
			return (const uint8_t *)hdr + BPF_RINGBUF_HDR_SZ;
		}
		py_ring_release(r);
	}
}

void py_ring_release(struct py_ring *r)
{
	__atomic_store_n(r->consumer_pos, r->next, __ATOMIC_RELEASE);
}
