/* What each record does (sampler_records.c), for sampler_poll.c's drain. */
#ifndef EMBER_SAMPLER_RECORDS_H
#define EMBER_SAMPLER_RECORDS_H

#include <linux/perf_event.h>

/* perf_rings_drain's callback (arg: the struct ember_sampler): one record
 * into the process model, or one sample unwound and delivered to s->fn
 * (counted in s->delivered). */
void sampler_handle_record(void *arg, const struct perf_event_header *h);

#endif
