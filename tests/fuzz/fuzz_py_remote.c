/* fuzz.py_remote: python-stacks' reading of CPython's structures from the
 * target's memory -- the thread list, thread states, frames, code objects,
 * str and bytes objects, line tables, the GIL's state, threading._active
 * for thread names and 3.13's _Py_DebugOffsets -- with the fuzzer's bytes
 * as that memory (format: fuzz_py_remote.h).
 *
 * The seams are the two files below everything else in python-stacks,
 * replaced at link time (tests/fuzz/CMakeLists.txt builds the library
 * without them): remote_mem.c, whose rm_read/rm_readv here copy from the
 * input's regions instead of calling process_vm_readv, and runtime.c's
 * py_runtime_find, which here takes the runtime from the input's header
 * instead of the target's /proc and ELF files; the bytes read of each
 * object come from py_runtime_set_lengths, as in the real reader.  The
 * rest is the real reader, entered through ember_python_open: scan the
 * threads, read each one's frames twice (the second read through the
 * batched prefetch), name the code objects and the threads. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "py_read.h"
#include "reader.h"

#include "fuzz_py_remote.h"
#include "fuzz_util.h"

#define FUZZ_PID 0x7ffffff0     /* no such process: nothing of /proc applies */
#define MAX_REGIONS 256
#define MAX_THREADS 8
#define MAX_FRAMES 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct region {
	uint64_t addr;
	uint32_t len;
	const uint8_t *bytes;
};

/* The input being run: rm_read and py_runtime_find have no argument to
 * carry it (their callers are the reader's own), so it is this file's. */
static struct fuzz_input {
	const uint8_t *hdr;
	struct region r[MAX_REGIONS];
	size_t n;
} in;

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* Copy [addr, addr + len) from the regions; false when a byte is in none. */
static bool mem_read(uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;
	for (size_t done = 0; done < len;) {
		uint64_t at = addr + done;
		size_t i = in.n, take = 0;
		while (i-- > 0)
			if (at >= in.r[i].addr && at - in.r[i].addr < in.r[i].len)
				break;
		if (i == (size_t)-1)
			return false;
		take = in.r[i].len - (size_t)(at - in.r[i].addr);
		if (take > len - done)
			take = len - done;
		memcpy(out + done, in.r[i].bytes + (at - in.r[i].addr), take);
		done += take;
	}
	return true;
}

bool rm_read(pid_t pid, uint64_t addr, void *buf, size_t len, int *err, uint64_t *syscalls)
{
	(void)pid;
	if (len == 0)
		return true;
	if (syscalls)
		(*syscalls)++;
	if (addr < 4096 || addr >= EMBER_USER_ADDR_END || len > (1u << 30) || !mem_read(addr, buf, len)) {
		if (err)
			*err = EFAULT;
		return false;
	}
	return true;
}

size_t rm_readv(pid_t pid, struct rm_req *reqs, size_t n, int *err, uint64_t *syscalls)
{
	size_t good = 0;
	if (syscalls)
		(*syscalls)++;
	for (size_t i = 0; i < n; i++) {
		reqs[i].ok = reqs[i].len && rm_ptr_ok(reqs[i].addr, 1) &&
			     rm_read(pid, reqs[i].addr, reqs[i].buf, reqs[i].len, err, NULL);
		good += reqs[i].ok;
	}
	return good;
}

/* The runtime as the header describes it; 3.13 takes its offsets from the
 * _Py_DebugOffsets in the "target's" memory, as runtime.c does. */
