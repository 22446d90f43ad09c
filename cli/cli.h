/* ember command-line front end: subcommands, options, exit codes, the
 * summary, and the glue between the libraries (record/, profile/,
 * exporters/, diff/). */
#ifndef EMBER_CLI_H
#define EMBER_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "exporters.h"
#include "profile.h"
#include "record.h"

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
	const char *path;
	enum output_format format;
	FILE *file;                   /* opened before the run, so a bad path fails first */
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
/* One-line error for `ember CMD` with the usage hint; returns EMBER_EXIT_USAGE. */
int options_bad(const char *cmd, const char *fmt, const char *arg);
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

/* outputs.c: open every output (to fail before a long run, not after), then
 * write the profile to each.  Both return 0 or an exit code. */
int outputs_open(struct output_set *set);
int outputs_write(struct output_set *set, const struct ember_profile *p, bool quiet);
void outputs_close(struct output_set *set);

/* Everything `ember record` accepts, with its defaults (options_record_defaults). */
struct record_opts {
	struct ember_record_opts rec; /* the run */
	struct output_set out;
	bool quiet;
};

void options_record_defaults(struct record_opts *o);
/* Parse `record` arguments (argv[0] is "record").  Returns 0, or an exit
 * code after printing one error line (EMBER_EXIT_OK after --help). */
int options_parse_record(int argc, char **argv, struct record_opts *o, bool *help_shown);

int cmd_record(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/* ---- summary.c ---- */
/* The run summary; stack_size: the --stack-size the run used. */
void summary_print(FILE *out, const struct ember_record_stats *sum, uint32_t stack_size, const struct ember_profile *p);

#endif
