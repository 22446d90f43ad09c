/* ember symbolizer: modules, the per-(module, address) result cache, and the
 * public API (see symbolizer.h).
 *
 * Each module gets its own Dwfl, opened on first lookup: every module is
 * reported at bias 0 so that Dwfl addresses are the module's own ELF virtual
 * addresses (what capture records), and those ranges overlap between modules,
 * so they cannot share one Dwfl.  A module that cannot be opened (missing,
 * unreadable, not ELF, truncated, other build-id) is marked failed once and
 * every address in it gets the "[module+0x...]" frame. */
#define _GNU_SOURCE /* asprintf */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demangle.h"
#include "grow.h"
#include "hash.h"
#include "idtab.h"
#include "inline_chain.h"
#include "jit_map.h"
#include "kallsyms.h"
#include "strtab.h"
#include "symbolizer_internal.h"
#include "symcache.h"
#include "symtab.h"

/* Ids are documented as small and dense; the module table is a plain array
 * indexed by id, so refuse ids that would make it absurdly large. */
#define MAX_MODULE_ID (1u << 24)

enum mod_state { MOD_UNOPENED, MOD_OPEN, MOD_FAILED };

struct module {
	char *open_path, *display_path;
	char *root;            /* the process's own root directory, or NULL (ember's) */
	const char *name;      /* interned basename of display_path */
	const char *fallback;  /* name inside "[...+0x...]": brackets stripped */
	uint8_t *build_id;
	size_t build_id_len;
	uint32_t gen;          /* cache entries from another generation are stale */
	enum mod_state state;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwfl_Callbacks cb;     /* libdwfl keeps a pointer to it */
	char *debuginfo_path;  /* cb.debuginfo_path points here; NULL = default */
	struct symtab syms;
	struct cu_index cus;
	struct ember_jit_map *jit;      /* JIT code of process jit_pid: names from its perf map */
	uint32_t jit_pid;
	/* Results on disk (symcache.h): looked up before the first lookup;
	 * stamp set when they may be stored; dirty when there is more to store. */
	bool disk_checked, disk_dirty;
	struct symcache_stamp *stamp;
	struct symcache_module dc;      /* the cache's find_debuginfo reads it (module userdata) */
	const char *cache_dir;          /* the symbolizer's; NULL: no cache */
};

/* One cached result: the frames of (module id, address). */
struct cache_entry {
	uint64_t addr;
	uint32_t id, gen;      /* a result of another generation of the module is stale */
	uint32_t first, count; /* frames[first .. first+count) */
};

struct ember_symbolizer {
	struct module **mods;
	size_t nmods;          /* capacity of mods: ids below it may be declared */
	uint32_t next_gen;
	struct cache_entry *cache;
	size_t ncache, cache_cap;
	struct ember_idtab cache_index; /* (id, addr) -> cache entry */
	struct ember_sym_frame *frames; /* every cached result, back to back */
	size_t nframes, frames_cap;
	struct sym_names names;
	struct kallsyms ksyms;
	char *kallsyms_path;            /* NULL: /proc/kallsyms */
	char *cache_dir;                /* the cache on disk (symcache.h); NULL: none */
};

static void module_free(struct module *m)
{
	if (!m)
		return;
	symtab_free(&m->syms);
	cu_index_free(&m->cus);
	if (m->dwfl)
		dwfl_end(m->dwfl);
	free(m->debuginfo_path);
	free(m->open_path);
	free(m->display_path);
	free(m->root);
	free(m->build_id);
	free(m->stamp);
	free(m);
}

struct ember_symbolizer *ember_symbolizer_new(void)
{
	/* Debian's libdw asks debuginfod for any module without local debug
	 * info when DEBUGINFOD_URLS is set: a network download per library in
	 * the middle of a report.  Symbolization stays local. */
	unsetenv("DEBUGINFOD_URLS");
	struct ember_symbolizer *sym = calloc(1, sizeof(*sym));
	if (!sym)
		return NULL;
	sym->cache_dir = symcache_dir_new();
	if (sym_names_init(&sym->names) < 0 || ember_idtab_init(&sym->cache_index) < 0) {
		ember_symbolizer_free(sym);
		return NULL;
	}
	return sym;
}

