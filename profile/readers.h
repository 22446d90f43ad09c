/* The readers of profile/ (ember_file_read.c, folded_read.c), above the
 * input they read (input.h) and below the loader that picks one (load.c).
 * Private to profile/. */
#ifndef EMBER_PROFILE_READERS_H
#define EMBER_PROFILE_READERS_H

#include <stdbool.h>
#include <stddef.h>

#include "input.h"
#include "profile.h"

/* The readers: each reads in from its first unread byte, into an empty
 * profile.  enum ember_load_status, with one line naming the input in err. */
int ember_read_ember(struct ember_profile *p, struct ember_input *in, bool gzip, char *err, size_t errlen);
int ember_read_folded(struct ember_profile *p, struct ember_input *in, int column,
		      struct ember_load_warnings *w, char *err, size_t errlen);

#endif
