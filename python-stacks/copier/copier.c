/* The copier's user-space half: loads the in-kernel frame copier
 * (copier.bpf.c, built into ember), tells it each Python thread's state
 * and layout, and the code objects whose frames need more than their bytes
 * (a method's first argument) or that ember could not name (to be taken as
 * new again).  Its records come in through copier_intake.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "copier_record.h"
#include "copier_user.h"
#include "grow.h"

#define PROC_PID_INIT_INO 0xEFFFFFFCu   /* the initial pid namespace's inode */

/* The compiled BPF object, embedded by copier_obj.c. */
extern const unsigned char ember_copier_bpf_obj[], ember_copier_bpf_obj_end[];

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

/* The programs of each variant (copier.bpf.c): the walks in bpf_loop()
 * (kernel 5.17+: verified in milliseconds), or unrolled (any kernel: a
 * third of a second of the verifier's time, and more on a slow CPU). */
static const char *const sample_prog[2] = { "ember_copy_frames", "ember_copy_frames_unrolled" };
static const char *const switch_prog[2] = { "ember_copy_frames_switch", "ember_copy_frames_switch_unrolled" };

/* Open and load the object, with the programs of one variant: 0, or -errno
 * (st->obj then NULL).  The program for context switches only when asked
 * (it needs the kernel's BTF). */
static int load_variant(struct ember_py_copier *st, bool at_switch, bool unrolled)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "ember_copier");
	st->obj = bpf_object__open_mem(ember_copier_bpf_obj,
				       (size_t)(ember_copier_bpf_obj_end - ember_copier_bpf_obj), &oo);
	if (!st->obj)
		return -errno;
	/* The record's scratch space: one per CPU (copier.bpf.c) */
	struct bpf_map *scratch = bpf_object__find_map_by_name(st->obj, "scratch");
	int ncpus = libbpf_num_possible_cpus();
	int rc = !scratch || ncpus <= 0 || bpf_map__set_max_entries(scratch, (uint32_t)ncpus) != 0
			 ? (ncpus < 0 ? ncpus : -EINVAL) : 0;
	for (int v = 0; v < 2 && !rc; v++) {
		struct bpf_program *p = bpf_object__find_program_by_name(st->obj, sample_prog[v]);
		struct bpf_program *sw = bpf_object__find_program_by_name(st->obj, switch_prog[v]);
		if (!p || !sw)
			rc = -ENOENT;
		else if (bpf_program__set_autoload(p, v == unrolled) != 0 ||
			 bpf_program__set_autoload(sw, v == unrolled && at_switch) != 0)
			rc = -EINVAL;
	}
	if (!rc)
		rc = bpf_object__load(st->obj);
	if (rc) {
		bpf_object__close(st->obj);
		st->obj = NULL;
		return rc;
	}
	st->unrolled = unrolled;
	return 0;
}

/* The copier in bpf_loop() where the kernel has that helper (asked of it
 * first: a kernel without it would refuse the program anyway, after
 * libbpf's warnings), unrolled otherwise or when the kernel refuses the
 * first; without the copy at context switches when only that stops the
 * load. */
static int load(struct ember_py_copier *st, bool at_switch, bool unrolled)
{
	if (!unrolled && !ember_py_copier_quick())
		unrolled = true;
	int rc = load_variant(st, at_switch, unrolled);
	if (rc && at_switch && load_variant(st, false, unrolled) == 0) {
		snprintf(st->switch_note, sizeof st->switch_note, "the copy at context switches cannot load: %s",
			 strerror(-rc));
		return 0;
	}
	return rc && !unrolled ? load(st, at_switch, true) : rc;
}

/* Thread ids as ember sees them: its own pid namespace. */
static int configure(struct ember_py_copier *st)
{
	struct bpf_map *config = bpf_object__find_map_by_name(st->obj, "config");
	struct ember_copier_config cfg = { 0 };
	struct stat ns;
	if (stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino != PROC_PID_INIT_INO) {
		cfg.ns_dev = ns.st_dev;
		cfg.ns_ino = ns.st_ino;
	}
	uint32_t zero = 0;
	return config && bpf_map_update_elem(bpf_map__fd(config), &zero, &cfg, BPF_ANY) == 0 ? 0 : -1;
}

