/* Private to the profile model (and the exporters built on it).  Hashing,
 * the interner, the id table and array growth are common/'s. */
#ifndef EMBER_PROFILE_INTERNAL_H
#define EMBER_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "idtab.h"
#include "strtab.h"
#include "utf8.h"

struct ember_profile;
struct ember_frame;
/* Id of the frame of p equal to *f, whose strings are p's interned ones;
 * UINT32_MAX when there is none.  Never adds. */
uint32_t profile_frame_find(const struct ember_profile *p, const struct ember_frame *f);

#endif
