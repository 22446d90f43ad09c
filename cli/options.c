/* `ember record` options: one struct with defaults, strict parsing, one
 * error line per mistake; and the options every command shares: the
 * outputs (record, top, convert, diff) and the target (record, top). */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "symbolizer.h"

void options_record_defaults(struct record_opts *o)
{
	memset(o, 0, sizeof *o);
	ember_record_opts_default(&o->rec);
	o->checkpoint_s = CHECKPOINT_DEFAULT_S;
}

static void record_usage(FILE *out)
{
	fputs(ember_help_record, out);
}

static const struct options_suffix extensions[] = {
	/* longest first: ".speedscope.json" before any ".json" rule */
	{ ".speedscope.json", FORMAT_SPEEDSCOPE },
	{ ".trace.json", FORMAT_CHROME },
	{ ".collapsed", FORMAT_FOLDED },
	{ ".folded", FORMAT_FOLDED },
	{ ".txt", FORMAT_FOLDED },
	{ ".svg", FORMAT_SVG },
	{ ".pstats", FORMAT_PSTATS },
	{ ".prof", FORMAT_PSTATS },
	{ ".pb.gz", FORMAT_PPROF },
	{ ".pprof", FORMAT_PPROF },
	{ ".ember", FORMAT_EMBER },
};

static const char *const format_names[FORMAT_COUNT] = {
	[FORMAT_FOLDED] = "folded", [FORMAT_SVG] = "svg", [FORMAT_PSTATS] = "pstats",
	[FORMAT_SPEEDSCOPE] = "speedscope", [FORMAT_PPROF] = "pprof", [FORMAT_CHROME] = "chrome",
	[FORMAT_EMBER] = "ember",
};

const char *format_name(enum output_format f)
{
	return f < FORMAT_COUNT ? format_names[f] : "?";
}

int options_format_of_path(const char *path, const struct options_suffix *table, size_t n)
{
	size_t len = strlen(path);

	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(table[i].suffix);
		if (len > k && strcmp(path + len - k, table[i].suffix) == 0)
			return table[i].format;
	}
	return -1;
}

int options_format_of_name(const char *name, const char *const *names, int n)
{
	for (int f = 0; f < n; f++)
		if (names[f] && strcmp(name, names[f]) == 0)
			return f;
	return -1;
}

static int format_from_path(const char *path)
{
	return options_format_of_path(path, extensions, sizeof extensions / sizeof extensions[0]);
}

static int format_from_name(const char *name)
{
	return options_format_of_name(name, format_names, FORMAT_COUNT);
}

int options_bad(const char *cmd, const char *fmt, const char *arg)
{
	fputs("ember: ", stderr);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'ember %s --help'.\n", cmd);
	return EMBER_EXIT_USAGE;
}

int options_getopt_error(const char *cmd, int c, const char *opt)
{
	return options_bad(cmd, c == ':' ? "option '%s' needs a value" : "unknown option '%s'", opt);
}

int options_output(struct output_set *set, int c, const char *arg, const char *cmd)
{
	switch (c) {
	case 'o':
		if (set->noutputs == MAX_OUTPUTS)
			return options_bad(cmd, "at most 16 outputs (-o %s)", arg);
		set->outputs[set->noutputs++].path = arg;
		return 1;
	case OPT_FORMAT:
		if (format_from_name(arg) < 0)
			return options_bad(cmd, "unknown --format '%s' (known: folded svg pstats speedscope pprof "
					   "chrome ember)", arg);
		set->format = arg;
		return 1;
	case OPT_THREADS:
		set->export.threads = true;
		return 1;
	case OPT_ICICLE:
		set->export.icicle = true;
		return 1;
	case OPT_TITLE:
		set->export.title = arg;
		return 1;
	default:
		return 0;
	}
}

