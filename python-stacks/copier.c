/* The copier's user-space half: loads the in-kernel frame
 * copier (copier.bpf.c, built into ember), registers each Python
 * thread's state with it, drains its ring buffer and keeps the last
 * COPIER_RECENT records until the samples they belong to are read.
 *
 * Matching a record to its sample: same tid and process, and its time
 * (taken in the same perf overflow as the sample's own stamp, on the same
 * clock, CLOCK_MONOTONIC) at most COPIER_MATCH_BEFORE_NS earlier or
 * COPIER_MATCH_AFTER_NS later than the sample's (measured 0.2-2 us later here),
 * the nearest one.  The window must be tight: in frequency mode the kernel's
 * sampling period varies, and two samples of one thread can be 35 us apart.
 *
 * The common case costs no copy: a read consumes the ring up to its
 * sample's record (one within COPIER_MATCH_NOW_NS of the sample) and reads that
 * where it lies, inside the ring's callback (the kernel cannot reuse its
 * bytes before that returns); the records behind it wait in the ring for
 * their own samples.  Records passed over on the way (samples of another
 * CPU's perf ring, drained later; samples ember did not read) are copied
 * and kept; the search walks back from the newest and stops at records
 * COPIER_SCAN_BACK_NS older than the sample.  A sample whose record was already
 * overwritten (ember fell COPIER_RECENT samples behind) is read the old way,
 * after the fact. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "py_internal.h"
#include "copier.h"

#define PROC_PID_INIT_INO 0xEFFFFFFCu   /* the initial pid namespace's inode */
#define COPIER_MATCH_BEFORE_NS 10000ull
#define COPIER_MATCH_AFTER_NS 50000ull
#define COPIER_MATCH_NOW_NS 10000ull  /* nearer than any two samples of one thread */
#define COPIER_SCAN_BACK_NS 5000000ull
#define COPIER_RECENT 512            /* records kept, all threads */
#define COPIER_STOP (-1)             /* on_record: stop consuming, this one is read */

/* The compiled BPF object, embedded by copier_obj.c. */
extern const unsigned char ember_copier_bpf_obj[], ember_copier_bpf_obj_end[];

struct copier_kept {
	struct ember_copier_record *rec;  /* NULL until first used */
	size_t cap;                   /* bytes allocated at rec */
	bool fresh;                   /* holds a record not yet taken by a read */
};

struct ember_py_copier {
	struct bpf_object *obj;
	struct ring_buffer *rb;
	int prog_fd, threads_fd;
	int stats_fd;                 /* >= 0: the kernel times every run (opts.stats) */
	struct copier_kept recent[COPIER_RECENT];   /* ring, oldest overwritten */
	uint64_t kept, replaced;      /* copied (the next goes to recent[kept % COPIER_RECENT]);
	                               * overwritten before a read took them */
	uint64_t fresh;               /* recent[] entries not taken by a read yet */
	uint64_t records;             /* received */
	uint64_t woke;                /* ... that woke ember (EMBER_COPIER_WOKE) */
	uint64_t read_in_place, read_kept;
	struct ember_python **readers;/* the readers using st (ember_python_set_copier) */
	size_t nreaders, readers_cap;
	int codes_fd;                 /* the copier's code objects seen (py_copier_forget_code) */
	uint64_t learnt;              /* code objects named as their record arrived */
	struct ember_python *want_py; /* the read looking for its record (py_copier_read), */
	struct py_copier_read *want;      /* done when want_done */
	bool want_done;
};

/* libbpf's own messages (a failed load prints the verifier's whole log):
 * ember's one-line reason says enough; opts.debug of the copier opened
 * last shows them (libbpf has one print function per process). */
static bool copier_debug;

static int copier_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || !copier_debug)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* A record that woke ember holds a code object the copier had not seen:
 * it may be freed within milliseconds (a module's code, once imported), so
 * its names and line table are read now, as the record arrives, not when
 * its sample's turn comes in the batch (code_cache.c; cached ones cost a
 * lookup). */
