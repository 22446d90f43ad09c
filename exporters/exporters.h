/* ember exporters: write a struct ember_profile in the formats users open.
 *
 * Every writer takes the profile read-only and a FILE opened by the caller;
 * it returns 0, or -1 with errno set when writing failed. */
#ifndef EMBER_EXPORTERS_H
#define EMBER_EXPORTERS_H

#include <stdbool.h>
#include <stdio.h>

#include "profile.h"

struct ember_export_opts {
	bool threads;          /* a root frame per thread: "name (tid)" */
};

/* Folded ("collapsed") stacks: root;...;leaf COUNT, one line per unique
 * stack, sorted bytewise, integer counts, names sanitized so that every
 * consumer (flamegraph.pl, inferno, speedscope, gprof2dot) reads them alike. */
int ember_write_folded(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o);

/* The text of one frame as folded output prints it, sanitized, into buf
 * (always NUL-terminated; a text that does not fit is cut at a character
 * boundary, still following the rules).  Returns the length written. */
size_t ember_folded_frame_text(const struct ember_frame *f, char *buf, size_t size);

#endif
