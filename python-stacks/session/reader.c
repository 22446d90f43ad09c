/* The reader's entry points (python_stacks.h): opening a target (the
 * runtime, then each layer's state), a read of a thread or of a sample,
 * and what is said about the reader.  Around each read: the eval loop's
 * DWARF taken over when its loader is done (or started once reads keep
 * coming without a copy), the record the copier made at the sample handed
 * to the read and released after it, and the copier told about the threads
 * the read met. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "copier_record.h"
#include "proc.h"
#include "copier_user.h"
#include "py_check.h"
#include "reader.h"

#define NAME_SCAN_INTERVAL_NS 20000000ull   /* thread-list rescans for unknown TIDs, as reads do */

/* A reader and its layers' state, in one allocation (struct ember_python,
 * runtime/py_runtime.h, points at each part; py comes first: freeing it
 * frees the block). */
struct reader_block {
	struct ember_python py;
	struct py_strings str;
	struct py_code_cache code;
	struct py_frames fr;
	struct py_threads th;
	struct py_tn_cache tn;
	struct py_eval eval;
	struct py_check chk;
	struct py_copier_link cp;
};

static void describe(struct ember_python *py)
{
	snprintf(py->describe, sizeof py->describe, "%s%s", py->rt.where, py->eval->note);
}

static void close_layers(struct ember_python *py)
{
	py_copier_detach(py);
	py_eval_dwarf_stop(py);
	py_check_free(py);
	py_threads_free(py);
	py_code_free(py);
	py_strings_free(py);
	snap_free(py->snap);
}

int ember_python_open(struct ember_python **out, pid_t pid, const struct ember_python_opts *opts, char *msg,
		      size_t msglen)
{
	struct ember_python_opts def = EMBER_PYTHON_OPTS_DEFAULT;
	*out = NULL;
	if (msg && msglen)
		msg[0] = 0;
	struct reader_block *b = calloc(1, sizeof *b);
	struct ember_python *py = b ? &b->py : NULL;
	if (!py) {
		snprintf(msg, msglen, "out of memory");
		return EMBER_PY_ERROR;
	}
	*py = (struct ember_python){ .pid = pid, .opts = opts ? *opts : def, .str = &b->str, .code = &b->code,
				     .fr = &b->fr, .th = &b->th, .tn = &b->tn, .eval = &b->eval, .chk = &b->chk,
				     .cp = &b->cp };
	if (!py->opts.max_depth)
		py->opts.max_depth = 131072;
	int rc = py_runtime_find(py, msg, msglen);
	/* Reads of a process that ended under them fail in many ways: say why. */
	if (rc != EMBER_PY_OK && rc != EMBER_PY_NOT_PYTHON && rc != EMBER_PY_GONE && ember_proc_gone(pid)) {
		snprintf(msg, msglen, "pid %d: the process has ended", (int)pid);
		rc = EMBER_PY_GONE;
	}
	if (rc != EMBER_PY_OK) {
		free(py);
		return rc;
	}
	py_threads_init(py);
	py_frames_init(py);
	if (!(py->snap = snap_new()) || py_strings_init(py) != 0 || py_code_init(py) != 0) {
		close_layers(py);
		free(py);
		snprintf(msg, msglen, "out of memory");
		return EMBER_PY_ERROR;
	}
	py_eval_dwarf_open(py);
	describe(py);
	py_scan_threads(py);
	*out = py;
	return EMBER_PY_OK;
}

void ember_python_close(struct ember_python *py)
{
	if (!py)
		return;
	close_layers(py);
	free(py);
}

const char *ember_python_version(const struct ember_python *py)
{
	return py->rt.version;
}

const char *ember_python_describe(const struct ember_python *py)
{
	return py->describe;
}