static void learn_codes(struct ember_py_copier *st, const struct ember_copier_record *r)
{
	struct ember_python *py = NULL;
	for (size_t i = 0; i < st->nreaders && !py; i++)
		if ((uint32_t)st->readers[i]->pid == r->pid)
			py = st->readers[i];
	if (!py || r->code_len != py->co_len)
		return;
	const uint8_t *q = r->data + r->ts_len;
	py->read_ns = r->time_ns;
	py->objs = r;   /* names from the objects copied with it */
	for (uint32_t i = 0; i < r->nframes + r->ncodes; i++) {
		uint64_t a = rd64(q, 0);
		if (a & EMBER_COPIER_CODE_TAG) {
			uint64_t before = py->st.codes;
			py_code_get(py, a & ~EMBER_COPIER_CODE_TAG, q + 8, rd64(q + 8, r->code_len));
			st->learnt += py->st.codes != before;
		}
		q += 8 + ember_copier_entry_bytes(r, a);
	}
	py->objs = NULL;
}

/* The objects' entries (copier.h): the bytes of the one at q, and
 * how many; the next entry follows them. */
static const uint8_t *obj_bytes(const uint8_t *q, uint64_t *len)
{
	if (rd64(q, 0) & EMBER_COPIER_LONG_TAG) {
		*len = rd64(q, 8);
		return q + 16;
	}
	*len = EMBER_COPIER_OBJ_BYTES;
	return q + 8;
}

bool py_copier_obj_read(const struct ember_copier_record *r, uint64_t addr, void *buf, size_t len)
{
	const uint8_t *first = r->data + r->ts_len + ember_copier_frames_bytes(r);
	/* A line table's rest is an entry of its own, right after its start:
	 * a read may take bytes from both. */
	while (len) {
		const uint8_t *q = first, *found = NULL;
		uint64_t n = 0, at = 0;
		for (uint32_t i = 0; i < r->nobjs && !found; i++) {
			const uint8_t *b = obj_bytes(q, &n);
			at = rd64(q, 0) & ~EMBER_COPIER_TAGS;
			if (addr >= at && addr - at < n)
				found = b;
			q = b + n;
		}
		if (!found)
			return false;
		size_t take = n - (addr - at) < len ? (size_t)(n - (addr - at)) : len;
		memcpy(buf, found + (addr - at), take);
		buf = (uint8_t *)buf + take;
		addr += take;
		len -= take;
	}
	return true;
}

/* Bytes of a record's objects (nobjs entries from q, at most avail): -1 if
 * they do not fit or an entry is malformed. */
static int64_t objs_bytes(const uint8_t *q, uint32_t nobjs, uint64_t avail)
{
	uint64_t used = 0;
	for (uint32_t i = 0; i < nobjs; i++) {
		if (avail - used < 16)
			return -1;
		uint64_t n;
		const uint8_t *b = obj_bytes(q + used, &n);
		uint64_t head = (uint64_t)(b - (q + used));
		if ((rd64(q + used, 0) & EMBER_COPIER_LONG_TAG) && (n > EMBER_COPIER_TABLE_MORE || n % 8))
			return -1;
		if (avail - used < head + n)
			return -1;
		used += head + n;
	}
	return (int64_t)used;
}

