/* ember symbolizer: addresses to functions, inline chains, source lines.
 *
 * Cold path only.  Capture records every native PC as (module id, ELF address):
 * the address in the module's own ELF virtual-address space (pc - load bias),
 * the same number `addr2line -e FILE` takes.  Caller frames are already pc - 1.
 * The symbolizer turns such an address into one or more frames: the inline
 * chain, innermost (inlined callee) first, the containing function last.
 *
 * Per module it builds once: a libdw Dwfl for the file (separate debug info
 * found by build-id and .gnu_debuglink), and a sorted table of STT_FUNC
 * symbols from .symtab (the file's or its debug file's), or .dynsym joined
 * by the MiniDebugInfo of .gnu_debugdata when there is none (binary search;
 * never dwfl_module_addrinfo, which scans linearly).  Results are cached per
 * (module, address).  C++ (and Rust legacy) names are demangled; symbol
 * versions ("@@GLIBC_2.34") are dropped; GCC clone suffixes stay visible
 * ("hot.cold", "f(int) [clone .cold]").  The containing function is named
 * after the ELF symbol, inlined frames after their DWARF origin.
 *
 * Debug files are looked up locally only: ember_symbolizer_new() unsets
 * DEBUGINFOD_URLS for the whole process.  For a module declared with its
 * process's root (ember_symbolizer_add_module_in_root: a chroot, a
 * container), or whose open_path is "<root><display_path>", debug files are
 * also searched under <root>/usr/lib/debug before the host's.
 *
 * An address with no symbol resolves to one frame named "[module+0xADDR]"
 * ("[vdso+0x...]" for a bracketed name like "[vdso]"); so does every address
 * of a module that cannot be opened, is not ELF, is truncated, or whose
 * build-id differs from the one declared (the file was replaced).
 * Kernel addresses resolve through /proc/kallsyms, named with the "_[k]"
 * convention left to exporters (the frame kind says kernel).
 *
 * Debug files whose sections are compressed are cached decompressed on
 * disk, and each module's results too, keyed by build-id, under
 * $XDG_CACHE_HOME/ember/symbols (symcache.h, docs/symbolization.md);
 * results are the same with the cache or without.
 *
 * Not thread-safe.  All returned strings are owned by the symbolizer and live
 * until ember_symbolizer_free. */
#ifndef EMBER_SYMBOLIZER_H
#define EMBER_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ember_symbolizer;

struct ember_sym_frame {
	const char *function;  /* demangled name, or "[module+0x1234]" */
	const char *file;      /* source file path, "" when unknown */
	uint32_t line;         /* 0 when unknown */
	const char *module;    /* module basename ("libc.so.6"), "[kernel.kallsyms]" for kernel */
	bool inlined;          /* this frame was inlined into the next one in the array */
	bool has_symbol;       /* false for the "[module+0x...]" fallback */
};

struct ember_symbolizer *ember_symbolizer_new(void);

/* Whether symbolizers made from now on use the cache on disk (default on;
 * off: --no-symbol-cache).  Process-wide. */
void ember_symbolizer_set_disk_cache(bool on);
void ember_symbolizer_free(struct ember_symbolizer *sym);

/* Declare module `id` (ids are chosen by the caller, small and dense: the
 * table is indexed by id, ids >= 2^24 are refused).
 * open_path: path ember can open (e.g. "/proc/PID/root/usr/lib/libc.so.6");
 * display_path: the path as the target saw it (its basename is the module
 * name; with open_path it locates the container root, see above; the
 * .gnu_debuglink file is searched next to open_path); build_id may be NULL.
 * Declaring an id again with the same arguments is a no-op; with different
 * ones it replaces the module (strings already returned stay valid).
 * Opening is deferred to the first lookup.  Returns 0, or -1 on OOM or an
 * out-of-range id. */
int ember_symbolizer_add_module(struct ember_symbolizer *sym, uint32_t id,
				const char *open_path, const char *display_path,
				const uint8_t *build_id, size_t build_id_len);
/* The same, for a file of a process whose root directory is not ember's (a
 * chroot, a container): root is a path to that directory ember can open
 * ("/proc/self/fd/N"), where debug files are searched under usr/lib/debug
 * before the host's.  NULL root: as ember_symbolizer_add_module. */
int ember_symbolizer_add_module_in_root(struct ember_symbolizer *sym, uint32_t id, const char *open_path,
					const char *display_path, const char *root, const uint8_t *build_id,
					size_t build_id_len);

/* Declare module `id` as the JIT code of process pid (anonymous executable
 * memory, addresses absolute): an address is named by that process's perf
 * map or jitdump in jm (may be NULL), else it is one frame named `name`
 * ("[jit]", "[anon:NAME]").  The module name of its frames is "[jit]".
 * jm must outlive the symbolizer's lookups.  0, or -1 on OOM. */
struct ember_jit_map;
int ember_symbolizer_add_jit_module(struct ember_symbolizer *sym, uint32_t id, const char *name, uint32_t pid,
				    struct ember_jit_map *jm);

/* Resolve ELF address `addr` of module `id` into at most `max` frames written
 * to out[], innermost first.  Returns the number of frames (>= 1 when max >= 1;
 * an unknown module or address still yields the "[module+0x...]" frame, and an
 * undeclared id "[unknown+0x...]").  A chain longer than max keeps its
 * innermost max - 1 frames and the containing function (so max == 1 gives
 * the containing function).  Chains are capped at 32 frames the same way. */
size_t ember_symbolize(struct ember_symbolizer *sym, uint32_t id, uint64_t addr,
		       struct ember_sym_frame *out, size_t max);

/* Resolve a kernel address (from PERF_SAMPLE_CALLCHAIN) with /proc/kallsyms,
 * read once on first use (text symbols only; a symbol runs to the next one).
 * One frame; "[kernel.kallsyms]" module; fallback "[kernel+0xADDR]" when
 * kallsyms is unreadable, hides addresses (kptr_restrict: all zero), or no
 * symbol is within 1 MiB below addr. */
size_t ember_symbolize_kernel(struct ember_symbolizer *sym, uint64_t addr,
			      struct ember_sym_frame *out, size_t max);

/* Whether /proc/kallsyms shows this process the kernel's addresses: false
 * when kernel.kptr_restrict (or, at 0, perf_event_paranoid >= 2) hides them
 * from a process without CAP_SYSLOG, and kernel frames stay "[kernel+0x...]". */
bool ember_kernel_symbols_visible(void);

#endif
