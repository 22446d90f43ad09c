/* Shared by the timeline exporters (speedscope.c, chrome_trace.c, pprof.c):
 * JSON text output that is always valid JSON and valid UTF-8, and the layout
 * decisions every one of them makes alike (interval, sample order).  The
 * exporters' own, but for the JSON text, which `ember dump --json` writes
 * with too (cli/dump_cmd.c). */
#ifndef EMBER_JSON_OUT_H
#define EMBER_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ember_version.h"   /* EMBER_VERSION, for the "exporter" fields */
#include "profile.h"

/* ---- JSON text ---- */

/* s[0..n) as a quoted JSON string: '"' and '\\' escaped, C0 and C1 controls,
 * DEL, U+2028 and U+2029 as \uXXXX (\n, \t, ... where JSON has them), every
 * ill-formed UTF-8 sequence as U+FFFD.  Everything else is copied as is. */
void ember_json_strn(FILE *out, const char *s, size_t n);
void ember_json_str(FILE *out, const char *s);   /* NULL prints "" */

void ember_json_u64(FILE *out, uint64_t v);

/* ns as microseconds with three decimals ("12.345"): exact, no float. */
void ember_json_us(FILE *out, uint64_t ns);

/* The end of a JSON writer: flush, then 0, or -1 with errno set. */
int ember_json_finish(FILE *out);

/* ---- layout shared by the exporters ---- */

/* Nanoseconds one sample stands for: ember_profile_interval_s rounded to a
 * whole nanosecond, at least 1. */
uint64_t ember_export_interval_ns(const struct ember_profile *p);

/* Whether the timeline can stand for the samples: it is non-empty and every
 * thread has exactly as many timed samples as its rows count.  A timeline
 * that is partial (capped, or only some threads) is not used: the writers
 * then lay the counts out, so that their totals always equal the rows. */
bool ember_export_timeline_complete(const struct ember_profile *p);

/* Thread indices sorted by (pid, tid).  NULL on OOM. */
uint32_t *ember_export_sorted_threads(const struct ember_profile *p);

/* Indices of the rows with samples, sorted by thread (pid, tid), then by
 * stack in name order (frame by frame, root first: name, file, line; a
 * stack sorts before its extensions), the order of a flame graph.  *n gets
 * the count.  NULL on OOM. */
uint32_t *ember_export_sorted_rows(const struct ember_profile *p, size_t *n);

/* Timeline indices grouped by thread, each group in time order: the samples
 * of thread t are idx[start[t] .. start[t + 1]).  0, or -1 on OOM. */
int ember_export_timeline_by_thread(const struct ember_profile *p, size_t **idx, size_t **start);

#endif
