/* ember command-line front end: subcommands, options, exit codes, and the
 * glue between capture (sampler/) and the cold path (symbolizer/, profile/,
 * exporters/). */
#ifndef EMBER_CLI_H
#define EMBER_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "profile.h"
#include "sampler.h"

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

enum output_format { FORMAT_FOLDED = 0 };

struct output_spec {
	const char *path;
	enum output_format format;
	FILE *file;                   /* opened before the run, so a bad path fails first */
};

#define MAX_OUTPUTS 16

/* Everything `ember record` accepts, with its defaults (options_record_defaults). */
struct record_opts {
	struct ember_sampler_opts sampler;
	double duration_s;            /* 0 = until the target exits */
	pid_t pid;                    /* attach mode when > 0 */
	char **argv;                  /* launch mode command */
	struct output_spec outputs[MAX_OUTPUTS];
	int noutputs;
	bool threads;
	bool quiet;
};

void options_record_defaults(struct record_opts *o);
/* Parse `record` arguments (argv[0] is "record").  Returns 0, or an exit
 * code after printing one error line (EMBER_EXIT_OK after --help). */
int options_parse_record(int argc, char **argv, struct record_opts *o, bool *help_shown);
void options_record_usage(FILE *out);
/* Format from a file name's extension; -1 when unknown. */
int options_format_from_path(const char *path);

int cmd_record(int argc, char **argv);

/* ---- raw_stacks.c: capture-side aggregation of address stacks ---- */
struct raw_stacks;
struct raw_stacks *raw_stacks_new(void);
void raw_stacks_free(struct raw_stacks *rs);
/* Count one sample.  Returns 0, or -1 on OOM. */
int raw_stacks_add(struct raw_stacks *rs, const struct ember_sample *s);
uint64_t raw_stacks_samples(const struct raw_stacks *rs);

struct raw_stack_view {
	uint32_t pid, tid, flags;
	uint32_t nframes, nkernel;
	const struct ember_frame_addr *frames;   /* leaf first */
	const uint64_t *kernel_ips;              /* leaf first */
	uint64_t count;
};
/* Iterate: returns false after the last stack. *cursor starts at 0. */
bool raw_stacks_next(const struct raw_stacks *rs, size_t *cursor, struct raw_stack_view *v);

/* ---- build_profile.c: the cold path from addresses to a profile ---- */
/* Symbolize every raw stack with the sampler's modules and add it to p. */
int build_profile(const struct raw_stacks *rs, const struct ember_sampler *sampler,
		  struct ember_profile *p, double *symbolize_s);

/* ---- summary.c ---- */
struct run_summary {
	double wall_s;
	double target_user_s, target_sys_s;
	long max_rss_kib;               /* -1 when unknown */
	long vol_ctx, invol_ctx;        /* -1 when unknown */
	struct ember_sampler_stats stats;
	double profiler_cpu_s;          /* ember's own CPU during capture */
	double symbolize_s;
};
void summary_print(FILE *out, const struct run_summary *sum, const struct ember_profile *p);

#endif
