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

#include "profile.h"

/* Interned copy of s (len bytes, need not be NUL-terminated); NULL on OOM. */
const char *ember_profile_str(struct ember_profile *p, const char *s, size_t len);

/* Two 32-bit ids as one key of an id table: (pid, tid), (stack, thread),
 * (callee, caller).  Its hash, and whether an item's two ids equal it. */
struct id_pair {
	uint32_t a, b;
};

static inline uint64_t id_pair_hash(const struct id_pair *k)
{
	return ember_hash_mix((uint64_t)k->a << 32 | k->b);
}

static inline bool id_pair_eq(uint32_t a, uint32_t b, const void *key)
{
	const struct id_pair *k = key;

	return a == k->a && b == k->b;
}

/* True when path holds an .ember profile (by content, not by name). */
bool ember_profile_is_ember_file(const char *path);
/* Read an .ember file into an empty profile.  Returns enum ember_load_status
 * with a one-line message naming the file (and the byte offset) in err. */
int ember_profile_load_ember(struct ember_profile *p, const char *path, char *err, size_t errlen);
/* Id of the frame of p equal to *f, whose strings are p's interned ones;
 * UINT32_MAX when there is none.  Never adds. */
uint32_t profile_frame_find(const struct ember_profile *p, const struct ember_frame *f);

struct ember_report_row {
	char *label;           /* owned by the row array */
	uint64_t self;         /* samples where this is the leaf */
	uint64_t total;        /* samples where this is on the stack (once per sample) */
};

/* Every distinct key of the profile with its self and total samples, sorted
 * by self descending (ties by label).  Synthetic frames are left out.  Caller
 * frees with ember_report_rows_free.  Returns 0, or -1 on OOM. */
int ember_report_rows(const struct ember_profile *p, enum ember_report_key key,
		      struct ember_report_row **rows, size_t *nrows);
void ember_report_rows_free(struct ember_report_row *rows, size_t nrows);

/* The keys of reports (report.c), for the live table (top.c): an id per
 * distinct key, its label interned for the keys' lifetime.  def_line: a
 * Python function's label ends in its first line, "f (file:12)".  NULL on
 * OOM. */
struct report_keys;
struct report_keys *report_keys_new(enum ember_report_key key, bool def_line);
void report_keys_free(struct report_keys *k);
/* An ember_report_key_fn: ctx is the struct report_keys. */
uint32_t report_key_of(void *ctx, const struct ember_frame *f);
uint32_t report_keys_count(const struct report_keys *k);
const char *report_key_label(const struct report_keys *k, uint32_t id);
/* Add into self[] and total[] (nkeys each): stack s weighs weight[s];
 * frame_key[f] is frame f's key (UINT32_MAX: none); a frame with skip[f]
 * set is out of the view (skip NULL: none is), and self goes to the
 * innermost frame in it.  0, or -1 on OOM. */
int report_count_weighted(const struct ember_profile *p, const uint32_t *frame_key, const bool *skip,
			  const uint64_t *weight, uint32_t nkeys, uint64_t *self, uint64_t *total);

#endif
