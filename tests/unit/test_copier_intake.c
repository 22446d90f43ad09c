/* Pairing the copier's records with their samples (copier_intake.c), over
 * a ring laid out as the kernel's BPF ring buffer: records stamped at a
 * lag from their samples, as kernels put the copier before (6.1) or after
 * (6.18) the sample's own stamp, are each handed to their own sample; a
 * sample whose record cannot be told from another's, or never came, gets
 * none. */
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "copier_record.h"
#include "copier_user.h"

#define RING_BYTES (1u << 16)
#define TID 7
#define PID 100

struct fake_ring {
	unsigned long cons, prod;
	uint8_t data[RING_BYTES] __attribute__((aligned(8)));
};

/* A committed record of thread tid stamped at t, as the copier writes one
 * with no frames (tstate 0: for a thread ember has not registered). */
static void push_ts(struct fake_ring *f, uint32_t tid, uint64_t t, uint64_t tstate)
{
	uint32_t len = (uint32_t)offsetof(struct ember_copier_record, data);
	uint8_t *at = f->data + (f->prod & (RING_BYTES - 1));
	struct ember_copier_record r;
	memset(&r, 0, len);
	r.pid = PID;
	r.tid = tid;
	r.time_ns = t;
	r.tstate = tstate;
	memcpy(at, &len, 4);
	memset(at + 4, 0, 4);
	memcpy(at + BPF_RINGBUF_HDR_SZ, &r, len);
	f->prod += (len + BPF_RINGBUF_HDR_SZ + 7) & ~7u;
}

/* ... of a registered thread. */
static void push(struct fake_ring *f, uint32_t tid, uint64_t t)
{
	push_ts(f, tid, t, 0x7f0000001000ull + tid);
}

static void setup(struct ember_python *py, struct ember_py_copier *st, struct fake_ring *f)
{
	static struct py_copier_link link;
	memset(py, 0, sizeof *py);
	memset(st, 0, sizeof *st);
	memset(f, 0, sizeof *f);
	link = (struct py_copier_link){ .copier = st };
	py->pid = PID;
	py->cp = &link;
	st->in.ring = (struct py_ring){ .consumer_pos = &f->cons, .producer_pos = &f->prod, .data = f->data,
					.mask = RING_BYTES - 1 };
}

/* Samples 10 ms apart, each record stamped lag_ns before its sample
 * (negative: after): every sample gets its own record. */
static void paired_at_lag(int64_t lag_ns)
{
	static struct ember_python py;
	static struct ember_py_copier st;
	static struct fake_ring f;
	setup(&py, &st, &f);
	const uint64_t t0 = 1000000000ull, step = 10000000ull;
	for (int i = 0; i < 20; i++)
		push(&f, TID, t0 + i * step - (uint64_t)lag_ns);
	int right = 0;
	for (int i = 0; i < 20; i++) {
		const struct ember_copier_record *r = py_copier_take(&py, TID, t0 + i * step);
		right += r && r->time_ns == t0 + i * step - (uint64_t)lag_ns;
		py_copier_done(&py);
	}
	printf("lag %lld ns: %d of 20 samples got their record\n", (long long)lag_ns, right);
	CHECK(right == 20);
	py_intake_free(&st);
}

/* Two samples 40 us apart whose records both came 300 us early, before
 * any lag is known: which record is whose cannot be told, so neither
 * sample takes one (its frames are read live instead). */
static void ambiguous_not_paired(void)
{
	static struct ember_python py;
	static struct ember_py_copier st;
	static struct fake_ring f;
	setup(&py, &st, &f);
	const uint64_t t = 2000000000ull;
	push(&f, TID, t - 300000);
	push(&f, TID, t + 40000 - 300000);
	CHECK(py_copier_take(&py, TID, t) == NULL);
	py_copier_done(&py);
	/* another thread's record never pairs */
	push(&f, TID + 1, t + 1000000);
	CHECK(py_copier_take(&py, TID, t + 1000000) == NULL);
	py_copier_done(&py);
	py_intake_free(&st);
}

/* Samples about 1 ms apart (999 Hz) whose records come lag_ns before
 * them (negative: after); one sample's record never came (or is not in
 * yet): it takes no neighbour's record, and the neighbours get their own. */
static void missing_record_not_stolen(int64_t lag_ns)
{
	static struct ember_python py;
	static struct ember_py_copier st;
	static struct fake_ring f;
	setup(&py, &st, &f);
	const uint64_t t0 = 3000000000ull, step = 900000ull;   /* (frequency mode varies the period) */
	for (int i = 0; i < 6; i++)
		if (i != 3)
			push(&f, TID, t0 + i * step - (uint64_t)lag_ns);
	int right = 0;
	for (int i = 0; i < 6; i++) {
		const struct ember_copier_record *r = py_copier_take(&py, TID, t0 + i * step);
		right += i == 3 ? r == NULL : r && r->time_ns == t0 + i * step - (uint64_t)lag_ns;
		py_copier_done(&py);
	}
	CHECK(right == 6);
	py_intake_free(&st);
}

/* Records of threads ember has not registered (a launcher's shell and the
 * commands it runs before exec'ing Python: the copier wakes ember for
 * them, with nothing copied) are not kept for a later read: no read would
 * take them.  A registered thread's record passed over is kept. */
static void unregistered_not_kept(void)
{
	static struct ember_python py;
	static struct ember_py_copier st;
	static struct fake_ring f;
	setup(&py, &st, &f);
	const uint64_t t0 = 4000000000ull;
	for (int i = 0; i < 5; i++)
		push_ts(&f, TID + 1 + (uint32_t)i, t0 + (uint64_t)i * 1000, 0);
	push(&f, TID + 9, t0 + 6000);
	push(&f, TID, t0 + 10000);
	const struct ember_copier_record *r = py_copier_take(&py, TID, t0 + 10000);
	CHECK(r && r->time_ns == t0 + 10000);
	py_copier_done(&py);
	CHECK(st.in.records == 7 && st.in.kept == 1);
	py_intake_free(&st);
}

int main(void)
{
	paired_at_lag(-1500);     /* 6.18: 1.5 us after the sample */
	paired_at_lag(5000);      /* 6.1 on hardware: the copy's time before it */
	paired_at_lag(120000);    /* 6.1 under emulation */
	ambiguous_not_paired();
	missing_record_not_stolen(-1500);
	missing_record_not_stolen(120000);
	unregistered_not_kept();
	return check_report();
}
