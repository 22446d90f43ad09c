/* The capture (capture.c), for run.c: the sampler's hooks and the drain
 * policy (set before start), and the loop that drains the sampler. */
#ifndef EMBER_RECORD_CAPTURE_H
#define EMBER_RECORD_CAPTURE_H

#include "run_state.h"

void capture_hooks(struct ember_record *r);
void capture_run(struct ember_record *r, ember_record_progress_fn progress, void *arg);

#endif
