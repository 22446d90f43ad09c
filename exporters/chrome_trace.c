/* Chrome Trace Event JSON (docs/consumers.md §6), object form, for Perfetto UI,
 * chrome://tracing and speedscope.
 *
 * Per process an M process_name event (the command for the target process,
 * else its main thread's name), per thread an M thread_name event, then per
 * thread B/E events, properly nested: from one sample to the next, E for the
 * open frames that differ (leaf upward), B for the new ones (root downward),
 * so frames a run of samples shares stay open.  ts is in microseconds (three
 * decimals: exact nanoseconds), relative to the first sample.
 *
 * With a complete timeline (json_out.h) each sample starts at its time and
 * lasts one interval.  A sample that comes before the previous one of its
 * thread has ended, or less than half an interval after, starts where that one
 * ends (so a frame's total duration is always its samples x interval, and
 * jitter does not cut slices); a later one starts at its own time, after a
 * gap with nothing open.
 *
 * Without a timeline the time is synthetic ("timeline":"synthetic" in
 * otherData): per thread, from 0, each stack in flame-graph order (frame
 * names, root first) lasting its samples x interval, so the trace reads as
 * an icicle graph per thread with true durations (times stop at 2^64 - 1 ns
 * rather than wrap back to the start).
 *
 * Every event carries name, cat (the frame kind) and args (file, line,
 * module, inlined: constant per frame, as speedscope identifies a frame by
 * name + args); E events repeat them so every reader can match them. */
#define _GNU_SOURCE /* open_memstream, putc_unlocked, fputs_unlocked */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "exporters.h"
#include "json_out.h"

static const char *const kind_names[EMBER_FRAME_KIND_COUNT] = {
	[EMBER_FRAME_NATIVE] = "native", [EMBER_FRAME_PYTHON] = "python", [EMBER_FRAME_KERNEL] = "kernel",
	[EMBER_FRAME_INTERP] = "interp", [EMBER_FRAME_SPECIAL] = "special",
};

struct ct_ctx {
	const struct ember_profile *p;
	FILE *out;
	uint64_t interval;
	char *text;            /* per frame: ,"name":..,"cat":..,"args":{..}} */
	size_t text_len;
	size_t *text_off;      /* by frame id; [nframes] is "[unknown]" (empty stacks) */
	uint32_t *open;        /* frames open on the current thread, root first */
	uint32_t nopen;
	uint32_t pid, tid;     /* the current thread */
};

static void frame_text(FILE *t, const struct ember_frame *f)
{
	const char *kind = (unsigned)f->kind < EMBER_FRAME_KIND_COUNT ? kind_names[f->kind] : "native";
	bool file = f->file && *f->file, module = f->module && *f->module;
	bool args = file || f->line || module || f->inlined;

	fputs_unlocked(",\"name\":", t);
	ember_json_str(t, f->name && *f->name ? f->name : "[unknown]");
	fprintf(t, ",\"cat\":\"%s\"", kind);
	if (args) {
		const char *sep = "{";
		fputs_unlocked(",\"args\":", t);
		if (file) {
			fprintf(t, "%s\"file\":", sep);
			ember_json_str(t, f->file);
			sep = ",";
		}
		if (f->line) {
			fprintf(t, "%s\"line\":%" PRIu32, sep, f->line);
			sep = ",";
		}
		if (module) {
			fprintf(t, "%s\"module\":", sep);
			ember_json_str(t, f->module);
			sep = ",";
		}
		if (f->inlined)
			fprintf(t, "%s\"inlined\":true", sep);
		putc_unlocked('}', t);
	}
	putc_unlocked('}', t);
	putc_unlocked('\0', t);
}

static int build_texts(struct ct_ctx *c)
{
	const struct ember_profile *p = c->p;
	uint32_t nframes = ember_profile_nframes(p);
	FILE *t = open_memstream(&c->text, &c->text_len);
	struct ember_frame unknown = { .kind = EMBER_FRAME_SPECIAL, .name = "[unknown]" };

	if (!t || !(c->text_off = malloc(((size_t)nframes + 1) * sizeof(*c->text_off)))) {
		if (t)
			fclose(t);
		return -1;
	}
	for (uint32_t i = 0; i <= nframes; i++) {
		fflush(t);
		c->text_off[i] = c->text_len;
		frame_text(t, i < nframes ? ember_profile_frame_at(p, i) : &unknown);
	}
	return fclose(t) == 0 ? 0 : -1;
}

