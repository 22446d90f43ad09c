/* Loading the profiles `convert`, `report` and `diff` read, and the lines
 * that say what tolerant reading of folded stacks had to accept (cli.h). */
#include <string.h>

#include "cli.h"

int cli_load_profile(const char *path, int column, struct ember_profile *p, const char *role,
		     struct ember_load_warnings *w)
{
	char err[1024];
	int rc = ember_profile_load(p, path, column, w, err, sizeof err);

	if (rc == EMBER_LOAD_OK)
		return 0;
	if (role)
		fprintf(stderr, "ember: %s (%s)\n", err, role);
	else
		fprintf(stderr, "ember: %s\n", err);
	if (rc == EMBER_LOAD_NOMEM)
		return EMBER_EXIT_INTERNAL;
	return rc == EMBER_LOAD_NOINPUT ? EMBER_EXIT_NOINPUT : EMBER_EXIT_DATAERR;
}

void cli_load_warnings(const char *path, int column, const struct ember_load_warnings *w, bool all)
{
	const char *name = ember_profile_input_name(path);

	if (w->skipped)
		fprintf(stderr, "ember: %s:%llu: skipped %llu line(s) without a sample count\n", name,
			(unsigned long long)w->first_skipped_line, (unsigned long long)w->skipped);
	if (all && w->crlf)
		fprintf(stderr, "ember: %s: %llu line(s) ended in CR LF; read as LF\n", name,
			(unsigned long long)w->crlf);
	if (w->cr_only)
		fprintf(stderr, "ember: %s: %llu line(s) ended in a CR alone (classic Mac OS line ends); each read as "
			"a line of its own\n", name, (unsigned long long)w->cr_only);
	if (w->fractional)
		fprintf(stderr, "ember: %s: %llu fractional count(s) rounded to whole samples\n", name,
			(unsigned long long)w->fractional);
	if (w->two_column)
		fprintf(stderr, "ember: %s: %llu two-column (differential) line(s) \"stack BASE NEW\": used the %s "
			"column\n", name, (unsigned long long)w->two_column, column ? "NEW (last)" : "BASE (first)");
	if (all && w->invalid_utf8)
		fprintf(stderr, "ember: %s: %llu frame name(s) with invalid UTF-8; shown with U+FFFD\n", name,
			(unsigned long long)w->invalid_utf8);
	if (w->nul_names)
		fprintf(stderr, "ember: %s: %llu frame name(s) with NUL bytes; each NUL shown as U+FFFD\n", name,
			(unsigned long long)w->nul_names);
}
