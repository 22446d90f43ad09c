/* One thread's stack, from addresses and Python frames to named frames,
 * through the resolve step every command shares (resolve.h), into the
 * dump's frames: innermost first, strings kept by the dump, each Python
 * frame with its local variables. */
#include <stdlib.h>
#include <string.h>

#include "dump_internal.h"
#include "strtab.h"

const char *dump_keep(struct dumper *dp, const char *s)
{
	const char *k = ember_strtab_cstr(dp->d->st, s ? s : "");
	return k ? k : "";
}

static enum ember_dump_frame_kind dump_kind(enum ember_frame_kind k)
{
	return k == EMBER_FRAME_PYTHON ? EMBER_DUMP_PYTHON : k == EMBER_FRAME_SPECIAL ? EMBER_DUMP_SPECIAL
										 : EMBER_DUMP_NATIVE;
}

/* Frame id of dp's resolver as a dump frame; a Python frame takes its
 * locals (py_index: its index in w->py[], else UINT32_MAX). */
static struct ember_dump_frame dump_frame(struct dumper *dp, struct work *w, uint32_t id, uint32_t py_index)
{
	const struct ember_frame *f = &dp->frames.frames[id];
	struct ember_dump_frame out = {
		.kind = dump_kind(f->kind), .name = dump_keep(dp, f->name), .file = dump_keep(dp, f->file),
		.line = f->line, .module = dump_keep(dp, f->module), .inlined = f->inlined,
	};
	if (py_index != UINT32_MAX) {
		out.locals = w->locals[py_index];
		out.nlocals = w->nlocals[py_index];
		w->locals[py_index] = NULL;   /* the frame owns them now */
		w->nlocals[py_index] = 0;
	}
	return out;
}

uint32_t dump_resolve(struct dumper *dp, struct work *w, struct ember_dump_thread *t)
{
	struct ember_resolve_in in = {
		.frames = w->nat, .nframes = w->nnat, .sample_flags = w->uflags, .py = w->py,
		.npy = (uint32_t)w->npy, .pyflags = w->pyflags, .reader = dp->py,
	};
	struct ember_resolved rs;
	struct ember_dump_frame *out = NULL;
	uint32_t n = 0;
	if (dp->rv && ember_resolve(dp->rv, &in, &rs) == 0 && (out = calloc((size_t)rs.n + 1, sizeof *out))) {
		n = rs.n;
		for (uint32_t i = 0; i < n; i++)   /* innermost first */
			out[n - 1 - i] = dump_frame(dp, w, rs.ids[i], rs.py_index[i]);
	}
	for (int i = 0; i < w->npy; i++)   /* locals of frames the merge left out */
		free(w->locals[i]);
	t->frames = out;
	return n;
}