static int on_record(void *arg, void *data, size_t size)
{
	struct ember_py_copier *st = arg;
	const struct ember_copier_record *r = data;
	size_t head = offsetof(struct ember_copier_record, data);
	if (size < head || r->nframes > EMBER_COPIER_MAX_FRAMES || r->ncodes > EMBER_COPIER_MAX_FRAMES ||
	    r->nobjs > EMBER_COPIER_NEW_CODES * (EMBER_COPIER_OBJS + 1) || r->ts_len > EMBER_COPIER_TS_BYTES ||
	    r->frame_len > EMBER_COPIER_FRAME_BYTES || r->code_len > EMBER_COPIER_CODE_BYTES ||
	    size < head + r->ts_len + ember_copier_frames_bytes(r))
		return 0;
	uint64_t fixed = head + r->ts_len + ember_copier_frames_bytes(r);
	if (objs_bytes(r->data + (fixed - head), r->nobjs, size - fixed) != (int64_t)(size - fixed))
		return 0;
	st->records++;
	st->woke += (r->flags & EMBER_COPIER_WOKE) != 0;
	struct py_copier_read *w = st->want;
	if (w && !st->want_done && r->tid == w->tid && r->pid == (uint32_t)st->want_py->pid &&
	    r->time_ns + COPIER_MATCH_NOW_NS >= w->time_ns && r->time_ns <= w->time_ns + COPIER_MATCH_NOW_NS) {
		w->n = py_read_thread(st->want_py, w->tid, r, w->time_ns, w->out, w->max, w->flags);
		st->want_done = true;
		st->read_in_place++;
		/* Stop here: the records behind it belong to later samples,
		 * read in place in their turn rather than copied aside now
		 * (libbpf marks this one consumed and returns). */
		return COPIER_STOP;
	}
	if ((r->flags & EMBER_COPIER_WOKE) && r->ncodes)
		learn_codes(st, r);
	struct copier_kept *k = &st->recent[st->kept % COPIER_RECENT];
	if (k->cap < size) {
		void *p = realloc(k->rec, size);
		if (!p)
			return 0;
		k->rec = p;
		k->cap = size;
	}
	st->kept++;
	st->replaced += k->fresh;
	st->fresh += !k->fresh;
	memcpy(k->rec, r, size);
	k->fresh = true;
	return 0;
}

int ember_py_copier_open(struct ember_py_copier **out, const struct ember_py_copier_opts *opts, char *msg,
			 size_t msglen)
{
	struct ember_py_copier_opts none = { 0 };
	struct ember_py_copier *st = calloc(1, sizeof *st);
	*out = NULL;
	if (!st) {
		snprintf(msg, msglen, "out of memory");
		return EMBER_PY_ERROR;
	}
	st->stats_fd = -1;
	st->codes_fd = -1;
	if (!opts)
		opts = &none;
	copier_debug = opts->debug;
	libbpf_set_print(copier_print);
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "ember_copier");
	st->obj = bpf_object__open_mem(ember_copier_bpf_obj, (size_t)(ember_copier_bpf_obj_end - ember_copier_bpf_obj), &oo);
	int err = st->obj ? 0 : -errno;
	/* The record's scratch space: one per CPU (copier.bpf.c) */
	struct bpf_map *scratch = st->obj ? bpf_object__find_map_by_name(st->obj, "scratch") : NULL;
	int ncpus = libbpf_num_possible_cpus();
	if (st->obj && (!scratch || ncpus <= 0 || bpf_map__set_max_entries(scratch, (uint32_t)ncpus) != 0))
		err = ncpus < 0 ? ncpus : -EINVAL;
	if (!err)
		err = bpf_object__load(st->obj);
	if (!st->obj || err) {
		int e = err < 0 ? -err : errno;
		snprintf(msg, msglen, "cannot load the BPF frame copier: %s%s", strerror(e),
			 e == EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON)" : "");
		ember_py_copier_close(st);
		return e == EPERM || e == EACCES ? EMBER_PY_NO_ACCESS : EMBER_PY_ERROR;
	}
	struct bpf_program *prog = bpf_object__find_program_by_name(st->obj, "ember_copy_frames");
	struct bpf_map *threads = bpf_object__find_map_by_name(st->obj, "threads");
	struct bpf_map *records = bpf_object__find_map_by_name(st->obj, "records");
	struct bpf_map *config = bpf_object__find_map_by_name(st->obj, "config");
	struct bpf_map *codes = bpf_object__find_map_by_name(st->obj, "codes");
	/* Thread ids as ember sees them: its own pid namespace. */
	struct ember_copier_config cfg = { 0 };
	struct stat ns;
	if (stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino != PROC_PID_INIT_INO) {
		cfg.ns_dev = ns.st_dev;
		cfg.ns_ino = ns.st_ino;
	}
	uint32_t zero = 0;
	if (!config || bpf_map_update_elem(bpf_map__fd(config), &zero, &cfg, BPF_ANY) != 0) {
		snprintf(msg, msglen, "cannot configure the BPF frame copier: %s", strerror(errno));
		ember_py_copier_close(st);
		return EMBER_PY_ERROR;
	}
	st->prog_fd = prog ? bpf_program__fd(prog) : -1;
	st->threads_fd = threads ? bpf_map__fd(threads) : -1;
	st->codes_fd = codes ? bpf_map__fd(codes) : -1;
	st->rb = records ? ring_buffer__new(bpf_map__fd(records), on_record, st, NULL) : NULL;
	if (st->prog_fd < 0 || st->threads_fd < 0 || st->codes_fd < 0 || !st->rb) {
		snprintf(msg, msglen, "cannot set up the BPF frame copier: %s", strerror(errno));
		ember_py_copier_close(st);
		return EMBER_PY_ERROR;
	}
	/* For the bench: the program's cost in the target, timed by the kernel
	 * (system-wide while the fd is open, so only on request). */
	if (opts->stats)
		st->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	*out = st;
	return EMBER_PY_OK;
}