static void disk_save(struct ember_symbolizer *sym, uint32_t id, struct module *m);

void ember_symbolizer_free(struct ember_symbolizer *sym)
{
	if (!sym)
		return;
	for (size_t i = 0; i < sym->nmods; i++)
		if (sym->mods[i] && sym->mods[i]->disk_dirty)
			disk_save(sym, (uint32_t)i, sym->mods[i]);
	for (size_t i = 0; i < sym->nmods; i++)
		module_free(sym->mods[i]);
	free(sym->mods);
	free(sym->cache);
	ember_idtab_free(&sym->cache_index);
	free(sym->frames);
	sym_names_free(&sym->names);
	kallsyms_free(&sym->ksyms);
	free(sym->kallsyms_path);
	free(sym->cache_dir);
	free(sym);
}

int ember_symbolizer_set_kallsyms_path(struct ember_symbolizer *sym, const char *path)
{
	char *p = strdup(path);
	if (!p)
		return -1;
	free(sym->kallsyms_path);
	sym->kallsyms_path = p;
	return 0;
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int ember_symbolizer_add_module(struct ember_symbolizer *sym, uint32_t id,
				const char *open_path, const char *display_path,
				const uint8_t *build_id, size_t build_id_len)
{
	return ember_symbolizer_add_module_in_root(sym, id, open_path, display_path, NULL, build_id, build_id_len);
}

int ember_symbolizer_add_module_in_root(struct ember_symbolizer *sym, uint32_t id, const char *open_path,
					const char *display_path, const char *root, const uint8_t *build_id,
					size_t build_id_len)
{
	if (id >= MAX_MODULE_ID)
		return -1;
	if (!build_id)
		build_id_len = 0;
	if (id >= sym->nmods) {
		size_t old = sym->nmods;
		if (EMBER_GROW(sym->mods, sym->nmods, (size_t)id + 1) < 0)
			return -1;
		memset(sym->mods + old, 0, (sym->nmods - old) * sizeof(*sym->mods));
	}
	struct module *old = sym->mods[id];
	if (old && str_eq(old->open_path, open_path) && str_eq(old->display_path, display_path) &&
	    str_eq(old->root, root) &&
	    old->build_id_len == build_id_len &&
	    (build_id_len == 0 || memcmp(old->build_id, build_id, build_id_len) == 0))
		return 0; /* same declaration again: keep the opened module */

	struct module *m = calloc(1, sizeof(*m));
	if (!m)
		return -1;
	const char *shown = display_path && display_path[0] ? display_path : open_path;
	if (!shown || !shown[0])
		shown = "unknown";
	const char *base = strrchr(shown, '/');
	base = base && base[1] ? base + 1 : shown;
	size_t blen = strlen(base);
	m->name = ember_strtab_cstr(sym->names.strs, base);
	/* "[vdso]" reads "[vdso+0x...]" rather than "[[vdso]+0x...]". */
	if (blen > 2 && base[0] == '[' && base[blen - 1] == ']')
		m->fallback = ember_strtab_intern(sym->names.strs, base + 1, blen - 2);
	else
		m->fallback = m->name;
	m->open_path = open_path ? strdup(open_path) : NULL;
	m->display_path = display_path ? strdup(display_path) : NULL;
	m->root = root ? strdup(root) : NULL;
	if (build_id_len) {
		m->build_id = malloc(build_id_len);
		if (m->build_id)
			memcpy(m->build_id, build_id, build_id_len);
	}
	if (!m->name || !m->fallback || (open_path && !m->open_path) ||
	    (display_path && !m->display_path) || (root && !m->root) || (build_id_len && !m->build_id)) {
		module_free(m);
		return -1;
	}
	m->build_id_len = build_id_len;
	m->cache_dir = sym->cache_dir;
	m->gen = ++sym->next_gen;
	m->state = open_path ? MOD_UNOPENED : MOD_FAILED;
	/* Frames already returned for the old declaration point only at
	 * interned strings, so its Dwfl can go now. */
	module_free(old);
	sym->mods[id] = m;
	return 0;
}

int ember_symbolizer_add_jit_module(struct ember_symbolizer *sym, uint32_t id, const char *name, uint32_t pid,
				    struct ember_jit_map *jm)
{
	if (ember_symbolizer_add_module(sym, id, NULL, "jit", NULL, 0) < 0)
		return -1;
	struct module *m = sym->mods[id];
	m->name = m->fallback = ember_strtab_cstr(sym->names.strs, name && name[0] ? name : "[jit]");
	if (!m->name)
		return -1;
	m->jit = jm;
	m->jit_pid = pid ? pid : UINT32_MAX;
	m->gen = ++sym->next_gen;   /* (a JIT module is never the same declaration twice) */
	return 0;
}

/* A JIT address: named by the process's perf map or jitdump, else by its
 * mapping ("[jit]", "[anon:NAME]"), never an offset (JIT addresses mean
 * nothing in another run). */
static size_t resolve_jit(struct ember_symbolizer *sym, struct module *m, uint64_t addr, struct ember_sym_frame *tmp)
{
	const char *raw = ember_jit_map_lookup(m->jit, (pid_t)m->jit_pid, addr, NULL);
	const char *name = raw ? ember_readable_name(&sym->names, raw) : NULL;
	tmp[0] = (struct ember_sym_frame){ .function = name ? name : m->name, .file = "", .line = 0,
					   .module = "[jit]", .inlined = false, .has_symbol = name != NULL };
	return 1;
}

/* Debug-file search path.  The default (":.debug:/usr/lib/debug") looks next
 * to open_path -- for a container that is already inside /proc/PID/root --
 * and under the host's /usr/lib/debug, by build-id and by .gnu_debuglink.
 * With the process's root declared, or when open_path is
 * "<root><display_path>", we also search <root>/usr/lib/debug first, so a
 * container's (a chroot's) own debug packages are found.  Host files found by
 * build-id are still right (same build-id); by name, the CRC32 check guards. */
static int set_debuginfo_path(struct module *m)
{
	if (m->debuginfo_path)
		return 0;
	if (m->root) {
		if (asprintf(&m->debuginfo_path, ":.debug:%s/usr/lib/debug:/usr/lib/debug", m->root) < 0) {
			m->debuginfo_path = NULL;
			return -1;
		}
		return 0;
	}
	const char *o = m->open_path, *d = m->display_path;
	if (!d || d[0] != '/')
		return 0;
	size_t ol = strlen(o), dl = strlen(d);
	if (ol <= dl || strcmp(o + ol - dl, d) != 0)
		return 0;
	int rl = (int)(ol - dl);
	/* Build-id lookups only use absolute directories.  (No realpath: it
	 * would resolve /proc/PID/root to the wrong place.) */
	char cwd[4096] = "";
	if (o[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		return 0;
	if (asprintf(&m->debuginfo_path, ":.debug:%s%s%.*s/usr/lib/debug:/usr/lib/debug",
		     cwd, cwd[0] ? "/" : "", rl, o) < 0) {
		m->debuginfo_path = NULL;
		return -1;
	}
	return 0;
}

/* Open the module's file with libdwfl.  Failure is remembered: the file is
 * not retried for every address. */
static void module_open(struct module *m)
{
	m->state = MOD_FAILED;
	if (set_debuginfo_path(m) < 0)
		return;
	m->cb = (Dwfl_Callbacks){
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = m->cache_dir ? symcache_find_debuginfo : dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &m->debuginfo_path,
	};
	m->dwfl = dwfl_begin(&m->cb);
	if (!m->dwfl)
		return;
	dwfl_report_begin(m->dwfl);
	/* base 0 + add_p_vaddr: bias 0, so module addresses are the file's
	 * own p_vaddr-based addresses for ET_DYN as for ET_EXEC.  fd -1: libdwfl
	 * opens the file and closes it in dwfl_end. */
	m->mod = dwfl_report_elf(m->dwfl, m->name, m->open_path, -1, 0, true);
	dwfl_report_end(m->dwfl, NULL, NULL);
	if (!m->mod)
		goto fail;
	void **userdata;
	m->dc = (struct symcache_module){ .search = &m->debuginfo_path, .dir = m->cache_dir };
	if (dwfl_module_info(m->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL))
		*userdata = &m->dc;
	if (m->build_id_len) {
		/* A file replaced on disk since it was mapped would give wrong
		 * names, which is worse than none.  Compare the common prefix:
		 * some sources pad build-ids to 20 bytes. */
		const unsigned char *bits;
		GElf_Addr vaddr;
		int len = dwfl_module_build_id(m->mod, &bits, &vaddr);
		if (len > 0) {
			size_t n = (size_t)len < m->build_id_len ? (size_t)len : m->build_id_len;
			if (memcmp(bits, m->build_id, n) != 0)
				goto fail;
		}
	}
	if (symtab_build(&m->syms, m->mod) < 0)
		goto fail;
	m->state = MOD_OPEN;
	return;
fail:
	symtab_free(&m->syms);
	dwfl_end(m->dwfl);
	m->dwfl = NULL;
	m->mod = NULL;
}

static struct ember_sym_frame fallback_frame(struct ember_symbolizer *sym, const char *name,
					     const char *module, uint64_t addr)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "[%.80s+0x%" PRIx64 "]", name, addr);
	const char *f = ember_strtab_cstr(sym->names.strs, buf);
	/* Under OOM, a static string is still better than NULL. */
	return (struct ember_sym_frame){ .function = f ? f : "[unknown]", .file = "", .line = 0,
					 .module = module, .inlined = false, .has_symbol = false };
}

static const char *readable_or(struct ember_symbolizer *sym, const char *raw, const char *dflt)
{
	const char *r = raw ? ember_readable_name(&sym->names, raw) : NULL;
	return r ? r : dflt;
}

/* Resolve one address of an opened module into tmp[] (EMBER_MAX_INLINE
 * entries), innermost first.  Never fails: the worst case is a fallback. */
static size_t resolve(struct ember_symbolizer *sym, struct module *m, uint64_t addr,
		      struct ember_sym_frame *tmp)
{
	if (m->jit_pid)
		return resolve_jit(sym, m, addr, tmp);
	if (m->state == MOD_UNOPENED)
		module_open(m);
	if (m->state != MOD_OPEN) {
		tmp[0] = fallback_frame(sym, m->fallback, m->name, addr);
		return 1;
	}
	struct sym_entry *se = symtab_find(&m->syms, addr);
	if (se && !se->readable)
		se->readable = ember_readable_name(&sym->names, se->raw);
	const char *sym_name = se ? se->readable : NULL;

	struct dw_frame dw[EMBER_MAX_INLINE];
	size_t n = dw_inline_chain(&m->cus, m->mod, addr, dw, EMBER_MAX_INLINE);
	if (n == 0) {
		if (!sym_name) {
			tmp[0] = fallback_frame(sym, m->fallback, m->name, addr);
			return 1;
		}
		tmp[0] = (struct ember_sym_frame){ .function = sym_name, .file = "", .line = 0,
						   .module = m->name, .has_symbol = true };
		return 1;
	}
	/* The containing function is named after the ELF symbol when there
	 * is one (it shows clones: "hot.cold", "f.constprop.0"), else after
	 * the DWARF subprogram.  With neither, inlined frames alone would be
	 * misleading: fall back. */
	const char *outer = sym_name ? sym_name : readable_or(sym, dw[n - 1].name, NULL);
	if (!outer) {
		tmp[0] = fallback_frame(sym, m->fallback, m->name, addr);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		const char *file = dw[i].file ? ember_strtab_cstr(sym->names.strs, dw[i].file) : NULL;
		tmp[i] = (struct ember_sym_frame){
			.function = i + 1 == n ? outer : readable_or(sym, dw[i].name, "??"),
			.file = file ? file : "",
			.line = dw[i].line,
			.module = m->name,
			.inlined = dw[i].inlined,
			.has_symbol = true,
		};
	}
	return n;
}

struct cache_key {
	uint64_t addr;
	uint32_t id;
};

/* One mix is enough: every bit of the address reaches the low bits. */
static uint64_t cache_hash(uint32_t id, uint64_t addr)
{
	return ember_hash_mix(addr ^ (uint64_t)id * EMBER_HASH_GOLDEN);
}

static bool cache_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct cache_entry *e = &((const struct ember_symbolizer *)ctx)->cache[idx];
	const struct cache_key *k = key;

	return e->addr == k->addr && e->id == k->id;
}

