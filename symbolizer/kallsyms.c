/* Kernel symbols from /proc/kallsyms.
 *
 * Lines are "ffffffff81000000 T _stext" with an optional "\t[module]".  We
 * keep text symbols (t/T, and w/W which are weak text on x86) sorted by
 * address; a symbol runs to the next one.  With kptr_restrict (or without
 * CAP_SYSLOG) every address reads as zero: the table stays empty and the
 * caller prints "[kernel+0x...]". */
#define _GNU_SOURCE /* qsort_r */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "kallsyms.h"
#include "symbolizer.h"
#include "sorted.h"
#include "sym_search.h"

/* No kernel function is this big: an address further past the last symbol
 * (module area holes, data) is not attributed to it. */
#define MAX_KSYM_SPAN (1u << 20)

static int names_append(struct kallsyms *k, const char *s, size_t len, uint32_t *off)
{
	if (k->names_len + len + 1 > UINT32_MAX || EMBER_GROW(k->names, k->names_cap, k->names_len + len + 1) < 0)
		return -1;
	*off = (uint32_t)k->names_len;
	memcpy(k->names + k->names_len, s, len);
	k->names[k->names_len + len] = '\0';
	k->names_len += len + 1;
	return 0;
}

/* By address; among aliases prefer fewer leading underscores ("_stext"
 * over "__stext"), then the name for a stable choice. */
static int ksym_cmp(const void *pa, const void *pb, void *names)
{
	const struct ksym *a = pa, *b = pb;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	const char *na = (const char *)names + a->name_off;
	const char *nb = (const char *)names + b->name_off;
	size_t ua = sym_underscores(na), ub = sym_underscores(nb);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return strcmp(na, nb);
}

/* A text symbol's line ("ADDR T NAME"): its address (zero when hidden) and
 * name, the name's length in *len; false for any other line. */
static bool text_symbol(const char *line, unsigned long long *addr, const char **name, size_t *len)
{
	char *end;
	*addr = strtoull(line, &end, 16);
	if (end == line || end[0] != ' ')
		return false;
	if ((end[1] != 't' && end[1] != 'T' && end[1] != 'w' && end[1] != 'W') || end[2] != ' ')
		return false;
	*name = end + 3;
	*len = strcspn(*name, " \t\n");
	return *len > 0;
}

int kallsyms_load(struct kallsyms *k, const char *path)
{
	k->loaded = true;
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	char *line = NULL;
	size_t linecap = 0, cap = 0;
	int rc = 0;
	while (getline(&line, &linecap, f) > 0) {
		unsigned long long addr;
		const char *name;
		size_t len;
		if (!text_symbol(line, &addr, &name, &len) || addr == 0)
			continue; /* zero: address hidden by kptr_restrict */
		uint32_t off;
		if (EMBER_GROW(k->v, cap, k->n + 1) < 0 || names_append(k, name, len, &off) < 0) {
			rc = -1;
			break;
		}
		k->v[k->n++] = (struct ksym){ .addr = addr, .name_off = off };
	}
	free(line);
	fclose(f);
	if (rc < 0 || k->n == 0) {
		kallsyms_free(k);
		k->loaded = true;
		return rc;
	}
	qsort_r(k->v, k->n, sizeof(*k->v), ksym_cmp, k->names);
	/* Drop aliases: the first at each address is the preferred name. */
	size_t n = 1;
	for (size_t i = 1; i < k->n; i++)
		if (k->v[i].addr != k->v[n - 1].addr)
			k->v[n++] = k->v[i];
	k->n = n;
	return 0;
}

bool ember_kernel_symbols_visible(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	if (!f)
		return false;
	char line[512];
	bool visible = false;
	/* The first text symbol decides: per-CPU data symbols sit at address
	 * zero even when the addresses are shown. */
	while (fgets(line, sizeof line, f)) {
		unsigned long long addr;
		const char *name;
		size_t len;
		if (text_symbol(line, &addr, &name, &len)) {
			visible = addr != 0;
			break;
		}
	}
	fclose(f);
	return visible;
}

const char *kallsyms_lookup(const struct kallsyms *k, uint64_t addr)
{
	size_t after = ember_upper_bound(k->v, k->n, sizeof(*k->v), 8, addr);
	if (after == 0 || addr - k->v[after - 1].addr >= MAX_KSYM_SPAN)
		return NULL;
	return k->names + k->v[after - 1].name_off;
}

void kallsyms_free(struct kallsyms *k)
{
	free(k->v);
	free(k->names);
	memset(k, 0, sizeof(*k));
}
