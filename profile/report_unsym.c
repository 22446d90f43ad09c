/* Samples that end in code without symbols: their innermost native frame is
 * one the symbolizer could not name (EMBER_FRAME_NO_SYMBOL), counted per
 * module, for the line `record`'s summary and `report` print; and the
 * names by which such code and ember's marks are told apart in folded
 * stacks. */
#define _GNU_SOURCE
#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "profile_internal.h"

static bool ends_with(const char *s, size_t n, const char *end)
{
	size_t e = strlen(end);
	return n >= e && memcmp(s + n - e, end, e) == 0;
}

bool ember_mark_name(const char *name, size_t len)
{
	static const char *const marks[] = { EMBER_MARK_TRUNCATED, EMBER_MARK_INCOMPLETE, EMBER_MARK_UNCERTAIN,
					     EMBER_MARK_NO_DISPATCHER };
	for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
		if (len == strlen(marks[i]) && memcmp(name, marks[i], len) == 0)
			return true;
	if (len < 2 || name[0] != '[' || name[len - 1] != ']' || memmem(name, len, "+0x", 3))
		return false;   /* (not code without a symbol: "[libz.so.1+0x4a26]") */
	return ends_with(name, len, " wait]") || ends_with(name, len, " dispatch]") ||
	       (len > 15 && memcmp(name, "[native thread ", 15) == 0);
}

bool ember_mark_wait(const char *name)
{
	size_t n = strlen(name);
	return ember_mark_name(name, n) && ends_with(name, n, " wait]");
}

size_t ember_unsymbolized_module(const char *name)
{
	size_t n = strlen(name);
	if (n < 6 || name[0] != '[' || name[n - 1] != ']')
		return 0;
	const char *plus = NULL;
	for (const char *q = name + n - 2; q > name + 1; q--)
		if (q[0] == '+' && q[1] == '0' && q[2] == 'x') {
			plus = q;
			break;
		}
	if (!plus || plus + 3 >= name + n - 1)
		return 0;
	for (const char *q = plus + 3; q < name + n - 1; q++)
		if (!isxdigit((unsigned char)*q))
			return 0;
	return (size_t)(plus - name - 1);
}

/* Modules named in the line; the rest are summed as "others". */
#define UNSYM_MODULES 4

static int cmp_rows(const void *a, const void *b)
{
	const struct ember_unsym_module *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->label, y->label);
}

/* Per frame: its module's key when it is native code without a symbol,
 * else UINT32_MAX; skip[] marks the frames that are not native code
 * (kernel and synthetic frames), so that the leaf of the view is the
 * innermost frame in user space.  A Python leaf has no key: its native
 * leaf, the eval loop, was replaced by the Python frames. */
static int unsym_keys(const struct ember_profile *p, struct ember_keys *k, uint32_t *frame_key, bool *skip)
{
	for (uint32_t i = 0; i < p->nframes; i++) {
		const struct ember_frame *f = &p->frames[i];
		bool native = f->kind == EMBER_FRAME_NATIVE || f->kind == EMBER_FRAME_INTERP;
		skip[i] = f->kind == EMBER_FRAME_KERNEL || f->kind == EMBER_FRAME_SPECIAL;
		frame_key[i] = UINT32_MAX;
		if (native && (f->flags & EMBER_FRAME_NO_SYMBOL) && (frame_key[i] = ember_key_of(k, f)) == UINT32_MAX)
			return -1;
	}
	return 0;
}

/* u's modules: those with a count, sorted.  0, or -1 on OOM (what was
 * made so far stays in u, for ember_unsym_free). */
static int unsym_rows(const struct ember_keys *k, const uint64_t *self, struct ember_unsym *u)
{
	uint32_t nk = ember_keys_count(k);
	if (!(u->modules = calloc(nk ? nk : 1, sizeof(*u->modules))))
		return -1;
	for (uint32_t i = 0; i < nk; i++) {
		if (!self[i])
			continue;
		if (!(u->modules[u->nmodules].label = strdup(ember_key_label(k, i))))
			return -1;
		u->modules[u->nmodules++].count = self[i];
	}
	qsort(u->modules, u->nmodules, sizeof(*u->modules), cmp_rows);
	return 0;
}

int ember_report_unsymbolized(const struct ember_profile *p, struct ember_unsym *u)
{
	memset(u, 0, sizeof(*u));
	struct ember_keys *k = ember_keys_new(EMBER_REPORT_BY_MODULE, EMBER_KEYS_EXACT);
	uint32_t *frame_key = malloc(((size_t)p->nframes + 1) * sizeof(*frame_key));
	bool *skip = malloc((size_t)p->nframes + 1);
	uint64_t *weight = calloc((size_t)p->nstacks + 1, sizeof(*weight));
	uint64_t *self = NULL;
	int ret = -1;
	if (!k || !frame_key || !skip || !weight || unsym_keys(p, k, frame_key, skip) < 0)
		goto out;
	/* Time off CPU (record --idle) ran no code: on-CPU rows only. */
	for (uint32_t r = 0; r < p->nrows; r++) {
		if (p->rows[r].flags & EMBER_ROW_OFF_CPU)
			continue;
		weight[p->rows[r].stack] += p->rows[r].count;
		u->of += p->rows[r].count;
	}
	uint32_t nk = ember_keys_count(k);
	uint64_t *total = calloc((size_t)nk + 1, sizeof(*total));
	self = calloc((size_t)nk + 1, sizeof(*self));
	if (!total || !self || report_count_weighted(p, frame_key, skip, weight, nk, self, total) < 0) {
		free(total);
		goto out;
	}
	free(total);
	for (uint32_t i = 0; i < nk; i++)
		u->count += self[i];
	ret = unsym_rows(k, self, u);
out:
	if (ret < 0)
		ember_unsym_free(u);
	free(self);
	free(weight);
	free(skip);
	free(frame_key);
	ember_keys_free(k);
	return ret;
}

void ember_unsym_free(struct ember_unsym *u)
{
	for (size_t i = 0; i < u->nmodules; i++)
		free(u->modules[i].label);
	free(u->modules);
	u->modules = NULL;
	u->nmodules = 0;
}

void ember_report_unsymbolized_print(FILE *out, const struct ember_profile *p)
{
	struct ember_unsym u;
	if (ember_report_unsymbolized(p, &u) < 0) {
		fprintf(out, "ember: report: out of memory\n");
		return;
	}
	/* A few stray samples (an address outside every mapping) are not
	 * worth a line; 1% of the profile is (count >= of / 100, rounded up,
	 * without a product that could wrap). */
	if (u.count && u.count >= u.of / 100 + (u.of % 100 != 0)) {
		double all = (double)u.of;
		fprintf(out, "ember: %.1f%% of %s (%" PRIu64 ") end in code without symbols: ",
			100.0 * (double)u.count / all, p->meta.wall_clock ? "the time on CPU" : "samples", u.count);
		uint64_t rest = u.count;
		for (size_t i = 0; i < u.nmodules && i < UNSYM_MODULES; i++) {
			ember_report_put_label(out, u.modules[i].label, 60);
			fprintf(out, " %.1f%%%s", 100.0 * (double)u.modules[i].count / all,
				i + 1 < u.nmodules ? ", " : "");
			rest -= u.modules[i].count;
		}
		if (u.nmodules > UNSYM_MODULES)
			fprintf(out, "others %.1f%%", 100.0 * (double)rest / all);
		fprintf(out, "; install the -dbgsym packages or see `ember report --by module`\n");
	}
	ember_unsym_free(&u);
}