static void event(struct ct_ctx *c, char ph, uint64_t ts, uint32_t frame)
{
	FILE *out = c->out;

	fputs_unlocked(",\n{\"ph\":\"", out);
	putc_unlocked(ph, out);
	fputs_unlocked("\",\"pid\":", out);
	ember_json_u64(out, c->pid);
	fputs_unlocked(",\"tid\":", out);
	ember_json_u64(out, c->tid);
	fputs_unlocked(",\"ts\":", out);
	ember_json_us(out, ts);
	fputs_unlocked(c->text + c->text_off[frame], out);
}

/* Make the open frames those of stack, at ts. */
static void transition(struct ct_ctx *c, uint32_t stack, uint64_t ts)
{
	uint32_t n, unknown = ember_profile_nframes(c->p);
	const uint32_t *ids = ember_profile_stack_frames(c->p, stack, &n);
	uint32_t common = 0;

	if (n == 0) {
		ids = &unknown;
		n = 1;
	}
	while (common < c->nopen && common < n && c->open[common] == ids[common])
		common++;
	while (c->nopen > common)
		event(c, 'E', ts, c->open[--c->nopen]);
	for (; c->nopen < n; c->nopen++) {
		c->open[c->nopen] = ids[c->nopen];
		event(c, 'B', ts, ids[c->nopen]);
	}
}

static void close_all(struct ct_ctx *c, uint64_t ts)
{
	while (c->nopen)
		event(c, 'E', ts, c->open[--c->nopen]);
}

static void metadata(struct ct_ctx *c, const char *what, uint32_t pid, uint32_t tid, const char *name,
		     bool first)
{
	FILE *out = c->out;

	fputs_unlocked(first ? "\n{\"ph\":\"M\",\"name\":\"" : ",\n{\"ph\":\"M\",\"name\":\"", out);
	fputs_unlocked(what, out);
	fputs_unlocked("\",\"pid\":", out);
	ember_json_u64(out, pid);
	fputs_unlocked(",\"tid\":", out);
	ember_json_u64(out, tid);
	fputs_unlocked(",\"args\":{\"name\":", out);
	ember_json_str(out, name);
	fputs_unlocked("}}", out);
}

/* M events: process names, then thread names, in (pid, tid) order. */
static void names(struct ct_ctx *c, const uint32_t *threads)
{
	const struct ember_profile *p = c->p;
	const struct ember_run_meta *m = ember_profile_meta(p);
	uint32_t nthreads = ember_profile_nthreads(p);
	char buf[32];

	for (uint32_t i = 0; i < nthreads; i++) {
		const struct ember_thread *t = ember_profile_thread_at(p, threads[i]);
		if (i && ember_profile_thread_at(p, threads[i - 1])->pid == t->pid)
			continue;
		const char *name = NULL;
		if (t->pid == m->pid && m->command && *m->command)
			name = m->command;
		for (uint32_t j = i; !name && j < nthreads; j++) {
			const struct ember_thread *u = ember_profile_thread_at(p, threads[j]);
			if (u->pid != t->pid)
				break;
			if (u->tid == t->pid && u->name && *u->name)
				name = u->name;
		}
		if (!name) {
			snprintf(buf, sizeof(buf), "pid %" PRIu32, t->pid);
			name = buf;
		}
		metadata(c, "process_name", t->pid, t->pid, name, i == 0);
	}
	for (uint32_t i = 0; i < nthreads; i++) {
		const struct ember_thread *t = ember_profile_thread_at(p, threads[i]);
		const char *name = t->name;
		if (!name || !*name) {
			snprintf(buf, sizeof(buf), "tid %" PRIu32, t->tid);
			name = buf;
		}
		metadata(c, "thread_name", t->pid, t->tid, name, false);
	}
}