/* Remember tmp[0..n) for (id, addr) in entry idx (UINT32_MAX: a new one;
 * otherwise a stale result of a re-declared module, whose old frames stay
 * in the pool unreferenced: re-declaration is rare).  Failing (OOM) only
 * loses caching. */
static void cache_put(struct ember_symbolizer *sym, struct module *m, uint32_t idx, uint64_t hash,
		      const struct cache_key *k, const struct ember_sym_frame *tmp, size_t n)
{
	if (sym->nframes + n > UINT32_MAX || EMBER_GROW(sym->frames, sym->frames_cap, sym->nframes + n) < 0)
		return;
	if (idx == UINT32_MAX) {
		if (sym->ncache >= UINT32_MAX - 1 || EMBER_GROW(sym->cache, sym->cache_cap, sym->ncache + 1) < 0 ||
		    ember_idtab_insert(&sym->cache_index, hash, (uint32_t)sym->ncache) < 0)
			return;
		idx = (uint32_t)sym->ncache++;
	}
	sym->cache[idx] = (struct cache_entry){ .addr = k->addr, .id = k->id, .gen = m->gen,
						.first = (uint32_t)sym->nframes, .count = (uint32_t)n };
	memcpy(sym->frames + sym->nframes, tmp, n * sizeof(*tmp));
	sym->nframes += n;
}

