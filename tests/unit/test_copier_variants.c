/* The copier's two variants (copier.bpf.c: the walks in bpf_loop(), or
 * unrolled) write the same records: both are loaded, each attached to a
 * perf event of this thread, whose "Python" frame chain is built here in
 * memory with the layout the copier is told (a chain deeper than the copy,
 * runs of frames of one code object, more new code objects than the copier
 * takes objects for, a long line table, the GIL held, then a method's
 * first argument, then a chain that ends at an unreadable frame).  The
 * chain does not change while the events sample it, so the k-th record of
 * each copier in a phase must be byte for byte the same but for its time.
 * Needs root (or CAP_BPF and CAP_PERFMON): exits 77 without. */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "check.h"
#include "copier_record.h"
#include "copier_user.h"
#include "python_stacks.h"

#define FR_LEN 64      /* a frame: back link at 8, code at 16, first argument at 48 */
#define CO_LEN 128     /* a code header: name 16, file 24, line table 32, 40, 48, qualname 56 */
#define TS_LEN 64      /* the thread state: top frame at 32 */
#define NFRAMES 150    /* deeper than EMBER_COPIER_MAX_FRAMES */
#define NCODES 6       /* more than EMBER_COPIER_NEW_CODES */
#define TABLE_LEN 600  /* a line table longer than EMBER_COPIER_OBJ_BYTES */
#define MAX_RECS 64

struct recs {
	size_t n;
	uint32_t size[MAX_RECS];
	uint8_t *rec[MAX_RECS];
};

static uint64_t frames[NFRAMES][FR_LEN / 8] __attribute__((aligned(64)));
static uint64_t codes[NCODES][CO_LEN / 8];
static uint64_t objs[NCODES][4][1024 / 8];   /* name, file, line table, qualname */
static uint64_t arg_obj[4], arg_type[4];
static uint64_t tstate[TS_LEN / 8];
static uint64_t gil_holder;
static uint32_t gil_locked = 1;

static void build_chain(void)
{
	for (int c = 0; c < NCODES; c++) {
		for (int o = 0; o < 4; o++) {
			objs[c][o][0] = 1;                        /* (reference count) */
			objs[c][o][1] = 0x1000 + (uint64_t)o;     /* (type) */
			objs[c][o][2] = o == 2 ? TABLE_LEN : 16;  /* size */
			objs[c][o][3] = 0x5eed0000u + (uint64_t)(c * 4 + o);   /* a str's cached hash at 24 */
			for (int w = 4; w < 1024 / 8; w++)
				objs[c][o][w] = (uint64_t)(c * 1000 + o * 100 + w);
		}
		codes[c][2] = (uint64_t)objs[c][0];
		codes[c][3] = (uint64_t)objs[c][1];
		codes[c][4] = (uint64_t)objs[c][2];
		codes[c][5] = 0x100 + (uint64_t)c;
		codes[c][6] = 0x200 + (uint64_t)c;
		codes[c][7] = (uint64_t)objs[c][3];
	}
	arg_obj[1] = (uint64_t)arg_type;
	for (int i = 0; i < NFRAMES; i++) {
		frames[i][1] = i + 1 < NFRAMES ? (uint64_t)frames[i + 1] : 0;
		frames[i][2] = (uint64_t)codes[(i / 3) % NCODES];   /* runs of three */
		frames[i][6] = (uint64_t)arg_obj;
		frames[i][7] = (uint64_t)i;
	}
	tstate[4] = (uint64_t)frames[0];
	gil_holder = (uint64_t)tstate;
}

