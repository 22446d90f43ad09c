/* ember: entry point and subcommand dispatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ember_version.h"

#ifdef EMBER_HAVE_BPF_COPIER
#define COPIER_BUILT "built in"
#else
#define COPIER_BUILT "not built"
#endif
#ifdef EMBER_HAVE_BPF_OFFCPU
#define OFFCPU_BUILT "built in"
#else
#define OFFCPU_BUILT "not built"
#endif

static void usage(FILE *out)
{
	fputs(ember_help_ember, out);
}

/* Line 1 is "ember VERSION" (scripts read it); then the build's features,
 * one "what: value" a line. */
static void version(void)
{
	fputs("ember " EMBER_VERSION "\n"
	      "architecture: " EMBER_BUILD_ARCH "\n"
	      "Python frame copier (BPF): " COPIER_BUILT "\n"
	      "off-CPU tracer (BPF, record --idle): " OFFCPU_BUILT "\n"
	      "libraries: libunwind " EMBER_BUILD_LIBUNWIND ", libdw " EMBER_BUILD_LIBDW
	      ", libbpf " EMBER_BUILD_LIBBPF ", zlib " EMBER_BUILD_ZLIB "\n", stdout);
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
		version();
		return EMBER_EXIT_OK;
	}
	fprintf(stderr, "ember: unknown command '%s'\n", cmd);
	usage(stderr);
	return EMBER_EXIT_USAGE;
}
