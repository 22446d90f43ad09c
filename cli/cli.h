/* ember command-line front end: subcommands, options, exit codes, the
 * summary, and the glue between the libraries (record/, profile/,
 * exporters/, diff/). */
#ifndef EMBER_CLI_H
#define EMBER_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "exporters.h"
#include "profile.h"
#include "record.h"
#include "report.h"

/* ember's own exit codes (sysexits.h values, so they rarely collide with a
 * launched command's status, which `record` passes through). */
enum ember_exit {
	EMBER_EXIT_OK = 0,
	EMBER_EXIT_USAGE = 64,        /* bad option or value */
	EMBER_EXIT_DATAERR = 65,      /* input file is malformed */
	EMBER_EXIT_NOINPUT = 66,      /* input file missing or unreadable */
	EMBER_EXIT_UNAVAILABLE = 69,  /* no such process, or it exited during attach */
	EMBER_EXIT_INTERNAL = 70,     /* a bug or out of memory */
	EMBER_EXIT_OSERR = 71,        /* perf_event_open, mmap, fork failed otherwise */
	EMBER_EXIT_CANTCREAT = 73,    /* an output file could not be written */
	EMBER_EXIT_NOPERM = 77,       /* permission denied */
	EMBER_EXIT_NOEXEC = 126,      /* command found but not executable */
	EMBER_EXIT_NOTFOUND = 127,    /* command not found */
};

enum output_format {
	FORMAT_FOLDED = 0, FORMAT_SVG, FORMAT_PSTATS, FORMAT_SPEEDSCOPE, FORMAT_PPROF,
	FORMAT_CHROME, FORMAT_EMBER, FORMAT_COUNT
};

struct output_spec {
	const char *path;             /* as the user named it */
	enum output_format format;
	bool ready;                   /* checked writable (before the run, so a bad path fails first) */
	bool in_place;                /* a device, FIFO or one of ember's descriptors: written directly */
	FILE *file;                   /* in place: open from the check on; else the temporary file */
	char *target;                 /* else: what the finished file replaces (path, symlinks resolved) */
	char *tmp;                    /* ... and the temporary file beside it, while being written */
};

#define MAX_OUTPUTS 16

/* The outputs of record/convert/diff and how they look. */
struct output_set {
	struct output_spec outputs[MAX_OUTPUTS];
	int noutputs;
	const char *format;           /* --format: applies to every -o */
	struct ember_export_opts export;
};

/* Shared output options: -o, --format, --threads, --icicle, --title.
 * Returns 1 when c was one of them (0 = not ours, or an exit code < 0 ... see
 * options.c), after validating it. */
enum { OPT_FORMAT = 300, OPT_THREADS, OPT_ICICLE, OPT_TITLE };
#define OUTPUT_LONGOPTS \
	{ "output", required_argument, NULL, 'o' }, \
	{ "format", required_argument, NULL, OPT_FORMAT }, \
	{ "threads", no_argument, NULL, OPT_THREADS }, \
	{ "icicle", no_argument, NULL, OPT_ICICLE }, \
	{ "title", required_argument, NULL, OPT_TITLE }
/* Handle option c of the shared set: 1 handled, 0 not an output option,
 * or an exit code (> 1) after printing the error. */
int options_output(struct output_set *set, int c, const char *arg, const char *cmd);
/* Resolve every output's format (from --format or the extension).  0 or an
 * exit code after printing the error. */
int options_output_finish(struct output_set *set, const char *cmd);
/* The target options of record and top: -F (samples per second, 1 to
 * kernel.perf_event_max_sample_rate), -p (a process id), -d (seconds, > 0).
 * 1 when c was one of them (rec set from arg), 0 when it is not, or an exit
 * code after one error line naming CMD. */
int options_target(struct ember_record_opts *rec, int c, const char *arg, const char *cmd);
/* After getopt: the command (argv[optind..]) into rec; exactly one of a
 * command and -p.  0, or an exit code after one error line. */
int options_target_finish(struct ember_record_opts *rec, int argc, char **argv, const char *cmd);
/* One-line error for `ember CMD` with the usage hint; returns EMBER_EXIT_USAGE. */
int options_bad(const char *cmd, const char *fmt, const char *arg);
/* The same for what getopt returned c for, option opt: ':' a missing value,
 * anything else an unknown option. */
int options_getopt_error(const char *cmd, int c, const char *opt);
/* A file name suffix and the output format it selects (an enum's value). */
struct options_suffix {
	const char *suffix;
	int format;
};
/* The format of the first entry of TABLE whose suffix ends PATH (and is not
 * all of it), or -1; list longer suffixes before shorter ones they end in. */
int options_format_of_path(const char *path, const struct options_suffix *table, size_t n);
/* The index of NAME in NAMES[0..N) (NULL entries never match), or -1. */
int options_format_of_name(const char *name, const char *const *names, int n);
const char *format_name(enum output_format f);

/* The text `ember CMD --help` prints, one per command, made from
 * cli/help/ember-CMD.txt (as the man pages are; cmake/help.cmake). */
extern const char ember_help_ember[], ember_help_record[], ember_help_convert[], ember_help_report[],
	ember_help_diff[], ember_help_top[], ember_help_dump[];

/* outputs.c: check every output (to fail before a long run, not after),
 * then write the profile to each. A regular file is replaced whole, by
 * renaming a complete temporary file NAME.ember-tmp.XXXXXX over it; a
 * device, FIFO or ember's own stdout is opened at the check and written in
 * place. */
