/* Growing arrays: the one helper every growable array in ember uses. */
#ifndef EMBER_COMMON_GROW_H
#define EMBER_COMMON_GROW_H

#include <stddef.h>

/* Grow *arr (elements of size elem) so that it holds at least need elements;
 * the capacity doubles, from 16.  0, or -1 on OOM or overflow (the array and
 * *cap are then unchanged). */
int ember_grow(void **arr, size_t *cap, size_t elem, size_t need);

/* The same for an array pointer p and its size_t capacity: EMBER_GROW(p,
 * cap, need) reads as "make p hold need elements". */
#define EMBER_GROW(p, cap, need) ember_grow((void **)&(p), &(cap), sizeof *(p), (need))

#endif
