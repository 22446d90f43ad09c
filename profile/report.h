/* Reports over a profile (profile.h): the keys samples are counted under
 * (function, line or module), the counting every report shares, the top
 * tables `record` and `report` print, the samples that end in code without
 * symbols, and the live table of `ember top`.  `diff` counts with the same
 * keys and the same counting, so its numbers are `report`'s. */
#ifndef EMBER_REPORT_H
#define EMBER_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"

/* ---- Keys: what a report counts samples under (report_keys.c) ---- */

enum ember_report_key {
	EMBER_REPORT_BY_FUNCTION = 0, /* name + file */
	EMBER_REPORT_BY_LINE,         /* name + file:line */
	EMBER_REPORT_BY_MODULE,       /* ELF module, or Python file */
};

/* Which frames are one key, and how a key is labelled.  Labels: by function
 * "name" (a native one), "name (file)" (a Python one); by line "name
 * (file:line)"; by module the module, or a Python frame's file.  An empty
 * name, module or file shows as "[unknown]". */
enum ember_key_rule {
	/* Frames are one key when their kind, name and file (and, by line,
	 * their line) are equal: `report`'s rows. */
	EMBER_KEYS_EXACT = 0,
	/* The same, and by function a Python key's label ends in its first
	 * line, "f (file:12)": `top`'s rows, which stand for functions. */
	EMBER_KEYS_EXACT_DEF_LINE,
	/* Frames of two runs that show alike are one key: the name as shown
	 * and, for a Python frame or by line, the file (and the line); kinds
	 * are left out (a frame read from folded text and the same frame from
	 * an .ember file may disagree on native vs interpreter), and a native
	 * function is its name alone (demangled C++ names are qualified, and
	 * folded input has no file to compare).  By line, a frame with a line
	 * and no file is labelled "name (:line)".  `diff`'s rows. */
	EMBER_KEYS_MATCHING,
};

/* A table of keys: a small integer id per distinct key, in the order they
 * were first met, with its label interned for the table's lifetime. */
struct ember_keys;

/* NULL on OOM. */
struct ember_keys *ember_keys_new(enum ember_report_key by, enum ember_key_rule rule);
void ember_keys_free(struct ember_keys *k);   /* NULL: nothing */
/* The id of frame f's key (keys is the struct ember_keys; the shape of
 * ember_report_key_fn), adding the key if new; UINT32_MAX on OOM. */
uint32_t ember_key_of(void *keys, const struct ember_frame *f);
/* The number of keys, and the label of key id ("" for no such key). */
uint32_t ember_keys_count(const struct ember_keys *k);
const char *ember_key_label(const struct ember_keys *k, uint32_t id);

/* ---- Counting (report.c) ---- */

/* Self and total samples per key, a key being what key_of(ctx, frame)
 * returns for a frame: keys are small integers (an id table's ids), or
 * UINT32_MAX on OOM; synthetic frames ([truncated], [unknown], thread roots)
 * are counted under no key.  A key's total counts a sample once however
 * often the key is on its stack (recursion, several lines of one function);
 * its self counts the samples whose leaf frame has it.  *self and *total
 * get nkeys counts each (1 + the largest key; the caller frees both).
 * `report` and `diff` both count with it.  0, or -1 on OOM. */
typedef uint32_t (*ember_report_key_fn)(void *ctx, const struct ember_frame *f);
int ember_report_count(const struct ember_profile *p, ember_report_key_fn key_of, void *ctx, uint32_t *nkeys,
		       uint64_t **self, uint64_t **total);

struct ember_report_row {
	char *label;           /* owned by the row array */
	uint64_t self;         /* samples where this is the leaf */
	uint64_t total;        /* samples where this is on the stack (once per sample) */
};

/* Every key of the profile (EMBER_KEYS_EXACT) that is on a stack with
 * samples, with its self and total samples, sorted by self descending (ties
 * by label, then by total).  Synthetic frames are left out.  Caller frees
 * with ember_report_rows_free.  Returns 0, or -1 on OOM. */
int ember_report_rows(const struct ember_profile *p, enum ember_report_key key,
		      struct ember_report_row **rows, size_t *nrows);
void ember_report_rows_free(struct ember_report_row *rows, size_t nrows);

/* ---- Printing: the table `record` and `report` print (report.c) ---- */

/* A wall-clock profile (meta.wall_clock): its time on and off CPU, in all
 * and for each of its busiest threads (when it has more than one). */
void ember_report_wall_split(FILE *out, const struct ember_profile *p);