int ember_py_copier_prog_fd(const struct ember_py_copier *st)
{
	return st ? st->prog_fd : -1;
}

int ember_py_copier_wake_fd(const struct ember_py_copier *st)
{
	return st ? ring_buffer__epoll_fd(st->rb) : -1;
}

void ember_py_copier_consume(struct ember_py_copier *st)
{
	if (st)
		ring_buffer__consume(st->rb);
}

void ember_py_copier_close(struct ember_py_copier *st)
{
	if (!st)
		return;
	ring_buffer__free(st->rb);
	bpf_object__close(st->obj);
	if (st->stats_fd >= 0)
		close(st->stats_fd);
	for (int i = 0; i < COPIER_RECENT; i++)
		free(st->recent[i].rec);
	free(st->readers);
	free(st);
}

/* <= 3.10: where in a frame's copy the copier puts a method's first
 * argument (copier.h): three words after the code object pointer,
 * if no word ember reads is among them; 0: nowhere. */
static uint32_t py_copier_mark_off(const struct ember_python *py)
{
	const struct py_offsets *o = &py->off;
	if (o->fo_localsplus <= 0 || o->fo_code < 0 || o->fo_code % 8)
		return 0;
	int32_t at = o->fo_code + 8, used[] = { o->ob_type, o->fo_back, o->fo_code, o->fo_lasti };
	for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
		if (used[i] < 0 || (used[i] + 8 > at && used[i] < at + 24))
			return 0;
	return (uint32_t)at + 24 <= py->fr_len ? (uint32_t)at : 0;
}

void ember_python_set_copier(struct ember_python *py, struct ember_py_copier *st)
{
	py_copier_detach(py);
	py->copier = st;
	py->copier_mark_off = st ? py_copier_mark_off(py) : 0;
	if (!st)
		return;
	if (st->nreaders == st->readers_cap) {
		size_t cap = st->readers_cap ? st->readers_cap * 2 : 8;
		struct ember_python **v = realloc(st->readers, cap * sizeof *v);
		if (!v)
			return;   /* its code objects are then named when their samples are read */
		st->readers = v;
		st->readers_cap = cap;
	}
	st->readers[st->nreaders++] = py;
}

void py_copier_detach(struct ember_python *py)
{
	struct ember_py_copier *st = py->copier;
	if (!st)
		return;
	for (size_t i = 0; i < st->nreaders; i++)
		if (st->readers[i] == py) {
			st->readers[i] = st->readers[--st->nreaders];
			break;
		}
	py->copier = NULL;
}

void py_copier_forget_code(struct ember_python *py, uint64_t addr)
{
	if (!py->copier)
		return;
	struct ember_copier_code_key key = { .addr = addr, .pid = (uint32_t)py->pid };
	bpf_map_delete_elem(py->copier->codes_fd, &key);
}

bool py_copier_first_arg(struct ember_python *py, uint64_t f, const uint8_t *b, uint32_t code_id, uint64_t *arg,
		     uint64_t *type)
{
	uint32_t at = py->copier_mark_off;
	if (!py->copier || !at)
		return false;
	if (rd64(b, at) == (f ^ EMBER_COPIER_ARG_MARK)) {
		*arg = rd64(b, at + 8);
		*type = rd64(b, at + 16);
		return true;
	}
	/* Not asked for yet (or the copier's entry is a newer object's): from
	 * its next sample on. */
	struct ember_copier_code_key key = { .addr = py->codes[code_id - 1]->addr, .pid = (uint32_t)py->pid };
	uint64_t v;
	if (bpf_map_lookup_elem(py->copier->codes_fd, &key, &v) == 0 && !(v & EMBER_COPIER_CODE_METHOD)) {
		v |= EMBER_COPIER_CODE_METHOD;
		bpf_map_update_elem(py->copier->codes_fd, &key, &v, BPF_EXIST);
	}
	return false;
}

