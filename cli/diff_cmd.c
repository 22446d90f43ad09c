/* `ember diff BASE NEW`: compare two profiles (.ember files or folded
 * stacks from any tool).  The comparison is diff/ (diff.h); the graphs and
 * the two-column folded and pprof files are exporters/; this file is the
 * command line: options, loading, warnings, the terminal table, outputs. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diff.h"

enum diff_out { D_SVG, D_CSV, D_MD, D_TXT, D_FOLDED, D_PPROF, D_COUNT };

static const char *const dout_names[D_COUNT] = {
	[D_SVG] = "svg", [D_CSV] = "csv", [D_MD] = "md", [D_TXT] = "txt", [D_FOLDED] = "folded", [D_PPROF] = "pprof",
};

/* In diff, .txt is the delta table (in record/convert it is folded stacks):
 * a diff's text is its table, and two-column folded has .folded. */
static const struct options_suffix dout_ext[] = {
	{ ".svg", D_SVG }, { ".csv", D_CSV }, { ".md", D_MD }, { ".markdown", D_MD }, { ".txt", D_TXT },
	{ ".folded", D_FOLDED }, { ".collapsed", D_FOLDED }, { ".pb.gz", D_PPROF }, { ".pprof", D_PPROF },
};

static const char *const dout_what[D_COUNT] = {
	[D_SVG] = "differential flame graph", [D_CSV] = "delta table, CSV", [D_MD] = "delta table, Markdown",
	[D_TXT] = "delta table, text", [D_FOLDED] = "two-column folded", [D_PPROF] = "pprof, BASE negated",
};

static int dout_from_path(const char *path)
{
	return options_format_of_path(path, dout_ext, sizeof dout_ext / sizeof dout_ext[0]);
}

static int dout_from_name(const char *name)
{
	return options_format_of_name(name, dout_names, D_COUNT);
}

static void diff_usage(FILE *out)
{
	fputs(ember_help_diff, out);
}

struct diff_cli {
	struct output_set out;        /* -o, --icicle, --title */
	enum diff_out fmt[MAX_OUTPUTS];
	const char *format;
	struct ember_diff_opts dopts;
	struct ember_diff_renames *renames;
	enum ember_diff_sort sort;
	long top;
	int norm_given;               /* -1 not given, else the mode */
	bool reverse, quiet;
};

enum {
	OPT_NORMALIZE = 400, OPT_ITER_BASE, OPT_ITER_NEW, OPT_BY, OPT_RENAME, OPT_SORT, OPT_TOP, OPT_REVERSE,
};

static bool parse_positive(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || !isfinite(v))
		return false;
	*out = v;
	return true;
}

/* One option of `diff`: 0, or an exit code after printing the error. */
static int diff_option(struct diff_cli *cli, int c, const char *arg, const char *raw)
{
	char *end, err[512];

	switch (c) {
	case OPT_FORMAT:
		if (dout_from_name(arg) < 0)
			return options_bad("diff", "unknown --format '%s' (known: svg csv md txt folded pprof)", arg);
		cli->format = arg;
		return 0;
	case OPT_THREADS:
		return options_bad("diff", "%s: threads of two runs do not correspond; diff compares whole runs", raw);
	case OPT_NORMALIZE:
		if (strcmp(arg, "share") && strcmp(arg, "absolute"))
			return options_bad("diff", "--normalize must be share or absolute, not '%s'", arg);
		cli->norm_given = strcmp(arg, "share") ? EMBER_DIFF_ABSOLUTE : EMBER_DIFF_SHARE;
		return 0;
	case OPT_ITER_BASE:
	case OPT_ITER_NEW:
		if (!parse_positive(arg, &cli->dopts.iterations[c == OPT_ITER_NEW]))
			return options_bad("diff", "--iterations-base/--iterations-new must be a positive number, not '%s'",
					   arg);
		return 0;
	case OPT_BY:
		if (!strcmp(arg, "function"))
			cli->dopts.by = EMBER_REPORT_BY_FUNCTION;
		else if (!strcmp(arg, "line"))
			cli->dopts.by = EMBER_REPORT_BY_LINE;
		else if (!strcmp(arg, "module"))
			cli->dopts.by = EMBER_REPORT_BY_MODULE;
		else
			return options_bad("diff", "--by must be function, line or module, not '%s'", arg);
		return 0;
	case OPT_RENAME:
		if (ember_diff_renames_add(cli->renames, arg, err, sizeof(err)) < 0)
			return options_bad("diff", "%s", err);
		return 0;
	case OPT_SORT:
		if (!strcmp(arg, "inclusive"))
			cli->sort = EMBER_DIFF_SORT_INCLUSIVE;
		else if (!strcmp(arg, "self"))
			cli->sort = EMBER_DIFF_SORT_SELF;
		else if (!strcmp(arg, "ratio"))
			cli->sort = EMBER_DIFF_SORT_RATIO;
		else if (!strcmp(arg, "name"))
			cli->sort = EMBER_DIFF_SORT_NAME;
		else
			return options_bad("diff", "--sort must be inclusive, self, ratio or name, not '%s'", arg);
		return 0;
	case OPT_TOP:
		cli->top = strtol(arg, &end, 10);
		if (end == arg || *end || cli->top < 0 || cli->top > 1000000)
			return options_bad("diff", "--top must be a whole number >= 0, not '%s'", arg);
		return 0;
	case OPT_REVERSE:
		cli->reverse = true;
		return 0;
	case 'q':
		cli->quiet = true;
		return 0;
	default:
		return options_getopt_error("diff", c, raw);
	}
}