int options_output_finish(struct output_set *set, const char *cmd)
{
	for (int i = 0; i < set->noutputs; i++) {
		int f = set->format ? format_from_name(set->format) : format_from_path(set->outputs[i].path);
		if (f < 0)
			return options_bad(cmd, "cannot tell the format of '%s' from its extension (.folded .svg "
					   ".prof .speedscope.json .pb.gz .trace.json .ember, or --format)",
					   set->outputs[i].path);
		set->outputs[i].format = (enum output_format)f;
	}
	return 0;
}

static int bad(const char *fmt, const char *arg)
{
	return options_bad("record", fmt, arg);
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* The kernel's limit on -F (perf_event_open refuses more); the kernel's
 * default when it cannot be read. */
#define DEFAULT_MAX_SAMPLE_RATE 100000

static long max_sample_rate(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
	long v = DEFAULT_MAX_SAMPLE_RATE;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = DEFAULT_MAX_SAMPLE_RATE;
		fclose(f);
	}
	return v;
}

/* The longest -d: over 115 days. */
#define MAX_DURATION_S 1e7

int options_target(struct ember_record_opts *rec, int c, const char *arg, const char *cmd)
{
	long v;

	switch (c) {
	case 'F':
		if (!parse_long(arg, 1, max_sample_rate(), &v)) {
			char msg[160];
			snprintf(msg, sizeof msg, "-F must be a whole number from 1 to %ld "
				 "(kernel.perf_event_max_sample_rate), not '%%s'", max_sample_rate());
			return options_bad(cmd, msg, arg);
		}
		rec->sampler.freq_hz = (uint32_t)v;
		return 1;
	case 'd': {
		char *end;
		errno = 0;
		double d = strtod(arg, &end);
		if (errno || end == arg || *end || !(d > 0) || d > MAX_DURATION_S)
			return options_bad(cmd, "-d must be a positive number of seconds, not '%s'", arg);
		rec->duration_s = d;
		return 1;
	}
	case 'p':
		if (!parse_long(arg, 1, INT32_MAX, &v))
			return options_bad(cmd, "-p must be a process id, not '%s'", arg);
		rec->pid = (pid_t)v;
		return 1;
	default:
		return 0;
	}
}

int options_target_finish(struct ember_record_opts *rec, int argc, char **argv, const char *cmd)
{
	if (optind < argc)
		rec->argv = argv + optind;
	if (rec->pid && rec->argv)
		return options_bad(cmd, "give either -p PID or a command, not both (command: %s)", rec->argv[0]);
	if (!rec->pid && !rec->argv)
		return options_bad(cmd, "%s", "nothing to profile: give a command after -- or -p PID");
	return 0;
}

enum { OPT_STACK_SIZE = 256, OPT_KERNEL, OPT_PYTHON_ONLY, OPT_NATIVE_UNFILTERED, OPT_SUBPROCESSES,
       OPT_GIL, OPT_FULL_FILENAMES, OPT_NO_PYTHON, OPT_NO_COPIER, OPT_NO_JIT_ENV, OPT_CHECKPOINT,
	       OPT_AS_ROOT, OPT_IDLE, OPT_NO_ATTRIBUTION, OPT_NO_SYMBOL_CACHE };