/* Its program, maps and ring: 0, or -1. */
static int set_up(struct ember_py_copier *st)
{
	struct bpf_program *prog = bpf_object__find_program_by_name(st->obj, sample_prog[st->unrolled]);
	struct bpf_map *threads = bpf_object__find_map_by_name(st->obj, "threads");
	struct bpf_map *records = bpf_object__find_map_by_name(st->obj, "records");
	struct bpf_map *codes = bpf_object__find_map_by_name(st->obj, "codes");
	st->prog_fd = prog ? bpf_program__fd(prog) : -1;
	st->threads_fd = threads ? bpf_map__fd(threads) : -1;
	st->codes_fd = codes ? bpf_map__fd(codes) : -1;
	if (st->prog_fd < 0 || st->threads_fd < 0 || st->codes_fd < 0 || !records)
		return -1;
	int rc = py_ring_open(&st->in.ring, bpf_map__fd(records), bpf_map__max_entries(records));
	if (rc < 0)
		errno = -rc;
	return rc < 0 ? -1 : 0;
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
	st->prog_fd = st->threads_fd = st->codes_fd = st->stats_fd = -1;
	st->in.ring.epoll_fd = -1;
	copier_debug = (opts ? opts : &none)->debug;
	libbpf_set_print(copier_print);
	int err = load(st, opts && opts->at_switch, opts && opts->unrolled);
	if (err) {
		int e = err < 0 ? -err : errno;
		snprintf(msg, msglen, "cannot load the BPF frame copier: %s%s", strerror(e),
			 e == EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON)" : "");
		ember_py_copier_close(st);
		return e == EPERM || e == EACCES ? EMBER_PY_NO_ACCESS : EMBER_PY_ERROR;
	}
	if (configure(st) != 0) {
		snprintf(msg, msglen, "cannot configure the BPF frame copier: %s", strerror(errno));
		ember_py_copier_close(st);
		return EMBER_PY_ERROR;
	}
	if (set_up(st) != 0) {
		snprintf(msg, msglen, "cannot set up the BPF frame copier: %s", strerror(errno));
		ember_py_copier_close(st);
		return EMBER_PY_ERROR;
	}
	/* For the bench: the program's cost in the target, timed by the kernel
	 * (system-wide while the fd is open, so only on request). */
	if (opts && opts->stats)
		st->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	struct bpf_program *sw = bpf_object__find_program_by_name(st->obj, switch_prog[st->unrolled]);
	if (opts && opts->at_switch && !st->switch_note[0] && !(st->switch_link = bpf_program__attach(sw)))
		snprintf(st->switch_note, sizeof st->switch_note, "the copy at context switches cannot attach: %s",
			 strerror(errno));
	*out = st;
	return EMBER_PY_OK;
}

bool ember_py_copier_quick(void)
{
	/* 1 yes, 0 no, < 0 the probe itself failed: then the loader tries
	 * the bpf_loop variant first and falls back if refused. */
	static int quick = -1;
	if (quick < 0)
		quick = libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL) != 0;
	return quick;
}

const char *ember_py_copier_switch_note(const struct ember_py_copier *st)
{
	return st && st->switch_note[0] ? st->switch_note : NULL;
}

bool ember_py_copier_unrolled(const struct ember_py_copier *st)
{
	return st && st->unrolled;
}

int ember_py_copier_prog_fd(const struct ember_py_copier *st)
{
	return st ? st->prog_fd : -1;
}

int ember_py_copier_wake_fd(const struct ember_py_copier *st)
{
	return st ? st->in.ring.epoll_fd : -1;
}

void ember_py_copier_consume(struct ember_py_copier *st)
{
	if (st)
		py_intake_drain(st);
}

void ember_py_copier_close(struct ember_py_copier *st)
{
	if (!st)
		return;
	bpf_link__destroy(st->switch_link);
	py_intake_free(st);
	bpf_object__close(st->obj);
	if (st->stats_fd >= 0)
		close(st->stats_fd);
	free(st->readers);
	free(st);
}

void ember_py_copier_stats(const struct ember_py_copier *st, struct ember_py_copier_stats *out)
{
	memset(out, 0, sizeof *out);
	if (!st)
		return;
	const struct py_intake *in = &st->in;
	out->records = in->records;
	out->woke = in->woke;
	out->learnt = in->learnt;
	out->read_in_place = in->read_in_place;
	out->kept = in->kept;
	out->read_kept = in->read_kept;
	out->replaced = in->replaced;
	struct bpf_prog_info info;
	uint32_t len = sizeof info;
	memset(&info, 0, sizeof info);
	if (st->stats_fd >= 0 && bpf_obj_get_info_by_fd(st->prog_fd, &info, &len) == 0) {
		out->timed = true;
		out->runs = info.run_cnt;
		out->run_ns = info.run_time_ns;
	}
}

/* ------------------------------------------------------------ code objects */

/* The code object at addr could not be named (freed before ember read it):
 * the copier is to take it as new again, so that its next sample wakes
 * ember again, rather than every later sample of it failing the same way. */
