/* The cold path from captured addresses to a symbolic profile: each unique
 * (module, address) is symbolized once, its frames interned once, and every
 * raw stack becomes a root-first stack of frame ids. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "python_stacks.h"
#include "symbolizer.h"

#define MAX_INLINE 32

/* (module, addr, frame flags) -> the frame ids it expands to, outermost first. */
struct addr_entry {
	uint32_t module, flags;
	uint64_t addr;
	uint32_t off, n;           /* into ids */
	uint8_t cls;               /* enum group_class */
	bool used;
};

struct addr_cache {
	struct addr_entry *slots;
	size_t cap, count;
	uint32_t *ids;
	size_t nids, ids_cap;
};

static size_t slot_of(const struct addr_cache *c, uint32_t module, uint64_t addr, uint32_t flags)
{
	uint64_t h = (addr ^ ((uint64_t)module << 40) ^ ((uint64_t)flags << 36)) * 0x9e3779b97f4a7c15ull;
	size_t mask = c->cap - 1;
	size_t i = (size_t)(h >> 20) & mask;
	while (c->slots[i].used && (c->slots[i].module != module || c->slots[i].addr != addr ||
				    c->slots[i].flags != flags))
		i = (i + 1) & mask;
	return i;
}

static int cache_grow(struct addr_cache *c)
{
	struct addr_cache n = *c;
	n.cap = c->cap ? c->cap * 2 : 4096;
	n.slots = calloc(n.cap, sizeof *n.slots);
	if (!n.slots)
		return -1;
	for (size_t i = 0; i < c->cap; i++)
		if (c->slots[i].used)
			n.slots[slot_of(&n, c->slots[i].module, c->slots[i].addr, c->slots[i].flags)] = c->slots[i];
	free(c->slots);
	*c = n;
	return 0;
}