/* Checks between options, and every output's format. */
static int diff_finish(struct diff_cli *cli)
{
	bool iters = cli->dopts.iterations[0] > 0 || cli->dopts.iterations[1] > 0;

	if (iters && !(cli->dopts.iterations[0] > 0 && cli->dopts.iterations[1] > 0))
		return options_bad("diff", "%s", "give both --iterations-base and --iterations-new");
	if (iters && cli->norm_given == EMBER_DIFF_SHARE)
		return options_bad("diff", "%s", "--iterations-* compare seconds per iteration: not with --normalize share");
	cli->dopts.norm = iters ? EMBER_DIFF_ABSOLUTE : cli->norm_given < 0 ? EMBER_DIFF_SHARE
									      : (enum ember_diff_norm)cli->norm_given;
	for (int i = 0; i < cli->out.noutputs; i++) {
		const char *path = cli->out.outputs[i].path;
		int f = cli->format ? dout_from_name(cli->format) : dout_from_path(path);
		if (f < 0)
			return options_bad("diff", "cannot tell the format of '%s' from its extension (diff writes .svg "
					   ".csv .md .txt .folded .pb.gz, or --format)", path);
		cli->fmt[i] = (enum diff_out)f;
	}
	return 0;
}

/* Load one run ("-": standard input): a profile with samples, and the
 * warnings that change what is compared. */
static int load_run(const char *in, int column, struct ember_profile *p, const char *role)
{
	struct ember_load_warnings w;
	int rc = cli_load_profile(in, column, p, role, &w);

	if (rc != 0)
		return rc;
	if (!ember_profile_total(p)) {
		fprintf(stderr, "ember: %s (%s): no samples to compare\n", ember_profile_input_name(in), role);
		return EMBER_EXIT_DATAERR;
	}
	cli_load_warnings(in, column, &w, false);
	return 0;
}

static void print_warnings(const struct ember_diff *d, bool absolute)
{
	static const char *const run[2] = { "BASE", "NEW" };

	if (d->rates_differ)
		fprintf(stderr, "ember: warning: BASE and NEW were sampled at different rates (one sample = %.3g ms and "
			"%.3g ms): compared by time, never by raw sample counts\n",
			d->interval_s[0] * 1e3, d->interval_s[1] * 1e3);
	if (d->wall_clock[0] != d->wall_clock[1])
		fprintf(stderr, "ember: warning: %s is a wall-clock profile (record --idle: time off CPU included) and %s "
			"is not: their times do not measure the same thing\n", run[d->wall_clock[0] ? 0 : 1],
			run[d->wall_clock[0] ? 1 : 0]);
	for (int k = 0; k < 2 && absolute; k++)
		if (!d->rate_known[k])
			fprintf(stderr, "ember: warning: %s (%s) does not say its sampling rate (folded input): "
				"10 ms per sample assumed for --normalize absolute\n", run[k], d->name[k]);
	if (d->kinds_differ)
		fprintf(stderr, "ember: warning: %s has Python frames (%.0f%% of its samples) and %s has none: "
			"few functions can match (%zu of %zu); outputs written anyway\n",
			d->python_share[0] > 0 ? "BASE" : "NEW", 100 * fmax(d->python_share[0], d->python_share[1]),
			d->python_share[0] > 0 ? "NEW" : "BASE", d->matched, d->nrows);
	else if (d->few_matched)
		fprintf(stderr, "ember: warning: only %zu of %zu keys are in both runs: are these runs of the same "
			"program? (see --by and --rename)\n", d->matched, d->nrows);
}