static void forget_code(struct ember_python *py, uint64_t addr)
{
	struct ember_copier_code_key key = { .addr = addr, .pid = (uint32_t)py->pid };
	bpf_map_delete_elem(py->cp->copier->codes_fd, &key);
}

/* <= 3.10: a frame of the method at addr was copied without its first
 * argument (not asked for yet, or the copier's entry is a newer object's):
 * from its next sample on. */
static void want_first_arg(struct ember_python *py, uint64_t addr)
{
	struct ember_copier_code_key key = { .addr = addr, .pid = (uint32_t)py->pid };
	uint64_t v;
	int fd = py->cp->copier->codes_fd;
	if (bpf_map_lookup_elem(fd, &key, &v) == 0 && !(v & EMBER_COPIER_CODE_METHOD)) {
		v |= EMBER_COPIER_CODE_METHOD;
		bpf_map_update_elem(fd, &key, &v, BPF_EXIST);
	}
}

void ember_python_set_copier(struct ember_python *py, struct ember_py_copier *st)
{
	py_copier_detach(py);
	if (!st)
		return;
	py->cp->copier = st;
	py->cp->scans_seen = py->th->scans;   /* threads are registered from the next scan or read on */
	py_code_on_unnamed(py, forget_code);
	py_frames_on_method(py, want_first_arg);
	if (EMBER_GROW(st->readers, st->readers_cap, st->nreaders + 1) != 0)
		return;   /* its code objects are then named when their samples are read */
	st->readers[st->nreaders++] = py;
}

void py_copier_detach(struct ember_python *py)
{
	struct ember_py_copier *st = py->cp->copier;
	if (!st)
		return;
	for (size_t i = 0; i < st->nreaders; i++)
		if (st->readers[i] == py) {
			st->readers[i] = st->readers[--st->nreaders];
			break;
		}
	py->cp->copier = NULL;
	py_code_on_unnamed(py, NULL);
	py_frames_on_method(py, NULL);
}

/* ------------------------------------------------------------ threads */

/* --gil before 3.13: where the GIL's holder is, for the copier to read at
 * the sample (frames.c check_gil reads the same words after it otherwise). */
static void gil_words(const struct ember_python *py, const struct py_thread *t, struct ember_copier_thread *v)
{
	const struct py_offsets *o = &py->rt.off;
	if (py->opts.no_gil_check)
		return;
	if (py->rt.gil_tstate_addr) {
		v->gil_holder = py->rt.gil_tstate_addr;
	} else if (!(py->rt.major == 3 && py->rt.minor >= 13) && o->is_ceval_gil >= 0 && o->gil_locked >= 0 &&
		   o->gil_last_holder >= 0) {
		uint64_t g = 0;
		if (rm_read(py->pid, t->interp + (uint64_t)o->is_ceval_gil, &g, 8, NULL, NULL) && rm_ptr_ok(g, 8)) {
			v->gil_holder = g + (uint64_t)o->gil_last_holder;
			v->gil_locked = g + (uint64_t)o->gil_locked;
		}
	}
}

/* Where the copier finds the top frame, and each frame's link and code. */
static void frame_words(const struct py_offsets *o, struct ember_copier_thread *v)
{
	if (o->ts_frame >= 0) {
		v->top_off = o->ts_frame;
		v->back_off = (uint32_t)o->fo_back;
		v->code_off = (uint32_t)o->fo_code;
	} else if (o->ts_current_frame >= 0) {
		v->top_off = o->ts_current_frame;
		v->back_off = (uint32_t)o->if_previous;
		v->code_off = (uint32_t)o->if_code;
		v->code_tag = o->stackref_tag_bits > 0 ? (uint32_t)o->stackref_tag_bits : 0;
	} else {
		v->top_off = o->ts_cframe;
		v->cf_off = o->cf_current_frame;
		v->back_off = (uint32_t)o->if_previous;
		v->code_off = (uint32_t)o->if_code;
	}
}

/* The words ember's code cache checks (code_cache.c key_matches), for the
 * copier to tell a code object it has not seen, and the objects a new code
 * object is named from (strings.c), for it to take along while they are
 * still there.  false when a key word lies outside the header copied. */