static int push_ids(struct addr_cache *c, const uint32_t *ids, uint32_t n)
{
	if (c->nids + n > c->ids_cap) {
		size_t ncap = c->ids_cap ? c->ids_cap * 2 : 4096;
		while (ncap < c->nids + n)
			ncap *= 2;
		uint32_t *p = realloc(c->ids, ncap * sizeof *p);
		if (!p)
			return -1;
		c->ids = p;
		c->ids_cap = ncap;
	}
	memcpy(c->ids + c->nids, ids, n * sizeof *ids);
	c->nids += n;
	return 0;
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The interpreter's own module: python3.11, python2.7, libpython3.12.so.1.0. */
static bool interpreter_module(const char *module)
{
	return starts_with(module, "python") || starts_with(module, "libpython");
}

static uint8_t classify(const struct ember_sym_frame *outer)
{
	const char *name = outer->function, *mod = outer->module ? outer->module : "";
	uint8_t cls = 0;
	/* CPython's perf trampolines (-X perf, 3.12+): JIT code named
	 * "py::qualname:file" that only calls the eval loop. */
	if (strcmp(mod, "[jit]") == 0 && starts_with(name, "py::"))
		cls |= GROUP_INTERP;
	if (strcmp(name, "_PyEval_EvalFrameDefault") == 0 || starts_with(name, "_PyEval_EvalFrameDefault."))
		cls |= GROUP_EVAL_DEFAULT;
	if (strcmp(name, "PyEval_EvalFrameEx") == 0)
		cls |= GROUP_EVAL_EX;
	if (interpreter_module(mod))
		cls |= GROUP_INTERP;
	if (starts_with(name, "take_gil"))
		cls |= GROUP_TAKE_GIL;
	static const char *const roots[] = { "_start", "__libc_start_main", "__libc_start_call_main",
					     "clone3", "clone", "start_thread" };
	for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
		if (strcmp(name, roots[i]) == 0)
			cls |= GROUP_ROOT;
	return cls;
}

static uint32_t intern_sym(struct ember_profile *p, const struct ember_sym_frame *sf, enum ember_frame_kind kind,
			   const char *build_id, uint8_t flags)
{
	struct ember_frame f = {
		.kind = kind,
		.name = sf->function,
		.file = sf->file ? sf->file : "",
		.line = sf->line,
		.module = sf->module ? sf->module : "",
		.build_id = build_id,
		.inlined = sf->inlined,
		.flags = flags,
	};
	return ember_profile_frame(p, &f);
}

/* Frame ids for one address, outermost first (the containing function, then
 * what was inlined into it).  A frame whose caller was found by a stack scan
 * (EMBER_FRAME_SCANNED) marks its containing function, the one that links
 * to that caller. */
static const uint32_t *resolve(struct addr_cache *c, struct ember_symbolizer *sym, struct ember_profile *p,
			       char **build_ids, uint32_t nmods, const struct ember_frame_addr *fa, bool kernel,
			       uint32_t *n, uint8_t *cls)
{
	if ((c->count + 1) * 2 > c->cap && cache_grow(c) != 0)
		return NULL;
	uint32_t module = fa->module, flags = fa->flags & EMBER_FRAME_SCANNED;
	uint64_t addr = fa->addr;
	size_t i = slot_of(c, module, addr, flags);
	if (!c->slots[i].used) {
		struct ember_sym_frame sf[MAX_INLINE];
		size_t k;
		uint32_t ids[MAX_INLINE];
		if (kernel) {
			k = ember_symbolize_kernel(sym, addr, sf, MAX_INLINE);
		} else if (module == EMBER_NO_MODULE) {
			sf[0] = (struct ember_sym_frame){ .function = "[unknown]", .file = "", .module = "" };
			k = 1;
		} else {
			k = ember_symbolize(sym, module, addr, sf, MAX_INLINE);
		}
		uint8_t group_cls = k && !kernel ? classify(&sf[k - 1]) : 0;
		enum ember_frame_kind kind = kernel ? EMBER_FRAME_KERNEL :
					     (group_cls & GROUP_INTERP) ? EMBER_FRAME_INTERP : EMBER_FRAME_NATIVE;
		for (size_t j = 0; j < k; j++) {
			const char *bid = !kernel && module < nmods ? build_ids[module] : "";
			uint8_t ff = j == k - 1 && flags ? EMBER_FRAME_CALLER_SCANNED : 0;
			ids[k - 1 - j] = intern_sym(p, &sf[j], kind, bid, ff);
			if (ids[k - 1 - j] == UINT32_MAX)
				return NULL;
		}
		c->slots[i] = (struct addr_entry){ .module = module, .flags = flags, .addr = addr,
						   .off = (uint32_t)c->nids,
						   .n = (uint32_t)k, .cls = group_cls, .used = true };
		c->count++;
		if (push_ids(c, ids, (uint32_t)k) != 0)
			return NULL;
	}
	*n = c->slots[i].n;
	*cls = c->slots[i].cls;
	return c->ids + c->slots[i].off;
}

/* CPU time of ember itself: what symbolization costs, whatever the load. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int build_profile(const struct raw_stacks *rs, const struct ember_sampler *sampler,
		  const struct python_capture *pc, struct ember_jit_map *jit, const struct merge_opts *mo,
		  struct ember_profile *p, double *symbolize_s, uint64_t *mismatched)
{
	*mismatched = 0;
	double t0 = now_s();
	struct ember_symbolizer *sym = ember_symbolizer_new();
	if (!sym)
		return -1;
	uint32_t nmods = ember_sampler_module_count(sampler);
	char **build_ids = calloc(nmods + 1, sizeof *build_ids);
	if (!build_ids) {
		ember_symbolizer_free(sym);
		return -1;
	}
	for (uint32_t m = 0; m < nmods; m++) {
		struct ember_module_info mi;
		ember_sampler_module(sampler, m, &mi);
		if (mi.jit_pid)
			ember_symbolizer_add_jit_module(sym, m, mi.path, mi.jit_pid, jit);
		else
			ember_symbolizer_add_module(sym, m, mi.open_path, mi.path, mi.build_id, mi.build_id_len);
		/* hex, for .ember and pprof consumers that fetch debug info by it */
		build_ids[m] = calloc(mi.build_id_len * 2 + 1, 1);
		for (size_t i = 0; build_ids[m] && i < mi.build_id_len; i++)
			sprintf(build_ids[m] + 2 * i, "%02x", mi.build_id[i]);
	}
	struct ember_frame truncated = { .kind = EMBER_FRAME_SPECIAL, .name = "[truncated]", .file = "", .module = "" };
	uint32_t truncated_id = ember_profile_frame(p, &truncated);

	struct addr_cache cache = { 0 };
	/* raw entry index -> (stack, thread), to lay out the timeline after */
	uint32_t *entry_stack = NULL, *entry_thread = NULL;
	size_t nentries = 0, entries_cap = 0;
	uint32_t *stack = NULL;
	size_t stack_cap = 0;
	struct native_group *groups = NULL;
	uint32_t groups_cap = 0;
	int rc = truncated_id == UINT32_MAX ? -1 : 0;
	size_t cursor = 0;
	struct raw_stack_view v;
	while (rc == 0 && raw_stacks_next(rs, &cursor, &v)) {
		size_t need = 3 + (size_t)(v.nframes + v.nkernel) * MAX_INLINE + v.npy;
		if (need > stack_cap) {
			uint32_t *s = realloc(stack, need * sizeof *s);
			if (!s) {
				rc = -1;
				break;
			}
			stack = s;
			stack_cap = need;
		}
		/* Native groups, root first (captured leaf first). */
		if (v.nframes > groups_cap) {
			struct native_group *ng = realloc(groups, v.nframes * sizeof *ng);
			if (!ng) {
				rc = -1;
				break;
			}
			groups = ng;
			groups_cap = v.nframes;
		}
		uint32_t ngroups = 0;
		for (uint32_t i = v.nframes; i-- > 0 && rc == 0;) {
			struct native_group *g = &groups[ngroups++];
			const uint32_t *ids = resolve(&cache, sym, p, build_ids, nmods, &v.frames[i], false,
						      &g->n, &g->cls);
			/* The cache's id array may move while it grows: keep offsets
			 * until every address of this stack is resolved. */
			g->off = ids ? (size_t)(ids - cache.ids) : 0;
			if (!ids)
				rc = -1;
		}
		if (rc != 0)
			break;
		for (uint32_t i = 0; i < ngroups; i++)
			groups[i].ids = cache.ids + groups[i].off;
		const struct ember_python *handle = pc ? python_capture_get(pc, v.pid) : NULL;
		/* An eval-loop part no symbol names (the .cold part of a stripped
		 * python3, found by its jumps): an activation all the same. */
		uint8_t eval_cls = handle && ember_python_version(handle)[0] == '2' ? GROUP_EVAL_EX : GROUP_EVAL_DEFAULT;
		for (uint32_t i = 0, k = v.nframes; handle && i < ngroups; i++) {
			const struct ember_frame_addr *fa = &v.frames[--k];
			if (groups[i].cls & (GROUP_EVAL_DEFAULT | GROUP_EVAL_EX) || fa->module == EMBER_NO_MODULE)
				continue;
			struct ember_module_info mi;
			ember_sampler_module(sampler, fa->module, &mi);
			if (ember_python_is_eval_vaddr(handle, mi.path, fa->addr))
				groups[i].cls |= eval_cls | GROUP_INTERP;
		}
		uint32_t n = 0;
		if (mo->subprocesses) {
			char label[320];
			const char *cmd = pc ? python_capture_cmdline(pc, v.pid) : "";
			snprintf(label, sizeof label, "process %u: %s", v.pid, cmd[0] ? cmd : "?");
			struct ember_frame root = { .kind = EMBER_FRAME_SPECIAL, .name = label };
			if ((stack[n++] = ember_profile_frame(p, &root)) == UINT32_MAX) {
				rc = -1;
				break;
			}
		}
		if (v.flags & EMBER_SAMPLE_TRUNCATED)
			stack[n++] = truncated_id;
		bool uncertain;
		n += merge_stack(p, mo, groups, ngroups, v.py, v.npy, v.pyflags, handle,
				 (v.flags & EMBER_SAMPLE_TRUNCATED) != 0, stack + n, (uint32_t)(stack_cap - n),
				 &uncertain);
		if (uncertain)
			*mismatched += v.count;
		for (uint32_t i = v.nkernel; i-- > 0 && rc == 0 && !mo->python_only;) {
			uint32_t k;
			uint8_t cls;
			struct ember_frame_addr kfa = { .module = EMBER_NO_MODULE, .addr = v.kernel_ips[i] };
			const uint32_t *ids = resolve(&cache, sym, p, build_ids, nmods, &kfa, true, &k, &cls);
			if (!ids)
				rc = -1;
			else if (n + k <= stack_cap)
				memcpy(stack + n, ids, k * sizeof *ids), n += k;
		}
		if (rc != 0)
			break;
		uint32_t sid = ember_profile_stack(p, stack, n);
		/* A Python thread is named as Python names it ("MainThread",
		 * "Thread-3 (worker)"); others (BLAS, OpenMP workers) by their comm. */
		const char *tname = pc ? python_capture_thread_name(pc, v.pid, v.tid) : NULL;
		if (!tname)
			tname = ember_sampler_thread_name(sampler, v.pid, v.tid);
		uint32_t tix = ember_profile_thread(p, v.pid, v.tid, tname);
		if (sid == UINT32_MAX || tix == UINT32_MAX || ember_profile_add(p, sid, tix, v.count) != 0)
			rc = -1;
		if (nentries == entries_cap) {
			entries_cap = entries_cap ? entries_cap * 2 : 1024;
			uint32_t *a = realloc(entry_stack, entries_cap * sizeof *a);
			uint32_t *b = a ? realloc(entry_thread, entries_cap * sizeof *b) : NULL;
			if (a)
				entry_stack = a;
			if (b)
				entry_thread = b;
			if (!a || !b) {
				rc = -1;
				break;
			}
		}
		entry_stack[nentries] = sid;
		entry_thread[nentries++] = tix;
	}
	size_t ntimed;
	bool complete;
	const struct raw_timed *timed = raw_stacks_timeline(rs, &ntimed, &complete);
	/* A timeline cut short would show only the start of the run: none is
	 * better than a misleading one (the counts are complete either way). */
	for (size_t i = 0; i < ntimed && rc == 0 && complete; i++)
		if (timed[i].entry < nentries &&
		    ember_profile_add_timed(p, timed[i].time_ns, entry_stack[timed[i].entry],
					    entry_thread[timed[i].entry]) != 0)
			rc = -1;
	/* Rings of different CPUs interleave: put samples back in time order. */
	ember_profile_sort_timeline(p);
	free(entry_stack);
	free(entry_thread);
	free(stack);
	free(groups);
	for (uint32_t m = 0; m < nmods; m++)
		free(build_ids[m]);
	free(build_ids);
	free(cache.slots);
	free(cache.ids);
	ember_symbolizer_free(sym);
	if (symbolize_s)
		*symbolize_s = now_s() - t0;
	return rc;
}