/* Copy a result out.  When it does not fit, keep the innermost max - 1
 * frames and the containing function, which is what a profile most needs. */
static size_t copy_out(struct ember_sym_frame *out, size_t max,
		       const struct ember_sym_frame *fr, size_t n)
{
	if (n <= max) {
		memcpy(out, fr, n * sizeof(*fr));
		return n;
	}
	memcpy(out, fr, (max - 1) * sizeof(*fr));
	out[max - 1] = fr[n - 1];
	return max;
}

/* ---- results on disk (symcache.h) ---- */

struct disk_load_ctx {
	struct ember_symbolizer *sym;
	struct module *m;
	uint32_t id;
};

static void disk_load_one(void *arg, uint64_t addr, const struct symcache_frame *f, size_t n)
{
	struct disk_load_ctx *c = arg;
	struct ember_symbolizer *sym = c->sym;
	struct ember_sym_frame tmp[EMBER_MAX_INLINE];
	if (n > EMBER_MAX_INLINE)
		return;
	for (size_t i = 0; i < n; i++) {
		if (!f[i].function) {
			tmp[i] = fallback_frame(sym, c->m->fallback, c->m->name, addr);
			continue;
		}
		const char *fn = ember_strtab_cstr(sym->names.strs, f[i].function);
		const char *file = ember_strtab_cstr(sym->names.strs, f[i].file);
		if (!fn || !file)
			return;
		tmp[i] = (struct ember_sym_frame){ .function = fn, .file = file, .line = f[i].line, .module = c->m->name,
						   .inlined = f[i].inlined, .has_symbol = f[i].has_symbol };
	}
	struct cache_key k = { .addr = addr, .id = c->id };
	uint64_t h = cache_hash(c->id, addr);
	uint32_t idx = ember_idtab_find(&sym->cache_index, h, cache_eq, sym, &k);
	if (idx == UINT32_MAX || sym->cache[idx].gen != c->m->gen)
		cache_put(sym, c->m, idx, h, &k, tmp, n);
}

