/* Opening and closing the events (sampler_events.c), for sampler_poll.c: the
 * public half, ember_sampler_launch, _attach and _stop, is in sampler.h;
 * this is the half only the sampler's lifecycle calls. */
#ifndef EMBER_SAMPLER_EVENTS_H
#define EMBER_SAMPLER_EVENTS_H

#include "sampler_state.h"

/* Unmap every ring and close every event. */
void sampler_close_events(struct ember_sampler *s);

#endif