void ember_python_stats(const struct ember_python *py, struct ember_python_stats *out)
{
	const struct py_threads *th = py->th;
	memset(out, 0, sizeof *out);
	out->reads = th->reads;
	out->syscalls = py->syscalls;
	snap_counts(py, &out->prefetch_hits, &out->single_reads);
	out->codes = py->code->created;
	out->code_revalidations_failed = py->code->revalidations_failed;
	out->thread_scans = th->scans;
	out->torn = th->torn;
	out->unreadable = th->unreadable;
	out->torn_retries = th->torn_retries;
	out->checked = py->chk->checked;
	out->corrected = py->chk->corrected;
	out->evidence_sites = py->chk->learnt;
	out->at_sample = th->at_sample;
}

/* A read of tid and what follows it: rec, at_ns as for py_read_thread. */
static int read_thread(struct ember_python *py, uint32_t tid, const struct ember_copier_record *rec, uint64_t at_ns,
		       struct ember_py_frame *out, int max, uint32_t *flags)
{
	if (py->eval->job && py_eval_dwarf_adopt(py))
		describe(py);
	int n = py_read_thread(py, tid, rec, at_ns, out, max, flags);
	py_copier_sync(py, n >= 0 ? tid : 0);
	if (!(*flags & EMBER_PY_AT_SAMPLE))
		py_eval_dwarf_count(py, n);
	return n;
}

int ember_python_read_thread(struct ember_python *py, uint32_t tid, struct ember_py_frame *out, int max,
			     uint32_t *flags)
{
	uint32_t fl;
	int n = read_thread(py, tid, NULL, 0, out, max, &fl);
	if (flags)
		*flags = fl;
	return n;
}

int ember_python_read_sample(struct ember_python *py, uint32_t tid, uint64_t time_ns, struct ember_py_frame *out,
			     int max, uint32_t *flags, uint32_t *peer)
{
	uint32_t fl;
	/* With the frames copied at the sample if its record is found. */
	const struct ember_copier_record *rec = py_copier_take(py, tid, time_ns);
	if (peer)
		*peer = 0;
	if (rec && (rec->flags & EMBER_COPIER_PEER)) {
		/* A pool worker's sample: its dispatcher's frames at that instant. */
		uint32_t of = rec->peer;
		int n = py_read_copy(py, of, rec, time_ns, out, max, &fl);
		py_copier_done(py);
		if (n > 0) {
			fl |= EMBER_PY_PEER;
			if (peer)
				*peer = of;
		}
		if (flags)
			*flags = n > 0 ? fl : 0;
		return n;
	}
	int n = read_thread(py, tid, rec, time_ns, out, max, &fl);
	py_copier_done(py);
	/* No copy of a Python thread's frames: say whether the copier could
	 * have made one.  Until ember registers a thread its records hold no
	 * frames (its first samples; many when ember is late).  (Threads
	 * without a Python state, BLAS workers, are never registered.) */
	if (py->cp->copier && !(fl & EMBER_PY_AT_SAMPLE) && py_copier_unregistered(py, tid, time_ns))
		fl |= EMBER_PY_BEFORE_COPIER;
	if (flags)
		*flags = fl;
	return n;
}

void ember_python_set_peer(struct ember_python *py, uint32_t tid, uint32_t peer)
{
	py_copier_set_peer(py, tid, peer);
}

int py_list_threads(struct ember_python *py, uint32_t *tids, int max)
{
	int rc = py_scan_threads(py);
	py_copier_sync(py, 0);
	if (rc < 0)
		return rc;
	int n = 0;
	for (size_t i = 0; i < py->th->n && n < max; i++)
		tids[n++] = py->th->v[i].tid;
	return n;
}

int ember_python_thread_name(struct ember_python *py, uint32_t tid, char *buf, size_t len)
{
	if (!buf || !len)
		return 0;
	buf[0] = 0;
	struct py_thread *t = py_thread_find(py, tid);
	if (!t && ember_now_ns() - py->th->last_scan_ns >= NAME_SCAN_INTERVAL_NS) {   /* a thread not met yet */
		py_scan_threads(py);
		py_copier_sync(py, 0);
		t = py_thread_find(py, tid);
	}
	return t ? py_thread_name(py, t, buf, len) : 0;
}
