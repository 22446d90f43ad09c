/* `ember record` options: one struct with defaults, strict parsing, one
 * error line per mistake. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void options_record_defaults(struct record_opts *o)
{
	memset(o, 0, sizeof *o);
	o->sampler = (struct ember_sampler_opts)EMBER_SAMPLER_OPTS_DEFAULT;
}

void options_record_usage(FILE *out)
{
	fputs("usage: ember record [options] -- COMMAND [ARGS...]\n"
	      "       ember record [options] -p PID\n"
	      "\n"
	      "Sample every thread of COMMAND (launched) or of process PID (attached; detached\n"
	      "again, unharmed, at the end) and write the profile.\n"
	      "\n"
	      "Options:\n"
	      "  -F, --freq HZ          samples per second per thread (default 99)\n"
	      "  -d, --duration SEC     stop after SEC seconds (default: until the target exits)\n"
	      "  -p, --pid PID          attach to a running process and its future threads\n"
	      "  -o, --output FILE      write FILE, format from its extension; repeatable\n"
	      "                         .folded .txt  folded stacks (flamegraph.pl, speedscope, inferno)\n"
	      "      --format FMT       force the format of every -o: folded\n"
	      "      --stack-size BYTES user stack copied per sample: multiple of 8,\n"
	      "                         64..65528 (default 32768); raise it when stacks are [truncated]\n"
	      "      --kernel           add kernel frames (root, CAP_PERFMON or perf_event_paranoid<=1)\n"
	      "      --threads          add a root frame per thread: 'name (tid)'\n"
	      "  -q, --quiet            no live status and no summary\n"
	      "  -h, --help             this text\n"
	      "\n"
	      "Examples:\n"
	      "  ember record -o app.folded -- ./app --input big.bin\n"
	      "      profile ./app until it exits; folded stacks in app.folded\n"
	      "  ember record -p 4242 -d 30 --threads -o server.folded\n"
	      "      attach to pid 4242 for 30 s, one flame-graph root per thread\n"
	      "  ember record -F 999 --stack-size 65528 -o deep.folded -- python3 train.py\n"
	      "      higher rate, and deep stacks copied whole\n"
	      "\n"
	      "Ctrl-C stops sampling and still writes every output (launch mode forwards the\n"
	      "signal to COMMAND). A summary with the top functions goes to stderr.\n"
	      "\n"
	      "Exit status:\n"
	      "  launch mode   COMMAND's own status; 128+N if it was killed by signal N;\n"
	      "                126 COMMAND not executable; 127 COMMAND not found\n"
	      "  0             attach mode: profile written\n"
	      "  64            invalid option or value\n"
	      "  69            no such process, or it exited during attach\n"
	      "  70            internal error\n"
	      "  71            system error (perf_event_open, mmap, fork)\n"
	      "  73            an output file could not be written\n"
	      "  77            permission denied (perf_event_paranoid, ptrace, container seccomp)\n",
	      out);
}

static const struct {
	const char *suffix;
	enum output_format format;
} extensions[] = {
	{ ".folded", FORMAT_FOLDED },
	{ ".txt", FORMAT_FOLDED },
	{ ".collapsed", FORMAT_FOLDED },
};

int options_format_from_path(const char *path)
{
	size_t n = strlen(path);
	for (size_t i = 0; i < sizeof extensions / sizeof extensions[0]; i++) {
		size_t k = strlen(extensions[i].suffix);
		if (n > k && strcmp(path + n - k, extensions[i].suffix) == 0)
			return (int)extensions[i].format;
	}
	return -1;
}

static int bad(const char *fmt, const char *arg)
{
	fputs("ember: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\nTry 'ember record --help'.\n", stderr);
	return EMBER_EXIT_USAGE;
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

static long max_sample_rate(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
	long v = 100000;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = 100000;
		fclose(f);
	}
	return v;
}

enum { OPT_STACK_SIZE = 256, OPT_KERNEL, OPT_THREADS, OPT_FORMAT };

int options_parse_record(int argc, char **argv, struct record_opts *o, bool *help_shown)
{
	static const struct option longopts[] = {
		{ "freq", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "stack-size", required_argument, NULL, OPT_STACK_SIZE },
		{ "kernel", no_argument, NULL, OPT_KERNEL },
		{ "threads", no_argument, NULL, OPT_THREADS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *format = NULL;
	long v;
	int c;
	*help_shown = false;
	opterr = 0;
	optind = 1;
	/* '+': stop at the first non-option, so COMMAND's own flags are its own. */
	while ((c = getopt_long(argc, argv, "+:F:d:p:o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'F':
			if (!parse_long(optarg, 1, max_sample_rate(), &v)) {
				char msg[160];
				snprintf(msg, sizeof msg, "-F must be a whole number from 1 to %ld "
					 "(kernel.perf_event_max_sample_rate), not '%%s'", max_sample_rate());
				return bad(msg, optarg);
			}
			o->sampler.freq_hz = (uint32_t)v;
			break;
		case 'd': {
			char *end;
			errno = 0;
			double d = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(d > 0) || d > 1e7)
				return bad("-d must be a positive number of seconds, not '%s'", optarg);
			o->duration_s = d;
			break;
		}
		case 'p':
			if (!parse_long(optarg, 1, 0x7fffffff, &v))
				return bad("-p must be a process id, not '%s'", optarg);
			o->pid = (pid_t)v;
			break;
		case 'o':
			if (o->noutputs == MAX_OUTPUTS)
				return bad("at most 16 outputs (-o %s)", optarg);
			o->outputs[o->noutputs++].path = optarg;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "folded") != 0)
				return bad("unknown --format '%s' (known: folded)", optarg);
			format = optarg;
			break;
		case OPT_STACK_SIZE:
			if (!parse_long(optarg, 64, 65528, &v) || v % 8)
				return bad("--stack-size must be a multiple of 8 from 64 to 65528, not '%s'", optarg);
			o->sampler.stack_size = (uint32_t)v;
			break;
		case OPT_KERNEL:
			o->sampler.kernel = true;
			break;
		case OPT_THREADS:
			o->threads = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			options_record_usage(stdout);
			*help_shown = true;
			return EMBER_EXIT_OK;
		case ':':
			return bad("option '%s' needs a value", argv[optind - 1]);
		default:
			return bad("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		o->argv = argv + optind;
	if (o->pid && o->argv)
		return bad("give either -p PID or a command, not both (command: %s)", o->argv[0]);
	if (!o->pid && !o->argv)
		return bad("%s", "nothing to profile: give a command after -- or -p PID");
	for (int i = 0; i < o->noutputs; i++) {
		int f = format ? FORMAT_FOLDED : options_format_from_path(o->outputs[i].path);
		if (f < 0)
			return bad("cannot tell the format of '%s' from its extension (use .folded or --format)",
				   o->outputs[i].path);
		o->outputs[i].format = (enum output_format)f;
	}
	return 0;
}
