/* `ember top`: sample a command or a process as `record` does and show its
 * functions live, a table refreshed every interval (own and total time in
 * the interval and since the start, per profile/top.c), full screen on a
 * terminal, one plain table per interval otherwise; at the end, the whole
 * run's profile to every -o. One cleanup path puts the terminal back
 * whatever ends the run: q, a signal, the target's exit, an error. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "proc.h"
#include "symbolizer.h"
#include "term.h"

/* Signal handlers cannot take a context argument: these are the only
 * process-wide state, written by the handlers and read by the run. */
static volatile sig_atomic_t top_winch, top_tstp;
static struct term *volatile top_term;   /* the full screen while it is up, for Ctrl-Z */

static void on_winch(int sig)
{
	(void)sig;
	top_winch = 1;
}

/* Ctrl-Z: the terminal back as it was before ember stops (a shell may take
 * it as soon as the command it waits for has stopped), then stop; once
 * continued, the tick takes the full screen again. term_leave only calls
 * tcsetattr and write, which a handler may. */
static void on_tstp(int sig)
{
	int saved = errno;
	struct term *t = top_term;
	(void)sig;
	if (t)
		term_leave(t);
	raise(SIGSTOP);
	top_tstp = t != NULL;
	errno = saved;
}

/* On a terminal, Ctrl-Z (SIGTSTP) first puts the terminal back. */
static void install_signals(bool tty)
{
	cli_install_stop_signals();
	struct sigaction sw = { .sa_handler = on_winch, .sa_flags = SA_RESTART };
	sigemptyset(&sw.sa_mask);
	sigaction(SIGWINCH, &sw, NULL);
	struct sigaction st = { .sa_handler = on_tstp, .sa_flags = SA_RESTART };
	sigemptyset(&st.sa_mask);
	if (tty)
		sigaction(SIGTSTP, &st, NULL);
}

#define TICK_S 0.1            /* keys are read this often */
#define FIRST_REFRESH_S 0.5   /* the first table, at the latest */
#define THREAD_NAME_MAX 32    /* characters of a thread's name in the header */
#define MIN_RATE_SPAN_S 0.25  /* the shortest interval a rate is computed over */
#define PLAIN_ROWS 20         /* rows of a plain table by default */
#define COLS_FIXED 52         /* the numeric columns' width, before the function */
#define TERM_STOP_WAIT_MS 2000 /* after q, how long a launched command has to end before SIGKILL */

struct top_opts {
	struct ember_record_opts rec;
	struct output_set out;
	double interval_s;
	long tid;                     /* --tid, 0: every thread */
	enum ember_top_view view;
	enum ember_top_sort sort;
	long rows;                    /* --rows: 0 = as many as fit (plain: PLAIN_ROWS) */
};

/* The live view: what is shown and how. */
struct top {
	const struct top_opts *o;
	struct ember_record *r;
	struct ember_record_live *live;
	const struct ember_profile *p; /* NULL before the first refresh */
	struct ember_top *model;
	struct term term;
	bool tty, paused, quit, failed;
	enum ember_top_view view;
	enum ember_top_sort sort;
	uint32_t thread;              /* a thread's index; UINT32_MAX: all */
	bool by_tid;                  /* thread follows --tid */
	double elapsed_s;             /* of the capture, at the last tick */
	double next_s;                /* elapsed time of the next refresh */
	double last_s, span_s;        /* of the last refresh, and the interval it closed */
	double cpu_s, cpu_pct;        /* the target's CPU: total, and % over the interval */
	long rss_kib;
	double refresh_ms, refresh_ms_max; /* updating the live profile and the model */
	double table_ms;              /* computing the table shown (the last one before this one) */
	uint64_t samples_seen;        /* taken by the sampler, at the last refresh */
	double rate;                  /* samples per second over the last interval */
	unsigned refreshes;
};

static const char *const view_names[EMBER_TOP_VIEW_COUNT] = { "merged", "python", "native" };
static const char *const sort_names[EMBER_TOP_SORT_COUNT] = { "own", "total", "own-all", "total-all" };

static void top_usage(FILE *out)
{
	fputs(ember_help_top, out);
}

static int bad(const char *fmt, const char *arg)
{
	return options_bad("top", fmt, arg);
}

static bool parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return false;
	*out = v;
	return true;
}