bool py_copier_thread_entry(const struct ember_python *py, const struct py_thread *t, struct ember_copier_thread *v)
{
	const struct py_offsets *o = &py->off;
	if (!t->tstate || py->fr_len > EMBER_COPIER_FRAME_BYTES || py->co_len > EMBER_COPIER_CODE_BYTES ||
	    py->ts_len > EMBER_COPIER_TS_BYTES)
		return false;
	*v = (struct ember_copier_thread){
		.pid = (uint32_t)py->pid,
		.frame_len = py->fr_len,
		.tstate = t->tstate,
		.cf_off = -1,
		.code_len = py->co_len,
		.ts_len = py->ts_len,
		.name_hash_off = py->str_hash_off % 8 == 0 && py->str_hash_off < EMBER_COPIER_CODE_BYTES ? py->str_hash_off : 0,
		.table_sval = o->bytes_sval > 0 && o->bytes_sval < 64 ? (uint32_t)o->bytes_sval : 0,
		.arg_off = o->fo_localsplus > 0 && o->fo_localsplus % 8 == 0 && o->fo_localsplus < 1024
				   ? (uint32_t)o->fo_localsplus : 0,
		.mark_off = py->copier_mark_off,
		.ob_type_off = o->ob_type >= 0 && o->ob_type < 256 && o->ob_type % 8 == 0 ? (uint32_t)o->ob_type : 8,
		/* (0 on 3.12+: co_version, a key word, tells code objects apart) */
	};
	if (o->ts_frame >= 0) {
		v->top_off = o->ts_frame;
		v->back_off = (uint32_t)o->fo_back;
		v->code_off = (uint32_t)o->fo_code;
	} else if (o->ts_current_frame >= 0) {
		v->top_off = o->ts_current_frame;
		v->back_off = (uint32_t)o->if_previous;
		v->code_off = (uint32_t)o->if_code;
	} else {
		v->top_off = o->ts_cframe;
		v->cf_off = o->cf_current_frame;
		v->back_off = (uint32_t)o->if_previous;
		v->code_off = (uint32_t)o->if_code;
	}
	/* --gil before 3.13: the GIL's holder, read at the sample (frames.c
	 * check_gil reads the same words after it otherwise) */
	if (!py->opts.no_gil_check && py->gil_tstate_addr) {
		v->gil_holder = py->gil_tstate_addr;
	} else if (!py->opts.no_gil_check && !(py->major == 3 && py->minor >= 13) && o->is_ceval_gil >= 0 &&
		   o->gil_locked >= 0 && o->gil_last_holder >= 0) {
		uint64_t g = 0;
		if (rm_read(py->pid, t->interp + (uint64_t)o->is_ceval_gil, &g, 8, NULL, NULL) && rm_ptr_ok(g, 8)) {
			v->gil_holder = g + (uint64_t)o->gil_last_holder;
			v->gil_locked = g + (uint64_t)o->gil_locked;
		}
	}
	/* The words ember's code cache checks (code_cache.c key_matches), for
	 * the copier to tell a code object it has not seen. */
	int32_t key[5] = { o->co_name, o->co_filename, o->co_linetable,
			   o->co_code_adaptive >= 0 ? o->ob_size : o->co_code,
			   o->co_version >= 0 ? o->co_version & ~7 : o->co_name };
	for (int i = 0; i < 5; i++) {
		if (key[i] < 0 || key[i] % 8 || (uint32_t)key[i] + 8 > py->co_len)
			return false;
		v->key_off[i] = (uint32_t)key[i];
	}
	/* The objects a new code object is named from (code_cache.c), for the
	 * copier to take along while they are still there. */
	int32_t obj[EMBER_COPIER_OBJS] = { o->co_name, o->co_qualname >= 0 ? o->co_qualname : o->co_code, o->co_filename,
					o->co_linetable };   /* (<= 3.10: the bytecode's length is read too) */
	for (int i = 0; i < EMBER_COPIER_OBJS; i++)
		v->obj_off[i] = obj[i] > 0 && obj[i] % 8 == 0 && (uint32_t)obj[i] + 8 <= py->co_len ? (uint32_t)obj[i] : 0;
	return v->back_off % 8 == 0 && v->back_off + 8 <= py->fr_len && v->code_off % 8 == 0 &&
	       v->code_off + 8 <= py->fr_len;
}