/* One run's pool threads under their dispatcher, the other's not: the
 * Python lines that dispatch work to pools do not compare. */
static void print_attribution(const uint64_t a[2])
{
	if (!a[0] == !a[1])
		return;
	fprintf(stderr, "ember: warning: %s has %llu samples of pool threads under the stacks that dispatched their "
		"work and %s none (recorded with --no-attribution, by an older ember, or without pools): the totals of "
		"the lines that dispatch to pools do not compare\n", a[0] ? "BASE" : "NEW",
		(unsigned long long)(a[0] ? a[0] : a[1]), a[0] ? "NEW" : "BASE");
}

static int write_one(FILE *f, enum diff_out fmt, const struct ember_diff *d, const struct ember_diff_export_opts *eo)
{
	switch (fmt) {
	case D_SVG:
		return ember_write_svg_diff(f, &d->run[0], &d->run[1], eo);
	case D_FOLDED:
		return ember_write_folded_diff(f, &d->run[0], &d->run[1], eo);
	case D_PPROF:
		return ember_write_pprof_diff(f, &d->run[0], &d->run[1], eo);
	case D_CSV:
		return ember_diff_write_table(f, d, EMBER_DIFF_TABLE_CSV, 0);
	case D_MD:
		return ember_diff_write_table(f, d, EMBER_DIFF_TABLE_MD, 0);
	default:
		return ember_diff_write_table(f, d, EMBER_DIFF_TABLE_TXT, 0);
	}
}

static int write_outputs(struct diff_cli *cli, const struct ember_diff *d)
{
	char norm[512], rule[128];
	int rc = 0;

	ember_diff_normalization(d, norm, sizeof(norm));
	ember_diff_noise_rule(d, rule, sizeof(rule));
	struct ember_diff_export_opts eo = {
		.base_name = d->name[0], .new_name = d->name[1], .normalization = norm,
		.scale = { d->scale[0], d->scale[1] }, .share = d->norm == EMBER_DIFF_SHARE,
		.per = d->per_iteration ? "iteration" : NULL, .within_noise = ember_diff_within_noise, .noise_ctx = d,
		.reverse = cli->reverse, .icicle = cli->out.export.icicle, .title = cli->out.export.title,
	};
	for (int i = 0; i < cli->out.noutputs; i++) {
		struct output_spec *o = &cli->out.outputs[i];
		errno = 0;
		if (output_begin(o) != 0) {
			rc = EMBER_EXIT_CANTCREAT;
			continue;
		}
		int w = write_one(o->file, cli->fmt[i], d, &eo), e = errno;
		if (output_finish(o, w, e, NULL) != 0) {
			rc = EMBER_EXIT_CANTCREAT;
		} else if (!cli->quiet && (cli->fmt[i] == D_FOLDED || cli->fmt[i] == D_PPROF)) {
			/* counts cannot say how they were scaled: say it here */
			fprintf(stderr, "ember: wrote %s (%s; BASE counts x %.6g onto NEW's scale: %s)\n", o->path,
				dout_what[cli->fmt[i]], d->scale[1] > 0 ? d->scale[0] / d->scale[1] : 1, norm);
		} else if (!cli->quiet && cli->fmt[i] == D_CSV) {
			/* the CSV is data only: what its numbers are goes here */
			fprintf(stderr, "ember: wrote %s (%s; %s; noise: %s)\n", o->path, dout_what[D_CSV], norm, rule);
		} else if (!cli->quiet) {
			fprintf(stderr, "ember: wrote %s (%s)\n", o->path, dout_what[cli->fmt[i]]);
		}
	}
	return rc;
}