static int parse_named(const char *arg, const char *const *names, int n, const char *what)
{
	int i = options_format_of_name(arg, names, n);
	if (i < 0) {
		char msg[128];
		snprintf(msg, sizeof msg, "unknown %s '%%s'", what);
		bad(msg, arg);
	}
	return i;
}

enum { OPT_INTERVAL = 400, OPT_TID, OPT_VIEW, OPT_SORT, OPT_ROWS, OPT_NO_PYTHON, OPT_NO_COPIER,
       OPT_NO_ATTRIBUTION, OPT_NO_SYMBOL_CACHE };

/* One option of top's own (not the outputs'): 0, or an exit code. */
static int top_option(struct top_opts *o, int c, const char *arg, const char *name)
{
	double v;
	int i;
	switch (c) {
	case OPT_INTERVAL:
		if (!parse_num(arg, 0.1, 3600, &o->interval_s))
			return bad("--interval must be a number of seconds from 0.1 to 3600, not '%s'", arg);
		return 0;
	case OPT_TID:
		if (!parse_num(arg, 1, 0x7fffffff, &v) || v != (double)(long)v)
			return bad("--tid must be a thread id, not '%s'", arg);
		o->tid = (long)v;
		return 0;
	case OPT_ROWS:
		if (!parse_num(arg, 0, 100000, &v) || v != (double)(long)v)
			return bad("--rows must be a whole number, not '%s'", arg);
		o->rows = (long)v;
		return 0;
	case OPT_VIEW:
		if ((i = parse_named(arg, view_names, EMBER_TOP_VIEW_COUNT, "--view")) < 0)
			return EMBER_EXIT_USAGE;
		o->view = (enum ember_top_view)i;
		return 0;
	case OPT_SORT:
		if ((i = parse_named(arg, sort_names, EMBER_TOP_SORT_COUNT, "--sort")) < 0)
			return EMBER_EXIT_USAGE;
		o->sort = (enum ember_top_sort)i;
		return 0;
	case OPT_NO_PYTHON:
		o->rec.python = false;
		return 0;
	case OPT_NO_COPIER:
		o->rec.no_copier = true;
		return 0;
	case OPT_NO_ATTRIBUTION:
		o->rec.no_attribution = true;
		return 0;
	case OPT_NO_SYMBOL_CACHE:
		ember_symbolizer_set_disk_cache(false);
		return 0;
	default:
		return options_getopt_error("top", c, name);
	}
}

/* Parse `top` arguments (argv[0] is "top"). 0, or an exit code after one
 * error line (EMBER_EXIT_OK after --help, *help set). */
static int parse_top(int argc, char **argv, struct top_opts *o, bool *help)
{
	static const struct option longopts[] = {
		{ "freq", required_argument, NULL, 'F' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "tid", required_argument, NULL, OPT_TID },
		{ "view", required_argument, NULL, OPT_VIEW },
		{ "sort", required_argument, NULL, OPT_SORT },
		{ "rows", required_argument, NULL, OPT_ROWS },
		{ "no-python", no_argument, NULL, OPT_NO_PYTHON },
		{ "no-copier", no_argument, NULL, OPT_NO_COPIER },
		{ "no-attribution", no_argument, NULL, OPT_NO_ATTRIBUTION },
		{ "no-symbol-cache", no_argument, NULL, OPT_NO_SYMBOL_CACHE },
		OUTPUT_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, rc;
	*help = false;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:F:p:d:o:h", longopts, NULL)) != -1) {
		if ((rc = options_output(&o->out, c, optarg, "top")) != 0 ||
		    (rc = options_target(&o->rec, c, optarg, "top")) != 0) {
			if (rc != 1)
				return rc;
			continue;
		}
		if (c == 'h') {
			top_usage(stdout);
			*help = true;
			return EMBER_EXIT_OK;
		}
		if ((rc = top_option(o, c, optarg, argv[optind - 1])) != 0)
			return rc;
	}
	if ((rc = options_target_finish(&o->rec, argc, argv, "top")) != 0)
		return rc;
	return options_output_finish(&o->out, "top");
}

/* ---- the table ---- */

static double pct(uint64_t n, uint64_t of)
{
	return of ? 100.0 * (double)n / (double)of : 0.0;
}

/* The thread shown: its index, UINT32_MAX for all, or an index no row has
 * while --tid's thread has not been sampled yet. */