/* Tell the copier where thread t's frames start (once per thread state). */
void py_copier_register(struct ember_python *py, struct py_thread *t)
{
	struct ember_copier_thread v;
	if (!py->copier || t->copier_tstate == t->tstate || !py_copier_thread_entry(py, t, &v))
		return;
	uint32_t key = t->tid;
	if (bpf_map_update_elem(py->copier->threads_fd, &key, &v, BPF_ANY) == 0) {
		t->copier_tstate = t->tstate;
		t->copier_since_ns = py_now_ns();
	}
}

/* The kept record of rd's sample: the nearest of its thread's from before
 * before_ns to after_ns after the sample, NULL if none. */
static struct copier_kept *find_kept(struct ember_py_copier *st, const struct ember_python *py,
				 const struct py_copier_read *rd, uint64_t before_ns, uint64_t after_ns)
{
	struct copier_kept *best = NULL;
	uint64_t best_d = 0;
	uint64_t n = st->kept < COPIER_RECENT ? st->kept : COPIER_RECENT;
	for (uint64_t i = 1; i <= n && st->fresh; i++) {
		struct copier_kept *k = &st->recent[(st->kept - i) % COPIER_RECENT];
		uint64_t t = k->rec->time_ns;
		if (t + COPIER_SCAN_BACK_NS < rd->time_ns)
			break;   /* older than any record of this sample */
		if (!k->fresh || k->rec->tid != rd->tid || k->rec->pid != (uint32_t)py->pid ||
		    t + before_ns < rd->time_ns || t > rd->time_ns + after_ns)
			continue;
		uint64_t d = t > rd->time_ns ? t - rd->time_ns : rd->time_ns - t;
		if (!best || d < best_d) {   /* two samples of a thread can be tens of us apart */
			best = k;
			best_d = d;
		}
	}
	return best;
}

bool py_copier_read(struct ember_python *py, struct py_copier_read *rd)
{
	struct ember_py_copier *st = py->copier;
	if (!st)
		return false;
	/* Copied aside already (its CPU's ring drained after another's)?
	 * Else consume up to it: it is read where it lies. */
	struct copier_kept *best = find_kept(st, py, rd, COPIER_MATCH_NOW_NS, COPIER_MATCH_NOW_NS);
	if (!best) {
		st->want_py = py;
		st->want = rd;
		st->want_done = false;
		ring_buffer__consume(st->rb);
		st->want = NULL;
		if (st->want_done)
			return true;
		best = find_kept(st, py, rd, COPIER_MATCH_BEFORE_NS, COPIER_MATCH_AFTER_NS);
	}
	if (!best)
		return false;
	best->fresh = false;
	st->fresh--;
	st->read_kept++;
	rd->n = py_read_thread(py, rd->tid, best->rec, rd->time_ns, rd->out, rd->max, rd->flags);
	return true;
}

void ember_py_copier_stats(const struct ember_py_copier *st, struct ember_py_copier_stats *out)
{
	memset(out, 0, sizeof *out);
	if (!st)
		return;
	out->records = st->records;
	out->woke = st->woke;
	out->learnt = st->learnt;
	out->read_in_place = st->read_in_place;
	out->kept = st->kept;
	out->read_kept = st->read_kept;
	out->replaced = st->replaced;
	struct bpf_prog_info info;
	uint32_t len = sizeof info;
	memset(&info, 0, sizeof info);
	if (st->stats_fd >= 0 && bpf_obj_get_info_by_fd(st->prog_fd, &info, &len) == 0) {
		out->timed = true;
		out->runs = info.run_cnt;
		out->run_ns = info.run_time_ns;
	}
}