int options_parse_record(int argc, char **argv, struct record_opts *o, bool *help_shown)
{
	static const struct option longopts[] = {
		{ "freq", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "pid", required_argument, NULL, 'p' },
		{ "stack-size", required_argument, NULL, OPT_STACK_SIZE },
		{ "kernel", no_argument, NULL, OPT_KERNEL },
		{ "python-only", no_argument, NULL, OPT_PYTHON_ONLY },
		{ "native-unfiltered", no_argument, NULL, OPT_NATIVE_UNFILTERED },
		{ "subprocesses", no_argument, NULL, OPT_SUBPROCESSES },
		{ "gil", no_argument, NULL, OPT_GIL },
		{ "full-filenames", no_argument, NULL, OPT_FULL_FILENAMES },
		{ "no-python", no_argument, NULL, OPT_NO_PYTHON },
		{ "no-copier", no_argument, NULL, OPT_NO_COPIER },
		{ "no-bpf", no_argument, NULL, OPT_NO_COPIER },   /* accepted too: scripts may use it */
		{ "no-jit-env", no_argument, NULL, OPT_NO_JIT_ENV },
		{ "checkpoint", required_argument, NULL, OPT_CHECKPOINT },
		{ "as-root", no_argument, NULL, OPT_AS_ROOT },
		{ "idle", no_argument, NULL, OPT_IDLE },
		{ "no-attribution", no_argument, NULL, OPT_NO_ATTRIBUTION },
		{ "no-symbol-cache", no_argument, NULL, OPT_NO_SYMBOL_CACHE },
		OUTPUT_LONGOPTS,
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	long v;
	int c, handled;
	*help_shown = false;
	opterr = 0;
	optind = 1;
	/* '+': stop at the first non-option, so COMMAND's own flags are its own. */
	while ((c = getopt_long(argc, argv, "+:F:d:p:o:qh", longopts, NULL)) != -1) {
		if ((handled = options_output(&o->out, c, optarg, "record")) != 0 ||
		    (handled = options_target(&o->rec, c, optarg, "record")) != 0) {
			if (handled != 1)
				return handled;
			continue;
		}
		switch (c) {
		case OPT_STACK_SIZE:
			if (!parse_long(optarg, 64, 65528, &v) || v % 8)
				return bad("--stack-size must be a multiple of 8 from 64 to 65528, not '%s'", optarg);
			o->rec.sampler.stack_size = (uint32_t)v;
			break;
		case OPT_CHECKPOINT:
			if (!parse_long(optarg, 0, 10000000, &v))
				return bad("--checkpoint must be a whole number of seconds (0 = off), not '%s'", optarg);
			o->checkpoint_s = (double)v;
			break;
		case OPT_KERNEL:
			o->rec.sampler.kernel = true;
			break;
		case OPT_PYTHON_ONLY:
			o->rec.merge.python_only = true;
			break;
		case OPT_NATIVE_UNFILTERED:
			o->rec.merge.native_unfiltered = true;
			break;
		case OPT_SUBPROCESSES:
			o->rec.subprocesses = true;
			break;
		case OPT_GIL:
			o->rec.gil_only = true;
			break;
		case OPT_IDLE:
			o->rec.sampler.off_cpu = true;
			break;
		case OPT_FULL_FILENAMES:
			o->rec.full_filenames = true;
			break;
		case OPT_NO_PYTHON:
			o->rec.python = false;
			break;
		case OPT_NO_COPIER:
			o->rec.no_copier = true;
			break;
		case OPT_NO_JIT_ENV:
			o->rec.no_jit_env = true;
			break;
		case OPT_AS_ROOT:
			o->rec.as_root = true;
			break;
		case OPT_NO_ATTRIBUTION:
			o->rec.no_attribution = true;
			break;
		case OPT_NO_SYMBOL_CACHE:
			ember_symbolizer_set_disk_cache(false);
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			record_usage(stdout);
			*help_shown = true;
			return EMBER_EXIT_OK;
		default:
			return options_getopt_error("record", c, argv[optind - 1]);
		}
	}
	if ((handled = options_target_finish(&o->rec, argc, argv, "record")) != 0)
		return handled;
	if (o->rec.sampler.off_cpu && o->rec.gil_only)
		return bad("%s", "--idle and --gil contradict each other (a thread off CPU does not hold the GIL)");
	if (!o->rec.python && (o->rec.merge.python_only || o->rec.gil_only))
		return bad("%s", "--no-python cannot be combined with --python-only or --gil");
	if (o->rec.merge.python_only && o->rec.merge.native_unfiltered)
		return bad("%s", "--python-only and --native-unfiltered contradict each other");
	return options_output_finish(&o->out, "record");
}
