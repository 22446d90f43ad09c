/* `ember convert IN -o OUT...` and `ember report IN`: the cold path on its
 * own, for .ember files and for folded stacks from any tool. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void convert_usage(FILE *out)
{
	fputs(ember_help_convert, out);
}

int cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		OUTPUT_LONGOPTS,
		{ "column", required_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct output_set out = { 0 };
	bool quiet = false;
	int column = 1, c, handled;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
		if ((handled = options_output(&out, c, optarg, "convert")) != 0) {
			if (handled != 1)
				return handled;
			continue;
		}
		switch (c) {
		case 'c':
			if (strcmp(optarg, "base") && strcmp(optarg, "new"))
				return options_bad("convert", "--column must be base or new, not '%s'", optarg);
			column = strcmp(optarg, "new") == 0;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			convert_usage(stdout);
			return 0;
		default:
			return options_getopt_error("convert", c, argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return options_bad("convert", "%s", optind >= argc ? "give one input file" : "give exactly one input file");
	if (!out.noutputs)
		return options_bad("convert", "%s", "nothing to write: give -o OUT");
	int rc = options_output_finish(&out, "convert");
	if (rc)
		return rc;
	struct ember_profile p;
	if (ember_profile_init(&p) != 0)
		return EMBER_EXIT_INTERNAL;
	struct ember_load_warnings w;
	if ((rc = cli_load_profile(argv[optind], column, &p, NULL, &w)) == 0) {
		if (!quiet)
			cli_load_warnings(argv[optind], column, &w, true);
		if ((rc = outputs_open(&out)) == 0)
			rc = outputs_write(&out, &p, quiet);
	}
	outputs_close(&out);
	ember_profile_free(&p);
	return rc;
}

static void report_usage(FILE *out)
{
	fputs(ember_help_report, out);
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 't' },
		{ "by", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	long top = 20;
	enum ember_report_key key = EMBER_REPORT_BY_FUNCTION;
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 't':
			top = strtol(optarg, &end, 10);
			if (end == optarg || *end || top < 0 || top > 1000000)
				return options_bad("report", "--top must be a whole number >= 0, not '%s'", optarg);
			break;
		case 'b':
			if (!strcmp(optarg, "function"))
				key = EMBER_REPORT_BY_FUNCTION;
			else if (!strcmp(optarg, "line"))
				key = EMBER_REPORT_BY_LINE;
			else if (!strcmp(optarg, "module"))
				key = EMBER_REPORT_BY_MODULE;
			else
				return options_bad("report", "--by must be function, line or module, not '%s'", optarg);
			break;
		case 'h':
			report_usage(stdout);
			return 0;
		default:
			return options_getopt_error("report", c, argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return options_bad("report", "%s", "give exactly one input file");
	struct ember_profile p;
	if (ember_profile_init(&p) != 0)
		return EMBER_EXIT_INTERNAL;
	struct ember_load_warnings w;
	int rc = cli_load_profile(argv[optind], 1, &p, NULL, &w);
	if (rc == 0) {
		cli_load_warnings(argv[optind], 1, &w, true);
		const struct ember_run_meta *m = ember_profile_meta(&p);
		if (m->command && m->command[0])
			printf("command: %s\n", m->command);
		if (m->wall_clock)   /* record --idle: time, on and off CPU */
			printf("wall-clock time: %.3f s", (double)ember_profile_total(&p) * ember_profile_interval_s(&p));
		else
			printf("samples: %llu", (unsigned long long)ember_profile_total(&p));
		if (m->freq_hz)
			printf(" at %u Hz", m->freq_hz);
		if (m->lost || m->truncated || m->mismatched)
			printf("; %llu lost, %llu truncated, %llu mismatched", (unsigned long long)m->lost,
			       (unsigned long long)m->truncated, (unsigned long long)m->mismatched);
		printf("\n");
		ember_report_print(stdout, &p, key, (size_t)top);
		ember_report_unsymbolized_print(stdout, &p);
		summary_pools(stdout, &p, NULL);
	}
	ember_profile_free(&p);
	return rc;
}