static uint32_t shown_thread(struct top *t)
{
	if (!t->by_tid)
		return t->thread;
	for (uint32_t i = 0; t->p && i < ember_profile_nthreads(t->p); i++)
		if (ember_profile_thread_at(t->p, i)->tid == (uint32_t)t->o->tid)
			return i;
	return UINT32_MAX - 1;
}

static void header(struct top *t, FILE *f, uint32_t thread)
{
	const struct ember_profile *p = t->p;
	fprintf(f, "ember top: pid %d, %.0f s%s | view %s | sort %s | thread ", (int)ember_record_target(t->r),
		t->last_s, t->paused ? " | PAUSED" : "", view_names[t->view], sort_names[t->sort]);
	if (thread == UINT32_MAX)
		fputs("all", f);
	else if (thread < ember_profile_nthreads(p)) {
		const struct ember_thread *th = ember_profile_thread_at(p, thread);
		/* the target names its threads: no control characters reach the terminal */
		fprintf(f, "%" PRIu32 " ", th->tid);
		ember_report_put_label(f, th->name, THREAD_NAME_MAX);
	}
	else
		fprintf(f, "%ld (no samples yet)", t->o->tid);
	fprintf(f, "\nsamples/s %.0f | threads %" PRIu32 " | lost %" PRIu64 " | CPU %.0f%% | RSS %.1f MiB | "
		"refresh %.1f ms, table %.1f ms\n", t->rate, ember_profile_nthreads(p), ember_profile_meta(p)->lost,
		t->cpu_pct, (double)t->rss_kib / 1024.0, t->refresh_ms, t->table_ms);
}

/* The table into f: the header, the column titles and at most nrows rows
 * of at most cols characters. */
static void render(struct top *t, FILE *f, size_t nrows, int cols, bool keys)
{
	struct ember_top_table tb;
	uint32_t thread = shown_thread(t);
	uint64_t t0 = ember_now_ns();
	if (ember_top_table(t->model, t->p, t->view, thread, t->sort, &tb) != 0) {
		t->failed = true;
		return;
	}
	t->table_ms = (double)(ember_now_ns() - t0) / 1e6;
	double unit = ember_profile_interval_s(t->p);
	header(t, f, thread);
	if (keys)
		fputs("keys: q quit, space pause, 1-4 or s sort, v view, t thread\n", f);
	fputs(" OWN%  TOTAL%  OWN%ALL  TOT%ALL   OWN(s)  TOTAL(s)  FUNCTION\n", f);
	for (size_t i = 0; i < tb.nrows && i < nrows; i++) {
		const struct ember_top_row *r = &tb.rows[i];
		fprintf(f, "%5.1f  %6.1f  %7.1f  %7.1f  %7.2f  %8.2f  ", pct(r->own_now, tb.samples_now),
			pct(r->total_now, tb.samples_now), pct(r->own_all, tb.samples_all),
			pct(r->total_all, tb.samples_all), (double)r->own_all * unit, (double)r->total_all * unit);
		ember_report_put_label(f, r->label, cols > COLS_FIXED + 9 ? (size_t)(cols - COLS_FIXED - 1) : 8);
		fputc('\n', f);
	}
}

/* One frame of the full screen, written at once: each line cut short of
 * the width (the four lines above the rows by bytes: they are ASCII but
 * for a thread's name) and cleared to its end. */
static void draw(struct top *t)
{
	char *buf = NULL, *out = NULL;
	size_t len = 0, olen = 0;
	FILE *f = open_memstream(&buf, &len), *o = f ? open_memstream(&out, &olen) : NULL;
	if (!f || !o) {
		if (f)
			fclose(f);
		free(buf);
		t->failed = true;
		return;
	}
	int rows = t->term.rows, cols = t->term.cols;
	size_t want = rows > 5 ? (size_t)rows - 5 : 1;
	if (t->o->rows > 0 && (size_t)t->o->rows < want)
		want = (size_t)t->o->rows;
	render(t, f, want, cols, true);
	fclose(f);
	fputs("\033[H", o);
	int line = 0;
	for (char *s = buf, *nl; s && *s && line < rows; s = nl ? nl + 1 : NULL, line++) {
		nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		/* labels are cut by characters already; the rest is ASCII */
		fprintf(o, "%.*s\033[K%s", (int)(line < 4 && n >= (size_t)cols ? (size_t)cols - 1 : n), s,
			line + 1 < rows ? "\n" : "");
	}
	fputs("\033[J", o);
	fclose(o);
	/* A frame goes out whole: Ctrl-Z waits until it has (its handler
	 * switches screens, which must not land inside a frame). */
	sigset_t tstp, old;
	sigemptyset(&tstp);
	sigaddset(&tstp, SIGTSTP);
	sigprocmask(SIG_BLOCK, &tstp, &old);
	fwrite(out, 1, olen, stdout);
	fflush(stdout);
	sigprocmask(SIG_SETMASK, &old, NULL);
	free(buf);
	free(out);
}