/* Print "top N by self" and "top N by total" tables with percentages of
 * ember_profile_total; top 0 prints every row.  Labels are shortened to 80
 * characters and control characters print as '?'. */
void ember_report_print(FILE *out, const struct ember_profile *p,
			enum ember_report_key key, size_t top);
/* Print label as those tables do: at most max characters (0: all of it; a
 * longer one keeps its first two thirds and its end around an ellipsis),
 * control characters as '?' (they would move a terminal's cursor, or break
 * a table's rows), and each ill-formed UTF-8 sequence as U+FFFD. */
void ember_report_put_label(FILE *out, const char *label, size_t max);
/* The same into a new string (the caller frees it); NULL on OOM. */
char *ember_report_label(const char *label, size_t max);

/* ---- Code without symbols (report_unsym.c) ---- */

/* A frame name that stands for code without symbols as ember, perf and
 * others write it, "[MODULE+0xHEX]": the length of MODULE (which starts at
 * name + 1), or 0 when name is not one. */
size_t ember_unsymbolized_module(const char *name);

/* Samples that end in code without symbols: those whose innermost native
 * frame (kernel and synthetic frames left out; a Python leaf is named) has
 * EMBER_FRAME_NO_SYMBOL, over the on-CPU rows of p. */
struct ember_unsym_module {
	char *label;           /* the module's basename, "[unknown]" for none */
	uint64_t count;        /* samples ending in its code without symbols */
};
struct ember_unsym {
	uint64_t count;        /* such samples */
	uint64_t of;           /* all on-CPU samples */
	struct ember_unsym_module *modules; /* those with a count, most first (ties by label) */
	size_t nmodules;
};
/* Fill *u (free with ember_unsym_free).  0, or -1 on OOM. */
int ember_report_unsymbolized(const struct ember_profile *p, struct ember_unsym *u);
void ember_unsym_free(struct ember_unsym *u);
/* The one line that says so, "ember: 12.3% of samples (456) end in code
 * without symbols: libfoo.so 10.1%, ...", when they are at least 1% of the
 * samples; nothing otherwise. */
void ember_report_unsymbolized_print(FILE *out, const struct ember_profile *p);

/* ---- The live table of `ember top` (top.c) ----
 *
 * Own and total samples per function, over the last interval and since the
 * start, from a profile that only grows while it is sampled (rows and
 * counts are added, ids stay): ember_top_update takes the profile's counts
 * as the end of an interval, and the interval is what was added since the
 * update before.  Tables are computed from those two snapshots, so that a
 * paused view can still be sorted, filtered and switched. */

enum ember_top_view {
	EMBER_TOP_MERGED = 0,  /* Python and native frames, the interpreter's own left out */
	EMBER_TOP_PYTHON,      /* Python frames only: own time is the innermost Python function's */
	EMBER_TOP_NATIVE,      /* native (and kernel) frames only, the interpreter's included */
	EMBER_TOP_VIEW_COUNT
};

enum ember_top_sort {
	EMBER_TOP_BY_OWN = 0,  /* own samples in the interval */
	EMBER_TOP_BY_TOTAL,    /* total samples in the interval */
	EMBER_TOP_BY_OWN_ALL,  /* own samples since the start */
	EMBER_TOP_BY_TOTAL_ALL,/* total samples since the start */
	EMBER_TOP_SORT_COUNT
};

struct ember_top_row {
	const char *label;     /* "name" or, Python, "qualname (file:first line)"; lives as the model */
	uint64_t own_now, total_now;   /* samples in the last interval */
	uint64_t own_all, total_all;   /* samples since the start */
};

struct ember_top_table {
	struct ember_top_row *rows;    /* every function with a sample in the view, sorted */
	size_t nrows;
	uint64_t samples_now, samples_all; /* samples of the thread(s) shown: the 100% */
};

struct ember_top;
/* NULL on OOM. */
struct ember_top *ember_top_new(void);
void ember_top_free(struct ember_top *t);
/* End an interval at p's counts now.  p must be the profile of every
 * earlier call, grown since.  0, or -1 on OOM. */
int ember_top_update(struct ember_top *t, const struct ember_profile *p);
/* The table of view over thread (a thread index of p; UINT32_MAX: all
 * threads), sorted by sort (ties: the other count of the same span, then,
 * for an interval's sort, its count since the start, then the label).  out's
 * rows belong to t, valid until the next table or ember_top_free.  0, or
 * -1 on OOM. */
int ember_top_table(struct ember_top *t, const struct ember_profile *p, enum ember_top_view view,
		    uint32_t thread, enum ember_top_sort sort, struct ember_top_table *out);

#endif