static void timeline_events(struct ct_ctx *c, const uint32_t *threads, const size_t *idx, const size_t *start)
{
	const struct ember_profile *p = c->p;
	uint64_t t0 = ember_profile_timed_at(p, 0)->time_ns, slack = c->interval / 2;

	for (size_t i = 1; i < ember_profile_ntimed(p); i++)
		if (ember_profile_timed_at(p, i)->time_ns < t0)
			t0 = ember_profile_timed_at(p, i)->time_ns;   /* sorted, unless the caller forgot */
	for (uint32_t i = 0; i < ember_profile_nthreads(p); i++) {
		uint32_t t = threads[i];
		uint64_t end = 0;
		bool any = false;

		c->pid = ember_profile_thread_at(p, t)->pid;
		c->tid = ember_profile_thread_at(p, t)->tid;
		for (size_t k = start[t]; k < start[t + 1]; k++) {
			const struct ember_timed_sample *s = ember_profile_timed_at(p, idx[k]);
			uint64_t at = s->time_ns - t0, begin;
			if (any && at <= ember_count_add(end, slack)) {
				begin = end;
			} else {
				close_all(c, end);
				begin = at;
			}
			transition(c, s->stack, begin);
			end = ember_count_add(begin, c->interval);
			any = true;
		}
		close_all(c, end);
	}
}

static void synthetic_events(struct ct_ctx *c, const uint32_t *rows, size_t nrows)
{
	const struct ember_profile *p = c->p;
	uint32_t thread = UINT32_MAX;
	uint64_t at = 0;

	for (size_t i = 0; i < nrows; i++) {
		const struct ember_sample_row *r = ember_profile_row_at(p, rows[i]);
		if (r->thread != thread) {
			close_all(c, at);
			thread = r->thread;
			c->pid = ember_profile_thread_at(p, thread)->pid;
			c->tid = ember_profile_thread_at(p, thread)->tid;
			at = 0;
		}
		transition(c, r->stack, at);
		at = ember_count_add(at, ember_count_mul(r->count, c->interval));
	}
	close_all(c, at);
}

static void other_data(struct ct_ctx *c, bool sampled)
{
	const struct ember_run_meta *m = ember_profile_meta(c->p);
	FILE *out = c->out;

	fputs_unlocked("{\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"exporter\":\"ember@" EMBER_VERSION "\",\"command\":", out);
	ember_json_str(out, m->command);
	fputs_unlocked(",\"source\":", out);
	ember_json_str(out, m->source);
	fprintf(out, ",\"pid\":%" PRIu32 ",\"freq_hz\":%" PRIu32 ",\"interval_ns\":%" PRIu64
		",\"samples\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"truncated\":%" PRIu64
		",\"start_unix_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64 ",\"timeline\":\"%s\"},\n",
		m->pid, m->freq_hz, c->interval, ember_profile_total(c->p), m->lost, m->truncated,
		m->start_unix_ns, m->duration_ns, sampled ? "sampled" : "synthetic");
}

int ember_write_chrome_trace(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o)
{
	(void)o;   /* threads are the trace's own rows */
	struct ct_ctx c = { .p = p, .out = out, .interval = ember_export_interval_ns(p) };
	uint32_t *threads = ember_export_sorted_threads(p), *rows = NULL;
	size_t *idx = NULL, *start = NULL, nrows = 0;
	bool sampled = ember_export_timeline_complete(p);
	uint32_t depth = 1;
	int ret = -1;

	for (uint32_t s = 0; s < ember_profile_nstacks(p); s++)
		if (ember_profile_stack_depth(p, s) > depth)
			depth = ember_profile_stack_depth(p, s);
	c.open = malloc((size_t)depth * sizeof(*c.open));
	if (!threads || !c.open || build_texts(&c) < 0 ||
	    (sampled ? ember_export_timeline_by_thread(p, &idx, &start) < 0
		     : !(rows = ember_export_sorted_rows(p, &nrows)))) {
		errno = ENOMEM;
		goto out;
	}

	flockfile(out);
	other_data(&c, sampled);
	fputs_unlocked("\"traceEvents\":[", out);
	if (ember_profile_nthreads(p)) {
		names(&c, threads);
		if (sampled)
			timeline_events(&c, threads, idx, start);
		else
			synthetic_events(&c, rows, nrows);
	}
	fputs_unlocked("\n]}\n", out);
	funlockfile(out);
	ret = ember_json_finish(out);
out:
	free(threads);
	free(rows);
	free(idx);
	free(start);
	free(c.open);
	free(c.text);
	free(c.text_off);
	return ret;
}