/* Before a module's first lookup: its results from an earlier run, when
 * the file is the one declared (its build-id) and the one they were made
 * from (size, section table), and the debug file that would be found is the
 * one they were made with.  Only then are new results stored (m->stamp). */
static void disk_load(struct ember_symbolizer *sym, uint32_t id, struct module *m)
{
	m->disk_checked = true;
	const char *dir = m->cache_dir;
	if (!dir || m->jit_pid || !m->build_id_len || !m->open_path || set_debuginfo_path(m) < 0 ||
	    !(m->stamp = malloc(sizeof(*m->stamp))))
		return;
	if (!symcache_stamp(m->open_path, m->debuginfo_path, m->build_id, m->build_id_len, m->stamp)) {
		free(m->stamp);
		m->stamp = NULL;
		return;
	}
	struct disk_load_ctx c = { sym, m, id };
	symcache_results_load(dir, m->build_id, m->build_id_len, m->stamp, disk_load_one, &c);
}

/* Store every result of module id (loaded and new) for the next run, when
 * the debug file libdwfl took is the one the stamp names (not one found by
 * .gnu_debuglink, which the stamp does not see). */
static void disk_save(struct ember_symbolizer *sym, uint32_t id, struct module *m)
{
	const char *dir = m->cache_dir;
	const char *mainfile = NULL, *debugfile = NULL;
	if (!dir || !m->stamp || m->state != MOD_OPEN)
		return;
	dwfl_module_info(m->mod, NULL, NULL, NULL, NULL, NULL, &mainfile, &debugfile);
	if (m->stamp->debug.path[0] ? !debugfile || (strcmp(debugfile, m->stamp->debug.path) != 0 &&
					       strncmp(debugfile, dir, strlen(dir)) != 0)
			      : debugfile && (!mainfile || strcmp(debugfile, mainfile) != 0))
		return;
	struct symcache_buf b = { 0 };
	struct symcache_frame f[EMBER_MAX_INLINE];
	for (size_t i = 0; i < sym->ncache; i++) {
		const struct cache_entry *e = &sym->cache[i];
		if (e->id != id || e->gen != m->gen || e->count > EMBER_MAX_INLINE)
			continue;
		for (uint32_t k = 0; k < e->count; k++) {
			const struct ember_sym_frame *fr = &sym->frames[e->first + k];
			f[k] = (struct symcache_frame){ .function = fr->has_symbol ? fr->function : NULL,
							.file = fr->file, .line = fr->line,
							.inlined = fr->inlined, .has_symbol = fr->has_symbol };
		}
		symcache_buf_add(&b, e->addr, f, e->count);
	}
	symcache_results_save(dir, m->build_id, m->build_id_len, m->stamp, &b, symcache_bound());
	symcache_buf_free(&b);
}