static void thread_entry(struct ember_copier_thread *v)
{
	*v = (struct ember_copier_thread){
		.pid = (uint32_t)getpid(), .frame_len = FR_LEN, .tstate = (uint64_t)tstate, .top_off = 32,
		.cf_off = -1, .back_off = 8, .code_off = 16, .code_len = CO_LEN, .ts_len = TS_LEN,
		.key_off = { 16, 24, 32, 40, 48 }, .obj_off = { 16, 56, 24, 32 }, .table_sval = 32,
		.name_hash_off = 24, .arg_off = 48, .mark_off = 24, .ob_type_off = 8,
		.gil_holder = (uint64_t)&gil_holder, .gil_locked = (uint64_t)&gil_locked,
	};
}

static int take(void *ctx, void *data, size_t size)
{
	struct recs *r = ctx;
	if (r->n < MAX_RECS && (r->rec[r->n] = malloc(size))) {
		memcpy(r->rec[r->n], data, size);
		r->size[r->n++] = (uint32_t)size;
	}
	return 0;
}

static void free_recs(struct recs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->rec[i]);
	r->n = 0;
}

static int sampling_event(int prog_fd)
{
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE, .size = sizeof a,
				     .config = PERF_COUNT_SW_TASK_CLOCK, .sample_period = 1000000,
				     .disabled = 1, .exclude_kernel = 1 };
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog_fd) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Sample this thread until each copier has written a few records. */
static void run_phase(int ev[2], struct ring_buffer *rb[2], struct recs rec[2])
{
	volatile uint64_t sink = 0;
	for (int v = 0; v < 2; v++)
		ioctl(ev[v], PERF_EVENT_IOC_ENABLE, 0);
	for (double end = now_s() + 5; now_s() < end && (rec[0].n < 4 || rec[1].n < 4);) {
		for (int i = 0; i < 200000; i++)
			sink += (uint64_t)i * 7;
		for (int v = 0; v < 2; v++)
			ring_buffer__consume(rb[v]);
	}
	for (int v = 0; v < 2; v++) {
		ioctl(ev[v], PERF_EVENT_IOC_DISABLE, 0);
		ring_buffer__consume(rb[v]);
	}
}

/* The records of a phase, pairwise; what the first of them shows. */
static void compare(const char *phase, struct recs rec[2], uint32_t want_flags, bool want_arg)
{
	CHECK_MSG(rec[0].n >= 2 && rec[1].n >= 2, phase);
	size_t n = rec[0].n < rec[1].n ? rec[0].n : rec[1].n;
	for (size_t i = 0; i < n; i++) {
		struct ember_copier_record *a = (void *)rec[0].rec[i], *b = (void *)rec[1].rec[i];
		CHECK_MSG(rec[0].size[i] == rec[1].size[i], phase);
		if (rec[0].size[i] != rec[1].size[i])
			continue;
		a->time_ns = b->time_ns = 0;
		CHECK_MSG(memcmp(a, b, rec[0].size[i]) == 0, phase);
		CHECK_MSG((a->flags & want_flags) == want_flags, phase);
	}
	if (!n)
		return;
	const struct ember_copier_record *r = (const void *)rec[0].rec[0];
	printf("%s: %zu and %zu records, %zu compared; the first %u bytes: %u frames, %u code headers, "
	       "%u objects, flags %#x\n", phase, rec[0].n, rec[1].n, n, rec[0].size[0], r->nframes, r->ncodes,
	       r->nobjs, r->flags);
	bool arg = false;
	const uint8_t *q = r->data + r->ts_len;
	for (uint32_t i = 0; i < r->nframes + r->ncodes; i++) {
		uint64_t at;
		memcpy(&at, q, 8);
		if (!(at & EMBER_COPIER_TAGS)) {
			uint64_t mark;
			memcpy(&mark, q + 8 + 24, 8);
			arg |= mark == (at ^ EMBER_COPIER_ARG_MARK);
		}
		q += 8 + ember_copier_entry_bytes(r, at);
	}
	CHECK_MSG(arg == want_arg, phase);
}

