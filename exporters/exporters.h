/* ember exporters: write a struct ember_profile in the formats users open.
 *
 * Every writer takes the profile read-only, reads it through profile.h's
 * reading functions only, and writes to a FILE opened by the caller
 * (binary mode matters for pprof); it returns 0, or -1 with errno set when
 * writing failed.  Every writer works on native-only profiles, Python-only
 * profiles (from folded input) and mixed ones.  Frame kinds (profile.h)
 * decide colours and naming; nothing here knows how the profile was made.
 * Stacks are read root first, as the profile stores them; each writer puts
 * them in its format's order (pprof: leaf first).  Writers keep no state
 * between calls: two threads may write at once, each with its own FILE. */
#ifndef EMBER_EXPORTERS_H
#define EMBER_EXPORTERS_H

#include <stdbool.h>
#include <stdio.h>

#include "profile.h"

struct ember_export_opts {
	bool threads;          /* a root frame per thread: "name (tid)" (folded, SVG, speedscope, pstats roots) */

	/* SVG flame graph */
	bool icicle;           /* root at the top instead of the bottom */
	const char *title;     /* NULL: "ember: <command>" */
	unsigned width_px;     /* 0: 1200 */
	double min_width_px;   /* frames narrower than this are pruned; 0: 0.1 */
};

/* Folded ("collapsed") stacks: root;...;leaf COUNT, one line per unique
 * stack, sorted bytewise, integer counts, names sanitized so that every
 * consumer (flamegraph.pl, inferno, speedscope, gprof2dot) reads them alike. */
int ember_write_folded(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o);

/* pstats: the marshal dict `pstats.Stats` loads on Python 2.7 and 3.6-3.13
 * (docs/consumers.md §3).  Python frames keyed (file, first line, function); native
 * frames ("~", 0, "<name>") -- see docs/formats-ember.md. */
int ember_write_pstats(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o);

/* A standalone interactive SVG flame graph (no network): zoom, search,
 * tooltips, colours by frame kind with a legend. */
int ember_write_svg(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o);

/* speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * one sampled profile per thread. */
int ember_write_speedscope(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o);

/* pprof: gzip-compressed perftools.profiles.Profile protobuf. */
int ember_write_pprof(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o);

/* Chrome Trace Event JSON: B/E events nested per thread from the timeline
 * (or, without one, a synthetic timeline laid out from the counts). */
int ember_write_chrome_trace(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o);

/* ---- Differential outputs (`ember diff`, docs/consumers.md §7) ----
 *
 * Two runs, BASE and NEW, compared as given: frames are the same frame when
 * their folded text is equal (the caller renames frames and drops line
 * numbers first; see diff/diff.h) and threads are ignored.  Samples of run
 * k times scale[k] are the compared values: percent of the run's samples
 * (share) or seconds.  Writers that carry counts (folded, pprof) put BASE
 * on NEW's scale: BASE counts x scale[0] / scale[1], rounded. */
struct ember_diff_export_opts {
	const char *base_name, *new_name;  /* what the runs are called (file names); NULL: "BASE", "NEW" */
	const char *normalization;         /* one line saying how the runs are compared; written in every output */
	double scale[2];                   /* BASE, NEW: samples -> compared value */
	bool share;                        /* values are percentages (deltas in pp); else seconds */
	const char *per;                   /* seconds per what, e.g. "iteration"; NULL */
	/* SVG: is a change of self samples from base to new_ within sampling
	 * noise (drawn white, "within noise" in the tooltip)?  The caller's
	 * test, so the graph agrees with its table (ember diff passes
	 * ember_diff_within_noise and its struct ember_diff); NULL: no change
	 * is called noise. */
	bool (*within_noise)(const void *ctx, uint64_t base, uint64_t new_);
	const void *noise_ctx;

	/* SVG */
	bool reverse;                      /* widths from BASE (shows what vanished) instead of NEW */
	bool icicle;
	const char *title;                 /* NULL: "ember diff: BASE -> NEW" */
	unsigned width_px;                 /* 0: 1200 */
	double min_width_px;               /* 0: 0.1 */
};

/* Differential flame graph: widths from NEW (BASE with reverse), colour
 * by the change in self time (red grew, blue shrank, full colour = the
 * largest change, stated in the subtitle), tooltips with self and
 * inclusive values in both runs and their deltas; zoom, search and legend
 * as ember_write_svg. */
int ember_write_svg_diff(FILE *out, const struct ember_profile *base, const struct ember_profile *new_,
			 const struct ember_diff_export_opts *o);

/* Two-column folded stacks "stack BASE NEW" (difffolded.pl's output, read
 * by flamegraph.pl and inferno-flamegraph), BASE on NEW's scale. */
int ember_write_folded_diff(FILE *out, const struct ember_profile *base, const struct ember_profile *new_,
			    const struct ember_diff_export_opts *o);

/* pprof with NEW's samples as they are and BASE's negated, on NEW's scale,
 * labelled pprof::base=true: what `pprof -diff_base=BASE NEW` loads, so
 * pprof viewers show the difference. */
int ember_write_pprof_diff(FILE *out, const struct ember_profile *base, const struct ember_profile *new_,
			   const struct ember_diff_export_opts *o);

#endif
