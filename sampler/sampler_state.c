/* The sampler's state (sampler_state.h): the error every failing call of
 * the sampler leaves in it. */
#include <stdarg.h>
#include <stdio.h>

#include "sampler_state.h"

int sampler_fail(struct ember_sampler *s, enum ember_sampler_err code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof s->err, fmt, ap);
	va_end(ap);
	return -(int)code;
}