size_t ember_symbolize(struct ember_symbolizer *sym, uint32_t id, uint64_t addr,
		       struct ember_sym_frame *out, size_t max)
{
	if (max == 0)
		return 0;
	struct module *m = id < sym->nmods ? sym->mods[id] : NULL;
	if (!m) {
		/* Not cached: the module may be declared later. */
		out[0] = fallback_frame(sym, "unknown", "unknown", addr);
		return 1;
	}
	struct cache_key k = { .addr = addr, .id = id };
	uint64_t h = cache_hash(id, addr);
	uint32_t idx = ember_idtab_find(&sym->cache_index, h, cache_eq, sym, &k);
	if (idx != UINT32_MAX && sym->cache[idx].gen == m->gen)
		return copy_out(out, max, sym->frames + sym->cache[idx].first, sym->cache[idx].count);
	if (!m->disk_checked) {
		disk_load(sym, id, m);
		idx = ember_idtab_find(&sym->cache_index, h, cache_eq, sym, &k);
		if (idx != UINT32_MAX && sym->cache[idx].gen == m->gen)
			return copy_out(out, max, sym->frames + sym->cache[idx].first, sym->cache[idx].count);
	}
	if (m->stamp)
		m->disk_dirty = true;
	struct ember_sym_frame tmp[EMBER_MAX_INLINE];
	size_t n = resolve(sym, m, addr, tmp);
	cache_put(sym, m, idx, h, &k, tmp, n);
	return copy_out(out, max, tmp, n);
}

size_t ember_symbolize_kernel(struct ember_symbolizer *sym, uint64_t addr,
			      struct ember_sym_frame *out, size_t max)
{
	static const char kmod[] = "[kernel.kallsyms]";
	if (max == 0)
		return 0;
	if (!sym->ksyms.loaded)
		kallsyms_load(&sym->ksyms, sym->kallsyms_path ? sym->kallsyms_path : "/proc/kallsyms");
	/* Kernel names need no demangling and live in the kallsyms table until
	 * the symbolizer is freed; a binary search is cheap enough uncached. */
	const char *name = kallsyms_lookup(&sym->ksyms, addr);
	if (name)
		out[0] = (struct ember_sym_frame){ .function = name, .file = "", .line = 0,
						   .module = kmod, .has_symbol = true };
	else
		out[0] = fallback_frame(sym, "kernel", kmod, addr);
	return 1;
}