int py_runtime_find(struct ember_python *py, char *msg, size_t msglen)
{
	struct py_runtime *rt = &py->rt;
	const uint8_t *h = in.hdr;
	const struct py_offsets *o = &py_offsets_table[h[0] % py_offsets_table_len];
	rt->off = *o;
	rt->major = o->major;
	rt->minor = o->minor;
	rt->micro = o->micro_first;
	snprintf(rt->version, sizeof rt->version, "%d.%d.%d", rt->major, rt->minor, rt->micro);
	rt->lt_kind = rt->major == 2 ? PY_LT_LNOTAB_UNSIGNED : rt->minor <= 9 ? PY_LT_LNOTAB
				   : rt->minor == 10 ? PY_LT_310 : PY_LT_LOCATIONS;
	rt->runtime = u64_at(h + 8);
	if (rt->major == 3 && rt->minor >= 13) {
		uint8_t dbg[600];
		char why[160];
		if (!rm_read(py->pid, rt->runtime, dbg, sizeof dbg, NULL, NULL) ||
		    !py_offsets_apply_debug(&rt->off, dbg, sizeof dbg, why, sizeof why)) {
			snprintf(msg, msglen, "cannot use _Py_DebugOffsets");
			return EMBER_PY_ERROR;
		}
	}
	rt->interp_head_addr = u64_at(h + 16);
	rt->gil_tstate_addr = u64_at(h + 24);
	rt->t_code = u64_at(h + 32);
	rt->t_frame = u64_at(h + 40);
	rt->t_str = u64_at(h + 48);
	rt->t_bytes = u64_at(h + 56);
	rt->t_py2unicode = u64_at(h + 64);
	snprintf(rt->root, sizeof rt->root, "/proc/%d/root", (int)py->pid);
	snprintf(rt->where, sizeof rt->where, "CPython %s (fuzz input)", rt->version);
	py_runtime_set_lengths(rt);
	return EMBER_PY_OK;
}

static bool parse_input(const uint8_t *data, size_t size)
{
	if (size < PY_FUZZ_HEADER)
		return false;
	in.hdr = data;
	in.n = 0;
	for (size_t pos = PY_FUZZ_HEADER; pos + PY_FUZZ_REGION_HEAD <= size && in.n < MAX_REGIONS;) {
		struct region *r = &in.r[in.n++];
		uint32_t len;
		r->addr = u64_at(data + pos);
		memcpy(&len, data + pos + 8, 4);
		pos += PY_FUZZ_REGION_HEAD;
		r->len = len < size - pos ? len : (uint32_t)(size - pos);
		r->bytes = data + pos;
		pos += r->len;
	}
	return true;
}

/* What a read hands out must name code objects ember can describe. */
static void check_frames(struct ember_python *py, const struct ember_py_frame *fr, int n)
{
	FUZZ_ASSERT(n >= 0 && n <= MAX_FRAMES);
	for (int k = 0; k < n; k++) {
		const struct ember_py_code *c = ember_python_code(py, fr[k].code);
		FUZZ_ASSERT(c && c->name && c->qualname && c->filename && c->short_filename);
	}
	uint32_t lo[MAX_FRAMES], hi[MAX_FRAMES];
	uint32_t runs = ember_python_runs(fr, (uint32_t)n, lo, hi, MAX_FRAMES);
	for (uint32_t r = 0; r < runs; r++)
		FUZZ_ASSERT(lo[r] <= hi[r] && hi[r] < (uint32_t)n);
}

static void read_threads(struct ember_python *py, bool names)
{
	uint32_t tids[MAX_THREADS];
	int nt = py_list_threads(py, tids, MAX_THREADS);
	for (int i = 0; i < nt; i++)
		for (int pass = 0; pass < 2; pass++) {
			struct ember_py_frame fr[MAX_FRAMES];
			uint32_t flags;
			int n = ember_python_read_thread(py, tids[i], fr, MAX_FRAMES, &flags);
			if (n >= 0)
				check_frames(py, fr, n);
		}
	for (int i = 0; names && i < nt; i++) {
		char name[64];
		int len = ember_python_thread_name(py, tids[i], name, sizeof name);
		FUZZ_ASSERT(len >= 0 && (size_t)len < sizeof name && strlen(name) == (size_t)len);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!parse_input(data, size))
		return 0;
	uint8_t flags = data[1];
	uint16_t tid_off;
	memcpy(&tid_off, data + 2, 2);
	struct ember_python_opts opts = EMBER_PYTHON_OPTS_DEFAULT;
	opts.no_debug_info = true;
	opts.no_build_id_check = true;
	opts.no_gil_check = flags & PY_FUZZ_NO_GIL_CHECK;
	opts.verify = flags & PY_FUZZ_VERIFY;
	struct ember_python *py;
	char msg[256];
	if (ember_python_open(&py, FUZZ_PID, &opts, msg, sizeof msg) != EMBER_PY_OK)
		return 0;
	/* <= 3.10 thread states hold no TID: ember finds where glibc keeps it
	 * by comparing with the target's tasks in /proc, which a fuzz input
	 * has none of; the header says where it is. */
	if (py->rt.off.ts_native_thread_id < 0) {
		py->th->pthread_tid_off = tid_off;
		py->th->tid_calibrated = true;
	}
	read_threads(py, flags & PY_FUZZ_THREAD_NAMES);
	ember_python_close(py);
	return 0;
}
