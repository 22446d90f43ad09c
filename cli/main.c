/* ember: entry point and subcommand dispatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define EMBER_VERSION "0.1.0"

static void usage(FILE *out)
{
	fputs("usage: ember COMMAND [options]\n"
	      "\n"
	      "Commands:\n"
	      "  record   sample a command or a running process and write its profile\n"
	      "  convert  turn an .ember profile or folded stacks into other formats\n"
	      "  report   print the top functions of an .ember profile or folded stacks\n"
	      "  diff     compare two profiles: what grew, shrank, appeared or vanished\n"
	      "  dump     print every thread's current stack of a running process\n"
	      "  top      live table of the busiest functions of a command or a process\n"
	      "\n"
	      "Run 'ember COMMAND --help' for its options, examples and exit codes.\n", out);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EMBER_EXIT_USAGE;
	}
	/* Debian's libdw asks debuginfod for debug files it lacks when
	 * DEBUGINFOD_URLS is set (its shells set it): a download in the middle of
	 * a recording (python-stacks reads the interpreter's DWARF while
	 * sampling) or a report.  Everything ember reads stays local. */
	unsetenv("DEBUGINFOD_URLS");
	const char *cmd = argv[1];
	if (strcmp(cmd, "record") == 0)
		return cmd_record(argc - 1, argv + 1);
	if (strcmp(cmd, "convert") == 0)
		return cmd_convert(argc - 1, argv + 1);
	if (strcmp(cmd, "report") == 0)
		return cmd_report(argc - 1, argv + 1);
	if (strcmp(cmd, "diff") == 0)
		return cmd_diff(argc - 1, argv + 1);
	if (strcmp(cmd, "dump") == 0)
		return cmd_dump(argc - 1, argv + 1);
	if (strcmp(cmd, "top") == 0)
		return cmd_top(argc - 1, argv + 1);
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return EMBER_EXIT_OK;
	}
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
		printf("ember %s\n", EMBER_VERSION);
		return EMBER_EXIT_OK;
	}
	fprintf(stderr, "ember: unknown command '%s'\n", cmd);
	usage(stderr);
	return EMBER_EXIT_USAGE;
}
