/* Kernel text symbols from a kallsyms-format file (kallsyms.c), for
 * symbolizer.c.  Private to symbolizer/. */
#ifndef EMBER_KALLSYMS_H
#define EMBER_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ksym {
	uint64_t addr;
	uint32_t name_off; /* into kallsyms.names */
};

struct kallsyms {
	bool loaded;       /* load attempted (successfully or not) */
	struct ksym *v;
	size_t n;
	char *names;
	size_t names_len, names_cap;
};

/* Parse a kallsyms-format file, keeping text symbols (t, T, w, W).  Nonzero
 * only on OOM; an unreadable file or hidden (all-zero) addresses leave n == 0. */
int kallsyms_load(struct kallsyms *k, const char *path);
/* Name of the text symbol containing addr, or NULL. */
const char *kallsyms_lookup(const struct kallsyms *k, uint64_t addr);
void kallsyms_free(struct kallsyms *k);

#endif