int main(void)
{
	build_chain();
	struct ember_py_copier *cp[2] = { NULL, NULL };
	char msg[256];
	for (int v = 0; v < 2; v++) {
		struct ember_py_copier_opts o = { .unrolled = v == 1 };
		int rc = ember_py_copier_open(&cp[v], &o, msg, sizeof msg);
		if (rc == EMBER_PY_NO_ACCESS) {
			printf("skip: %s\n", msg);
			return 77;
		}
		CHECK_MSG(rc == EMBER_PY_OK, msg);
		if (rc != EMBER_PY_OK)
			return check_report();
	}
	if (ember_py_copier_unrolled(cp[0]))
		printf("note: this kernel has no bpf_loop: both copiers are the unrolled variant\n");
	CHECK(ember_py_copier_unrolled(cp[1]));

	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	struct ember_copier_thread v;
	thread_entry(&v);
	int ev[2];
	struct ring_buffer *rb[2];
	struct recs rec[2] = { { 0 }, { 0 } };
	for (int i = 0; i < 2; i++) {
		CHECK(bpf_map_update_elem(cp[i]->threads_fd, &tid, &v, BPF_ANY) == 0);
		struct bpf_map *m = bpf_object__find_map_by_name(cp[i]->obj, "records");
		rb[i] = m ? ring_buffer__new(bpf_map__fd(m), take, &rec[i], NULL) : NULL;
		ev[i] = sampling_event(ember_py_copier_prog_fd(cp[i]));
		CHECK(rb[i] && ev[i] >= 0);
		if (!rb[i] || ev[i] < 0)
			return check_report();
	}

	/* 1: the first record of each has every code object new (the objects
	 * of the first EMBER_COPIER_NEW_CODES, the line table's rest), the
	 * later ones none; the chain is longer than the copy. */
	run_phase(ev, rb, rec);
	compare("deep chain", rec, EMBER_COPIER_MORE | EMBER_COPIER_GIL_KNOWN | EMBER_COPIER_HOLDS_GIL, false);
	if (rec[0].n && rec[1].n) {
		const struct ember_copier_record *a = (const void *)rec[0].rec[0];
		CHECK(a->nframes == EMBER_COPIER_MAX_FRAMES);
		CHECK(a->ncodes == (EMBER_COPIER_MAX_FRAMES + 2) / 3);
		CHECK(a->nobjs == EMBER_COPIER_NEW_CODES * 5);   /* four objects and the line table's rest */
		CHECK(a->flags & EMBER_COPIER_WOKE);
	}
	free_recs(&rec[0]);
	free_recs(&rec[1]);

	/* 2: code object 1 is a method (as ember marks one): its frames carry
	 * their first argument and its type. */
	for (int i = 0; i < 2; i++) {
		struct ember_copier_code_key key = { .addr = (uint64_t)codes[1], .pid = (uint32_t)getpid() };
		uint64_t id;
		CHECK(bpf_map_lookup_elem(cp[i]->codes_fd, &key, &id) == 0);
		id |= EMBER_COPIER_CODE_METHOD;
		CHECK(bpf_map_update_elem(cp[i]->codes_fd, &key, &id, BPF_EXIST) == 0);
	}
	run_phase(ev, rb, rec);
	compare("method", rec, EMBER_COPIER_MORE, true);
	free_recs(&rec[0]);
	free_recs(&rec[1]);

	/* 3: the chain ends at an unreadable frame (at depth 40). */
	frames[39][1] = 0x10;
	run_phase(ev, rb, rec);
	compare("unreadable", rec, EMBER_COPIER_UNREADABLE | EMBER_COPIER_WOKE, true);
	if (rec[0].n)
		CHECK(((const struct ember_copier_record *)rec[0].rec[0])->nframes == 40);
	free_recs(&rec[0]);
	free_recs(&rec[1]);

	for (int i = 0; i < 2; i++) {
		close(ev[i]);
		ring_buffer__free(rb[i]);
		ember_py_copier_close(cp[i]);
	}
	return check_report();
}
