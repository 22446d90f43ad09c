/* One thread's stack, from addresses and Python frames to named frames:
 * each native address symbolized (with its inline chain), each native
 * frame classed for the merge, the Python frames laid over the eval-loop
 * activations (ember_py_merge). */
#include <stdlib.h>
#include <string.h>

#include "dump_internal.h"
#include "grow.h"
#include "session.h"
#include "strtab.h"

const char *dump_keep(struct dumper *dp, const char *s)
{
	const char *k = ember_strtab_cstr(dp->d->st, s ? s : "");
	return k ? k : "";
}

#define MAX_INLINE 32

struct resolve_bufs {
	struct ember_dump_frame *nat;      /* symbolized native frames, each group outermost first */
	size_t nnat, nat_cap;
	uint32_t *ids;                     /* ids[i] = i: the merge's native ids are indexes into nat */
	size_t ids_cap;
	struct ember_native_group groups[EMBER_MAX_FRAMES];
	uint32_t off[EMBER_MAX_FRAMES];
	struct ember_merged *merged;
	size_t merged_cap;
};

/* Symbolize native frame fa as group g. 0, or -1 on OOM. */
static int add_group(struct dumper *dp, struct resolve_bufs *b, uint32_t g, const struct ember_frame_addr *fa)
{
	struct ember_sym_frame sf[MAX_INLINE];
	size_t n = 1;
	if (fa->module == EMBER_NO_MODULE)
		sf[0] = (struct ember_sym_frame){ .function = "[unknown]", .file = "", .module = "" };
	else
		n = ember_symbolize(dp->sym, fa->module, fa->addr, sf, MAX_INLINE);
	if (EMBER_GROW(b->nat, b->nat_cap, b->nnat + n) != 0)
		return -1;
	b->off[g] = (uint32_t)b->nnat;
	for (size_t j = n; j-- > 0;)
		b->nat[b->nnat++] = (struct ember_dump_frame){
			.kind = EMBER_DUMP_NATIVE, .name = dump_keep(dp, sf[j].function),
			.file = dump_keep(dp, sf[j].file), .line = sf[j].line, .module = dump_keep(dp, sf[j].module),
			.inlined = sf[j].inlined,
		};
	uint8_t cls = n ? ember_py_native_class(sf[n - 1].function, sf[n - 1].module, sf[n - 1].has_symbol) : 0;
	if (fa->module != EMBER_NO_MODULE && fa->module < dp->pm.nmods)
		cls = ember_py_frame_class(dp->py, cls, dp->pm.mods[fa->module]->path, fa->addr);
	b->groups[g] = (struct ember_native_group){ .n = (uint32_t)n, .cls = cls };
	return 0;
}

/* Groups of w's native stack, root first. 0, or -1 on OOM. */
static int native_groups(struct dumper *dp, struct work *w, struct resolve_bufs *b)
{
	for (uint32_t g = 0; g < w->nnat; g++)
		if (add_group(dp, b, g, &w->nat[w->nnat - 1 - g]) != 0)
			return -1;
	ember_py_root_groups(b->groups, w->nnat);
	if (EMBER_GROW(b->ids, b->ids_cap, b->nnat + 1) != 0)
		return -1;
	for (size_t i = 0; i < b->nnat; i++)
		b->ids[i] = (uint32_t)i;
	/* What the innermost Python frame called is the interpreter's C
	 * (time.sleep, a lock's acquire, zlib.compress) and what a hung thread
	 * waits in: shown, while the interpreter's frames between Python
	 * frames stay hidden. */
	uint8_t eval = dp->py ? ember_py_eval_class(dp->py) : 0;
	uint32_t last_eval = UINT32_MAX;
	for (uint32_t g = 0; g < w->nnat; g++) {
		b->groups[g].ids = b->ids + b->off[g];
		if (b->groups[g].cls & eval)
			last_eval = g;
	}
	for (uint32_t g = last_eval == UINT32_MAX ? w->nnat : last_eval + 1; g < w->nnat; g++)
		b->groups[g].cls &= (uint8_t)~EMBER_NATIVE_INTERP;
	return 0;
}

static struct ember_dump_frame special(const char *name)
{
	return (struct ember_dump_frame){ .kind = EMBER_DUMP_SPECIAL, .name = name, .file = "", .module = "" };
}

static struct ember_dump_frame python_frame(struct dumper *dp, struct work *w, uint32_t i)
{
	const struct ember_py_code *c = ember_python_code(dp->py, w->py[i].code);
	struct ember_dump_frame f = {
		.kind = EMBER_DUMP_PYTHON, .name = dump_keep(dp, c ? c->qualname : "?"),
		.file = dump_keep(dp, c ? c->filename : ""), .line = w->py[i].line, .module = "",
		.locals = w->locals[i], .nlocals = w->nlocals[i],
	};
	w->locals[i] = NULL;   /* the frame owns them now */
	w->nlocals[i] = 0;
	return f;
}

/* The merged stack, root first, into out (room for nm + 1). */
static uint32_t lay_out(struct dumper *dp, struct work *w, struct resolve_bufs *b, uint32_t nm,
			struct ember_dump_frame *out)
{
	uint32_t n = 0;
	if (w->uflags & EMBER_SAMPLE_TRUNCATED)
		out[n++] = special("[truncated]");
	for (uint32_t i = 0; i < nm; i++) {
		const struct ember_merged *m = &b->merged[i];
		if (m->kind == EMBER_MERGED_NATIVE)
			out[n++] = b->nat[m->value];
		else if (m->kind == EMBER_MERGED_PYTHON)
			out[n++] = python_frame(dp, w, m->value);
		else
			out[n++] = special("[python frames uncertain]");
	}
	for (uint32_t i = 0; i < n / 2; i++) {   /* innermost first */
		struct ember_dump_frame x = out[i];
		out[i] = out[n - 1 - i];
		out[n - 1 - i] = x;
	}
	return n;
}

uint32_t dump_resolve(struct dumper *dp, struct work *w, struct ember_dump_thread *t)
{
	struct resolve_bufs *b = calloc(1, sizeof *b);
	uint32_t n = 0;
	struct ember_dump_frame *out = NULL;
	if (b && native_groups(dp, w, b) == 0) {
		size_t cap = b->nnat + (size_t)w->npy + 2;
		if (EMBER_GROW(b->merged, b->merged_cap, cap) == 0 && (out = calloc(cap + 1, sizeof *out))) {
			struct ember_merge_opts mo = { .native_unfiltered = dp->o->native_unfiltered };
			struct ember_merge_in mi = {
				.groups = b->groups, .ngroups = w->nnat, .py = w->py, .npy = (uint32_t)w->npy,
				.pyflags = w->pyflags, .eval_class = dp->py ? ember_py_eval_class(dp->py) : 0,
				.native_truncated = (w->uflags & EMBER_SAMPLE_TRUNCATED) != 0,
			};
			bool uncertain;
			uint32_t nm = ember_py_merge(&mo, &mi, b->merged, (uint32_t)cap, &uncertain);
			n = lay_out(dp, w, b, nm, out);
		}
	}
	for (int i = 0; i < w->npy; i++)   /* locals of frames the merge left out */
		free(w->locals[i]);
	if (b) {
		free(b->nat);
		free(b->ids);
		free(b->merged);
		free(b);
	}
	t->frames = out;
	return n;
}
