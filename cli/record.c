/* `ember record`: parse the options, run a record (record/) until the
 * target ends (or -d, or a signal), then write every output and print the
 * summary. One cleanup path; outputs are written on every way out once
 * capture began. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int sampler_exit_code(int err)
{
	switch (err) {
	case EMBER_SERR_NO_PROCESS: return EMBER_EXIT_UNAVAILABLE;
	case EMBER_SERR_PERMISSION: return EMBER_EXIT_NOPERM;
	case EMBER_SERR_INVALID: return EMBER_EXIT_USAGE;
	default: return EMBER_EXIT_OSERR;
	}
}

int cli_record_start(struct ember_record *r, bool attach)
{
	int err = ember_record_start(r);
	if (err < 0) {
		fprintf(stderr, "ember: %s\n", ember_record_error(r));
		struct ember_record_stats st;
		/* A command not found or not executable: its child's 127 or 126. */
		return err == -EMBER_SERR_NOT_FOUND ? ember_record_finish(r, &st) : sampler_exit_code(-err);
	}
	if (!attach)
		cli_forward_target(ember_record_target(r));
	return 0;
}

/* Once a second during the capture: the live status line, and checkpoints. */
struct tick {
	bool tty;
	struct ember_record *r;
	const struct output_set *out;
	struct checkpoint ck;
};

static void on_tick(void *arg, double elapsed_s, uint64_t samples)
{
	struct tick *t = arg;
	if (t->tty)
		fprintf(stderr, "\rember: %.0f s, %llu samples ", elapsed_s, (unsigned long long)samples);
	checkpoint_tick(&t->ck, t->r, t->out, elapsed_s);
}

/* The default outputs' names: PROG-PID.svg and PROG-PID.ember, with "PID"
 * itself while a launched command's pid is not known yet (the name an
 * error before the start shows). */
static void default_names(const struct record_opts *o, pid_t target, char names[2][256])
{
	const char *prog = o->rec.argv ? o->rec.argv[0] : "pid";
	const char *base = strrchr(prog, '/');
	static const char *const ext[2] = { "svg", "ember" };
	for (int i = 0; i < 2; i++) {
		if (target > 0)
			snprintf(names[i], sizeof names[i], "%s-%d.%s", base ? base + 1 : prog, target, ext[i]);
		else
			snprintf(names[i], sizeof names[i], "%s-PID.%s", base ? base + 1 : prog, ext[i]);
	}
}

/* Without -o: a flame graph to look at, and everything else kept
 * losslessly for `ember convert` / `report` / `diff`. Opened before the
 * target starts, like any -o (an unwritable directory fails before the
 * command runs), under provisional names when the pid is not known yet. */
static void default_outputs(struct record_opts *o, char names[2][256])
{
	default_names(o, o->rec.pid, names);
	for (int i = 0; i < 2; i++) {
		o->out.outputs[i].path = names[i];
		o->out.outputs[i].format = i ? FORMAT_EMBER : FORMAT_SVG;
	}
	o->out.noutputs = 2;
}

/* Capture until the end, with the live status and checkpoints, then
 * resolve the profile. 0 or an exit code. */
static int capture(struct record_opts *o, struct ember_record *r, struct ember_profile *profile)
{
	struct tick t = { .tty = !o->quiet && isatty(STDERR_FILENO), .r = r, .out = &o->out };
	int rc = 0;
	checkpoint_init(&t.ck, o->checkpoint_s);
	bool ticks = t.tty || o->checkpoint_s > 0;
	/* Launch mode: a stop signal is passed on to the command (cli_forward_target)
	 * and sampling goes on until the command ends, however it handles it. */
	ember_record_capture(r, o->rec.pid ? &cli_stop_signal : NULL, ticks ? on_tick : NULL, &t);
	checkpoint_end(&t.ck);
	if (t.tty)
		fputs("\r\033[K", stderr);
	cli_forward_to = 0;
	if (ember_record_profile(r, profile) != 0) {
		fprintf(stderr, "ember: out of memory while building the profile\n");
		rc = EMBER_EXIT_INTERNAL;
	}
	int wrc = outputs_write(&o->out, profile, o->quiet);
	if (!o->quiet)
		checkpoint_report(&t.ck, stderr);
	return rc ? rc : wrc;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	struct ember_record *r = NULL;
	struct ember_profile profile;
	bool help, profile_ready = false, defaults;
	char default_names_buf[2][256], final_names[2][256];
	options_record_defaults(&o);
	int rc = options_parse_record(argc, argv, &o, &help);
	if (rc != 0 || help)
		return rc;
	ember_record_knobs_from_env(&o.rec.knobs);
	cli_install_stop_signals();   /* from here on, a stop signal is kept until the command can get it */
	if ((defaults = !o.out.noutputs))
		default_outputs(&o, default_names_buf);
	if ((rc = outputs_open(&o.out)) != 0)
		goto out;
	if (!(r = ember_record_new(&o.rec)) || ember_profile_init(&profile) != 0) {
		fprintf(stderr, "ember: out of memory\n");
		rc = EMBER_EXIT_INTERNAL;
		goto out;
	}
	profile_ready = true;
	if ((rc = cli_record_start(r, o.rec.pid > 0)) != 0)
		goto out;
	if (defaults && !o.rec.pid) {
		default_names(&o, ember_record_target(r), final_names);
		for (int i = 0; i < 2; i++)
			output_set_path(&o.out.outputs[i], final_names[i]);
	}
	if (ember_record_kernel_excluded(r) && !o.quiet)
		fprintf(stderr, "ember: kernel.perf_event_paranoid forbids kernel sampling for this user: "
			"user space only, kernel frames and time in system calls are excluded "
			"(run as root or with CAP_PERFMON to include them)\n");
	if (ember_record_kernel_unnamed(r) && !o.quiet)
		fprintf(stderr, "ember: --kernel: /proc/kallsyms hides the kernel's addresses from ember: kernel "
			"frames stay [kernel+0xADDR] (naming them needs root or CAP_SYSLOG, with "
			"kernel.kptr_restrict <= 1)\n");
	if (ember_record_off_cpu_error(r))   /* what was asked and is not done: said even with -q */
		fprintf(stderr, "ember: --idle: %s; recording on-CPU samples only\n", ember_record_off_cpu_error(r));
	rc = capture(&o, r, &profile);
	struct ember_record_stats st;
	int status = ember_record_finish(r, &st);
	if (rc == 0)
		rc = status;
	if (!o.quiet) {
		ember_record_report(r, stderr);
		summary_print(stderr, &st, o.rec.sampler.stack_size, &profile);
	}
out:
	outputs_close(&o.out);
	if (profile_ready)
		ember_profile_free(&profile);
	ember_record_free(r);
	return rc;
}