static void print_plain(struct top *t)
{
	render(t, stdout, t->o->rows > 0 ? (size_t)t->o->rows : PLAIN_ROWS, 200, false);
	fputc('\n', stdout);
	fflush(stdout);
}

/* ---- the run ---- */

/* Bring the live profile and the model up to now; time what it costs. */
static void refresh(struct top *t, double elapsed_s)
{
	uint64_t t0 = ember_now_ns();
	const struct ember_profile *p = ember_record_live_update(t->live);
	if (!p || ember_top_update(t->model, p) != 0) {
		t->failed = true;
		return;
	}
	t->p = p;
	t->refresh_ms = (double)(ember_now_ns() - t0) / 1e6;
	t->refresh_ms_max = t->refresh_ms > t->refresh_ms_max ? t->refresh_ms : t->refresh_ms_max;
	t->refreshes++;
	t->span_s = elapsed_s - t->last_s;
	struct ember_proc_usage u;
	bool usage = ember_proc_usage(ember_record_target(t->r), &u);
	/* Rates over a span too short to mean anything (the last refresh, at
	 * the target's exit) keep their previous values. */
	if (t->span_s >= MIN_RATE_SPAN_S) {
		t->rate = (double)(ember_profile_meta(p)->samples - t->samples_seen) / t->span_s;
		if (usage)
			t->cpu_pct = 100.0 * (u.cpu_s - t->cpu_s) / t->span_s;
	}
	t->samples_seen = ember_profile_meta(p)->samples;
	if (usage) {
		t->cpu_s = u.cpu_s;
		t->rss_kib = u.rss_kib;
	}
	t->last_s = elapsed_s;
}

/* A key: true when the view changed. */
static bool on_key(struct top *t, int c)
{
	switch (c) {
	case 'q': case 'Q':
		t->quit = true;
		return false;
	case ' ':
		t->paused = !t->paused;
		return true;
	case '1': case '2': case '3': case '4':
		t->sort = (enum ember_top_sort)(c - '1');
		return true;
	case 's':
		t->sort = (enum ember_top_sort)((t->sort + 1) % EMBER_TOP_SORT_COUNT);
		return true;
	case 'v':
		t->view = (enum ember_top_view)((t->view + 1) % EMBER_TOP_VIEW_COUNT);
		return true;
	case 't': {
		uint32_t n = t->p ? ember_profile_nthreads(t->p) : 0, cur = shown_thread(t);
		t->by_tid = false;
		t->thread = cur == UINT32_MAX ? (n ? 0 : UINT32_MAX) : cur + 1 < n ? cur + 1 : UINT32_MAX;
		return true;
	}
	default:
		return false;
	}
}

/* The capture's progress callback, every TICK_S: keys, resizes, and a
 * refresh when one is due. */
static void on_tick(void *arg, double elapsed_s, uint64_t samples)
{
	struct top *t = arg;
	bool redraw = false;
	(void)samples;
	t->elapsed_s = elapsed_s;
	for (int c; t->tty && (c = term_key(&t->term)) >= 0;)
		redraw |= on_key(t, c);
	if (t->tty && top_tstp) {   /* continued after Ctrl-Z (fg) */
		top_tstp = 0;
		top_term = NULL;
		term_enter(&t->term);
		top_term = &t->term;
		redraw = true;
	}
	if (t->tty && top_winch) {
		top_winch = 0;
		term_size(&t->term);
		redraw = true;
	}
	if (elapsed_s >= t->next_s) {
		t->next_s = elapsed_s + t->o->interval_s;
		if (!t->paused) {
			refresh(t, elapsed_s);
			redraw = true;
			if (!t->tty && t->p && !t->failed)
				print_plain(t);
		}
	}
	if (t->tty && redraw && t->p && !t->failed)
		draw(t);
	if (t->quit || t->failed)
		cli_stop_signal = 1;
}

/* After q: a launched command is ended (SIGTERM, then SIGKILL when it
 * outlives TERM_STOP_WAIT_MS), so that finishing the run does not wait for
 * it. */