static bool code_words(const struct ember_python *py, struct ember_copier_thread *v)
{
	const struct py_offsets *o = &py->rt.off;
	uint32_t co_len = py->rt.co_len;
	int32_t key[5] = { o->co_name, o->co_filename, o->co_linetable,
			   o->co_code_adaptive >= 0 ? o->ob_size : o->co_code,
			   o->co_version >= 0 ? o->co_version & ~7 : o->co_name };
	for (int i = 0; i < 5; i++) {
		if (key[i] < 0 || key[i] % 8 || (uint32_t)key[i] + 8 > co_len)
			return false;
		v->key_off[i] = (uint32_t)key[i];
	}
	int32_t obj[EMBER_COPIER_OBJS] = { o->co_name, o->co_qualname >= 0 ? o->co_qualname : o->co_code,
					   o->co_filename, o->co_linetable };   /* (<= 3.10: the bytecode's length too) */
	for (int i = 0; i < EMBER_COPIER_OBJS; i++)
		v->obj_off[i] = obj[i] > 0 && obj[i] % 8 == 0 && (uint32_t)obj[i] + 8 <= co_len ? (uint32_t)obj[i] : 0;
	return true;
}

bool py_copier_thread_entry(const struct ember_python *py, const struct py_thread *t, struct ember_copier_thread *v)
{
	const struct py_runtime *rt = &py->rt;
	const struct py_offsets *o = &rt->off;
	if (!t->tstate || rt->fr_len > EMBER_COPIER_FRAME_BYTES || rt->co_len > EMBER_COPIER_CODE_BYTES ||
	    rt->ts_len > EMBER_COPIER_TS_BYTES)
		return false;
	*v = (struct ember_copier_thread){
		.pid = (uint32_t)py->pid,
		.frame_len = rt->fr_len,
		.tstate = t->tstate,
		.cf_off = -1,
		.code_len = rt->co_len,
		.ts_len = rt->ts_len,
		/* (0 on 3.12+: co_version, a key word, tells code objects apart) */
		.name_hash_off = rt->str_hash_off % 8 == 0 && rt->str_hash_off < EMBER_COPIER_CODE_BYTES ? rt->str_hash_off : 0,
		.table_sval = o->bytes_sval > 0 && o->bytes_sval < 64 ? (uint32_t)o->bytes_sval : 0,
		.arg_off = o->fo_localsplus > 0 && o->fo_localsplus % 8 == 0 && o->fo_localsplus < 1024
				   ? (uint32_t)o->fo_localsplus : 0,
		.mark_off = py->fr->mark_off,
		.ob_type_off = o->ob_type >= 0 && o->ob_type < 256 && o->ob_type % 8 == 0 ? (uint32_t)o->ob_type : 8,
	};
	frame_words(o, v);
	gil_words(py, t, v);
	if (!code_words(py, v))
		return false;
	return v->back_off % 8 == 0 && v->back_off + 8 <= rt->fr_len && v->code_off % 8 == 0 &&
	       v->code_off + 8 <= rt->fr_len;
}

/* Tell the copier where thread t's frames start (once per thread state). */
static void register_thread(struct ember_python *py, struct py_thread *t)
{
	struct ember_copier_thread v;
	if (t->copier.tstate == t->tstate || !py_copier_thread_entry(py, t, &v))
		return;
	uint32_t key = t->tid;
	if (bpf_map_update_elem(py->cp->copier->threads_fd, &key, &v, BPF_ANY) == 0) {
		t->copier.tstate = t->tstate;
		t->copier.since_ns = ember_now_ns();
	}
}

void py_copier_sync(struct ember_python *py, uint32_t tid)
{
	if (!py->cp->copier)
		return;
	/* Every thread a scan found, not only the sampled one: its next
	 * sample is then copied at the sample too. */
	if (py->cp->scans_seen != py->th->scans) {
		py->cp->scans_seen = py->th->scans;
		for (size_t i = 0; i < py->th->n; i++)
			register_thread(py, &py->th->v[i]);
	}
	struct py_thread *t = tid ? py_thread_find(py, tid) : NULL;
	if (t)
		register_thread(py, t);
}

void py_copier_set_peer(struct ember_python *py, uint32_t tid, uint32_t peer)
{
	if (!py->cp->copier || py_thread_find(py, tid))
		return;   /* (a Python thread's own frames are copied) */
	/* Counted as past the wakes a thread not yet known may cause: it is
	 * known, as a worker. */
	struct ember_copier_thread v = { .pid = (uint32_t)py->pid, .peer = peer,
					 .wakes = EMBER_COPIER_NEW_THREAD_WAKES };
	bpf_map_update_elem(py->cp->copier->threads_fd, &tid, &v, BPF_ANY);
}

bool py_copier_unregistered(struct ember_python *py, uint32_t tid, uint64_t time_ns)
{
	const struct py_thread *t = py_thread_find(py, tid);
	return t && t->tstate && (!t->copier.tstate || t->copier.since_ns > time_ns);
}
