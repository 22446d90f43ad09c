/* The reader's entry points beyond python_stacks.h (session/reader.c), for
 * tests. */
#ifndef EMBER_PY_READER_H
#define EMBER_PY_READER_H

#include <stdint.h>

struct ember_python;

/* The OS thread ids of the thread states found by a scan now (tests):
 * fills up to max tids, returns the count (< 0: -errno). */
int py_list_threads(struct ember_python *py, uint32_t *tids, int max);

#endif
