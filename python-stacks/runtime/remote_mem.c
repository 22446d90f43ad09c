/* Reading the target's memory with process_vm_readv: single reads and
 * batches of many (address, length) pairs in one system call.  The kernel
 * stops a batch at the first remote element it cannot read; we then retry
 * the remaining elements, so one stale address costs one extra call rather
 * than the whole batch. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/uio.h>

#include "py_runtime.h"

#define BATCH_MAX 512   /* iovecs per call (well under IOV_MAX = 1024) */

bool rm_read(pid_t pid, uint64_t addr, void *buf, size_t len, int *err, uint64_t *syscalls)
{
	if (len == 0)
		return true;
	if (addr < 4096 || addr >= EMBER_USER_ADDR_END || len > (1u << 30)) {
		if (err)
			*err = EFAULT;
		return false;
	}
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
	if (syscalls)
		(*syscalls)++;
	ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
	if (got == (ssize_t)len)
		return true;
	if (err)
		*err = got < 0 ? errno : EFAULT;
	return false;
}

size_t rm_readv(pid_t pid, struct rm_req *reqs, size_t n, int *err, uint64_t *syscalls)
{
	struct iovec l[BATCH_MAX], r[BATCH_MAX];
	size_t done = 0, good = 0, i = 0;

	for (size_t k = 0; k < n; k++)
		reqs[k].ok = false;
	while (i < n) {
		size_t m = 0, first = i;
		while (i < n && m < BATCH_MAX) {
			if (reqs[i].len && rm_ptr_ok(reqs[i].addr, 1)) {
				l[m].iov_base = reqs[i].buf;
				l[m].iov_len = reqs[i].len;
				r[m].iov_base = (void *)(uintptr_t)reqs[i].addr;
				r[m].iov_len = reqs[i].len;
				m++;
			}
			i++;
		}
		if (!m)
			continue;
		if (syscalls)
			(*syscalls)++;
		ssize_t got = process_vm_readv(pid, l, m, r, m, 0);
		if (got < 0) {
			if (err)
				*err = errno;
			if (errno == ESRCH || errno == EPERM)
				return good;
			got = 0;
		}
		/* Mark the elements fully covered; restart after the first short one. */
		size_t acc = 0, k = first;
		for (; k < i; k++) {
			if (!reqs[k].len || !rm_ptr_ok(reqs[k].addr, 1))
				continue;
			if (acc + reqs[k].len <= (size_t)got) {
				reqs[k].ok = true;
				acc += reqs[k].len;
				good++;
			} else {
				break;   /* this one failed (or was cut): skip it, retry the rest */
			}
		}
		if (k < i)
			i = k + 1;
		done++;
		if (done > n + 2)
			break;   /* cannot happen; belt and braces against a loop */
	}
	return good;
}
