/* Delivering one sample (sampler_deliver.c), for the record handler and
 * the off-CPU tracer alike. */
#ifndef EMBER_SAMPLER_DELIVER_H
#define EMBER_SAMPLER_DELIVER_H

struct ember_sampler;
struct ember_sample;
struct unwind_input;

/* A sample with user registers and stack: unwound and delivered to s->fn
 * (the early hook first).  smp has its pid, tid, time and flags. */
void sampler_deliver(struct ember_sampler *s, struct ember_sample *smp, const struct unwind_input *in);

#endif