static int run_diff(struct diff_cli *cli, const char *base_path, const char *new_path)
{
	struct ember_profile in[2];
	uint64_t attributed[2] = { 0, 0 };   /* each run's samples of pool threads under their dispatcher */
	struct ember_diff d;
	int rc;

	if (ember_profile_init(&in[0]) != 0)
		return EMBER_EXIT_INTERNAL;
	if (ember_profile_init(&in[1]) != 0) {
		ember_profile_free(&in[0]);
		return EMBER_EXIT_INTERNAL;
	}
	/* a two-column folded file: BASE is its first column, NEW its last */
	if ((rc = load_run(base_path, 0, &in[0], "BASE")) == 0 && (rc = load_run(new_path, 1, &in[1], "NEW")) == 0) {
		cli->dopts.renames = cli->renames;
		attributed[0] = ember_profile_attributed_total(&in[0]);
		attributed[1] = ember_profile_attributed_total(&in[1]);
		if (ember_diff_build(&d, &in[0], &in[1], &cli->dopts) < 0) {
			fprintf(stderr, "ember: out of memory comparing the profiles\n");
			rc = EMBER_EXIT_INTERNAL;
		}
	}
	ember_profile_free(&in[0]);
	ember_profile_free(&in[1]);
	if (rc)
		return rc;
	d.name[0] = ember_profile_input_name(base_path);
	d.name[1] = ember_profile_input_name(new_path);
	ember_diff_sort(&d, cli->sort);
	print_warnings(&d, cli->dopts.norm == EMBER_DIFF_ABSOLUTE);
	print_attribution(attributed);
	if ((rc = outputs_open(&cli->out)) == 0) {
		if (!cli->quiet && ember_diff_write_table(stdout, &d, EMBER_DIFF_TABLE_TERMINAL, (size_t)cli->top) < 0)
			rc = EMBER_EXIT_CANTCREAT;
		int wrc = write_outputs(cli, &d);
		rc = rc ? rc : wrc;
	}
	outputs_close(&cli->out);
	ember_diff_free(&d);
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option longopts[] = {
		OUTPUT_LONGOPTS,
		{ "normalize", required_argument, NULL, OPT_NORMALIZE },
		{ "normalise", required_argument, NULL, OPT_NORMALIZE },
		{ "iterations-base", required_argument, NULL, OPT_ITER_BASE },
		{ "iterations-new", required_argument, NULL, OPT_ITER_NEW },
		{ "by", required_argument, NULL, OPT_BY },
		{ "rename", required_argument, NULL, OPT_RENAME },
		{ "sort", required_argument, NULL, OPT_SORT },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "reverse-view", no_argument, NULL, OPT_REVERSE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct diff_cli cli = { .top = 20, .norm_given = -1 };
	int c, rc = 0;

	if (!(cli.renames = ember_diff_renames_new()))
		return EMBER_EXIT_INTERNAL;
	opterr = 0;
	optind = 1;
	while (rc == 0 && (c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
		const char *raw = argv[optind - 1];
		if (c == 'h') {
			diff_usage(stdout);
			ember_diff_renames_free(cli.renames);
			return 0;
		}
		if (c == ':') {
			rc = options_getopt_error("diff", c, raw);
		} else if (c != OPT_FORMAT && c != OPT_THREADS) {
			int handled = options_output(&cli.out, c, optarg, "diff");
			if (handled > 1)
				rc = handled;
			else if (handled == 0)
				rc = diff_option(&cli, c, optarg, raw);
		} else {
			rc = diff_option(&cli, c, optarg, raw);
		}
	}
	if (rc == 0 && optind != argc - 2)
		rc = options_bad("diff", "%s", optind >= argc ? "give two profiles: BASE NEW"
							 : optind == argc - 1 ? "give two profiles: BASE NEW (only one given)"
									      : "give exactly two profiles: BASE NEW");
	/* Standard input can be read once: one run at most comes from it. */
	if (rc == 0 && !strcmp(argv[optind], EMBER_STDIN_PATH) && !strcmp(argv[optind + 1], EMBER_STDIN_PATH))
		rc = options_bad("diff", "%s", "BASE and NEW cannot both be standard input ('-'): it can be read once");
	if (rc == 0)
		rc = diff_finish(&cli);
	if (rc == 0)
		rc = run_diff(&cli, argv[optind], argv[optind + 1]);
	ember_diff_renames_free(cli.renames);
	return rc;
}