static void end_command(pid_t pid)
{
	if (pid <= 0 || kill(pid, SIGTERM) != 0)
		return;
	for (int ms = 0; ms < TERM_STOP_WAIT_MS; ms += 50) {
		if (ember_proc_gone(pid))
			return;
		usleep(50 * 1000);
	}
	kill(pid, SIGKILL);
}

/* Capture with the live view until the end; then the terminal back, the
 * last table when the target ended by itself, and every output. 0 or an
 * exit code. */
static int run_top(struct top_opts *o, struct ember_record *r)
{
	struct top t = { .o = o, .r = r, .view = o->view, .sort = o->sort, .thread = UINT32_MAX,
			 .by_tid = o->tid > 0 };
	struct ember_merge_opts live_merge = { .native_unfiltered = true };
	int rc = 0;
	if (!(t.live = ember_record_live_new(r, &live_merge)) || !(t.model = ember_top_new())) {
		fprintf(stderr, "ember: out of memory\n");
		ember_record_live_free(t.live);
		return EMBER_EXIT_INTERNAL;
	}
	/* The first table early: the first refresh also opens the target's
	 * modules for symbols, the slow part (hundreds of ms for libpython). */
	t.next_s = o->interval_s < FIRST_REFRESH_S ? o->interval_s : FIRST_REFRESH_S;
	struct ember_proc_usage u;   /* an attached target's CPU so far is not the interval's */
	if (ember_proc_usage(ember_record_target(r), &u))
		t.cpu_s = u.cpu_s;
	t.tty = term_enter(&t.term) == 0;
	if (t.tty)
		top_term = &t.term;
	if (t.tty) {
		fputs("\033[Hember top: sampling, the first table comes in a moment...\033[K\033[J", stdout);
		fflush(stdout);
	}
	ember_record_capture(r, &cli_stop_signal, on_tick, &t);
	top_term = NULL;
	term_leave(&t.term);
	cli_forward_to = 0;
	if (t.quit)
		end_command(o->rec.pid ? 0 : ember_record_target(r));
	if (t.failed) {
		fprintf(stderr, "ember: out of memory while updating the live profile\n");
		rc = EMBER_EXIT_INTERNAL;
	} else if (!t.quit && !cli_stop_signal) {
		/* The target ended (or -d passed): its last table, since the
		 * last refresh, stays on the screen. */
		refresh(&t, t.elapsed_s);
		if (!t.failed)
			print_plain(&t);
	}
	if (t.refreshes)
		fprintf(stderr, "ember: %u refreshes, each %.1f ms at most (the last %.1f ms)\n", t.refreshes,
			t.refresh_ms_max, t.refresh_ms);
	ember_top_free(t.model);
	ember_record_live_free(t.live);
	if (o->out.noutputs) {
		struct ember_profile p;
		if (ember_profile_init(&p) != 0 || ember_record_profile(r, &p) != 0) {
			fprintf(stderr, "ember: out of memory while building the profile\n");
			rc = rc ? rc : EMBER_EXIT_INTERNAL;
		}
		int wrc = outputs_write(&o->out, &p, false);
		rc = rc ? rc : wrc;
		ember_profile_free(&p);
	}
	return rc ? rc : t.quit ? -1 : 0;
}

int cmd_top(int argc, char **argv)
{
	struct top_opts o = { .interval_s = 1.0 };
	struct ember_record *r = NULL;
	bool help;
	ember_record_opts_default(&o.rec);
	int rc = parse_top(argc, argv, &o, &help);
	if (rc != 0 || help)
		return rc;
	ember_record_knobs_from_env(&o.rec.knobs);
	o.rec.progress_s = TICK_S;
	if ((rc = outputs_open(&o.out)) != 0)
		goto out;
	install_signals(isatty(STDOUT_FILENO));
	if (!(r = ember_record_new(&o.rec))) {
		fprintf(stderr, "ember: out of memory\n");
		rc = EMBER_EXIT_INTERNAL;
		goto out;
	}
	if ((rc = cli_record_start(r, o.rec.pid > 0)) != 0)
		goto out;
	struct ember_record_stats st;
	rc = run_top(&o, r);
	int status = ember_record_finish(r, &st);
	/* q: the user ended the run, whatever the command's status. */
	rc = rc < 0 ? EMBER_EXIT_OK : rc ? rc : status;
out:
	outputs_close(&o.out);
	ember_record_free(r);
	return rc;
}