/* 0, or EMBER_EXIT_CANTCREAT after one error line (nothing left open). */
int outputs_open(struct output_set *set);
/* Before writing a checked output: o->file ready to write (the temporary
 * file created). 0, or EMBER_EXIT_CANTCREAT after one error line. */
int output_begin(struct output_spec *o);
/* Write p to every open output and close it. 0 or EMBER_EXIT_CANTCREAT. */
int outputs_write(struct output_set *set, const struct ember_profile *p, bool quiet);
/* Close what is still open, removing unfinished temporary files. */
void outputs_close(struct output_set *set);
/* Close the streams only: another process (a checkpoint) finishes the files;
 * outputs_close then removes what it left. */
void outputs_release(struct output_set *set);
/* Name the finished file PATH (checked under a provisional name in the
 * same directory; kept when out of memory); PATH must outlive the output. */
void output_set_path(struct output_spec *o, const char *path);
/* Finish output o after its writer returned w (errno e; err: its message,
 * or NULL): flush, sync and rename into place; on failure remove the
 * temporary file and print one line. 0 or EMBER_EXIT_CANTCREAT. */
int output_finish(struct output_spec *o, int w, int e, const char *err);
/* A checkpoint's outputs: new temporary files for every output of set that
 * is not written in place. The number opened, or -1 (errno set). */
int outputs_checkpoint_open(const struct output_set *set, struct output_set *ck);

/* Everything `ember record` accepts, with its defaults (options_record_defaults). */
struct record_opts {
	struct ember_record_opts rec; /* the run */
	struct output_set out;
	double checkpoint_s;          /* --checkpoint: the profile so far every so often, 0 = never */
	bool quiet;
};
#define CHECKPOINT_DEFAULT_S 60

/* checkpoint.c: the profile so far, written to the outputs during a record
 * run by a forked copy of ember (the sampling loop pauses only to fork). */
struct checkpoint {
	double period_s;              /* 0: none */
	double next_s;                /* the capture's elapsed time when the next is due */
	pid_t child;                  /* the copy writing one, 0 when none is */
	struct output_set files;      /* its temporary files */
	unsigned written, failed, skipped;   /* skipped: due while the previous one was being written */
	double cpu_ms_last, cpu_ms_max;   /* the copy's CPU for a checkpoint */
	double pause_ms_max;          /* the longest pause of the sampling loop to start one */
};
void checkpoint_init(struct checkpoint *c, double period_s);
/* From the capture's progress callback: reap a finished checkpoint, start
 * the next when it is due. */
void checkpoint_tick(struct checkpoint *c, struct ember_record *r, const struct output_set *out, double elapsed_s);
/* The capture ended: stop a checkpoint still being written (the final
 * write supersedes it) and remove its temporary files. */
void checkpoint_end(struct checkpoint *c);
/* One summary line on what checkpoints cost, when any was due. */
void checkpoint_report(const struct checkpoint *c, FILE *out);

void options_record_defaults(struct record_opts *o);
/* Parse `record` arguments (argv[0] is "record").  Returns 0, or an exit
 * code after printing one error line (EMBER_EXIT_OK after --help). */
int options_parse_record(int argc, char **argv, struct record_opts *o, bool *help_shown);

/* Stopping record and top by signal: SIGINT, SIGTERM and SIGHUP set
 * cli_stop_signal (the run's stop flag); one sent to ember alone is also
 * forwarded to cli_forward_to when it is > 0 (a launched command). */
extern volatile sig_atomic_t cli_stop_signal;
extern volatile pid_t cli_forward_to;
void cli_forward_target(pid_t pid);
void cli_install_stop_signals(void);
/* Start run r (record and top): 0, or, after one error line, the exit code
 * (a command not found or not executable: its child's 127 or 126).  A
 * launched command (attach false) is then where stop signals are forwarded. */
int cli_record_start(struct ember_record *r, bool attach);

/* inputs.c: load the profile at path ("-": standard input; two-column
 * folded lines give it column 0 or 1) into p (empty), with what tolerant
 * reading accepted in *w.  0, or, after one error line (naming role when
 * not NULL: "BASE", "NEW"), EMBER_EXIT_NOINPUT, EMBER_EXIT_DATAERR or (out of memory)
 * EMBER_EXIT_INTERNAL. */
int cli_load_profile(const char *path, int column, struct ember_profile *p, const char *role,
		     struct ember_load_warnings *w);
/* One line on stderr for each accommodation in *w of the input at path read
 * with column: all of them, or without all only those that change counts
 * or frame names (skipped lines, fractional counts, the column of two-column
 * lines, NUL bytes; not CR LF line ends or names that are not UTF-8). */
void cli_load_warnings(const char *path, int column, const struct ember_load_warnings *w, bool all);

int cmd_record(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_dump(int argc, char **argv);   /* dump_cmd.c */
int cmd_top(int argc, char **argv);   /* top_cmd.c */

/* ---- summary.c ---- */
/* The run summary; stack_size: the --stack-size the run used. */
void summary_print(FILE *out, const struct ember_record_stats *sum, uint32_t stack_size, const struct ember_profile *p);
/* The lines on thread pools (docs/pools.md): how many of their threads'
 * samples went under their dispatcher's stack and how many not (why: from
 * the run, NULL for a profile read from a file), and each pool's share of
 * waiting. */
void summary_pools(FILE *out, const struct ember_profile *p, const struct ember_record_pools *why);

#endif
