/* Growing arrays (grow.h). */
#include <stdint.h>
#include <stdlib.h>

#include "grow.h"

int ember_grow(void **arr, size_t *cap, size_t elem, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return -1;
	void *na = realloc(*arr, ncap * elem);
	if (!na)
		return -1;
	*arr = na;
	*cap = ncap;
	return 0;
}
