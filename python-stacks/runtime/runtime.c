/* Finding the CPython runtime in a live process (libpython or the
 * executable; PIE, non-PIE, stripped): the mapped file, opened through
 * /proc/PID/map_files (the bytes actually mapped) and its build-id checked
 * against the process's memory; the exact version from the process; the
 * offsets of that version, the type objects, the interpreter list and the
 * GIL holder slot.  Never runs the target's binary. */
#define _GNU_SOURCE
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf_view.h"
#include "grow.h"
#include "proc.h"
#include "py_runtime.h"

#define SCAN_LIMIT (64u << 20)  /* bytes of writable data scanned for sys.version */
#define SCAN_CHUNK (1u << 20)

/* One mapping of the target (path NULL: anonymous). */
struct map {
	uint64_t start, end, offset, inode;
	char perms[5];
	char *path;
};

/* What the search holds while it runs. */
struct find {
	struct map *maps;
	size_t nmaps, maps_cap;
	bool maps_oom;
	const struct map *obj;          /* the mapping of the runtime object at offset 0 */
	struct ember_elf elf;
	uint64_t bias;
	bool lib;                       /* libpython, not the executable */
	int lib_major, lib_minor;
	char abi[8];                    /* its name's ABI flags ("m", "d", "t") */
	char how[160];                  /* where the version came from */
	bool free_threaded, debug;
	uint64_t sym[32], sym_size[32]; /* enum sym, absolute (0: none) */
};

enum sym {
	S_RUNTIME, S_INTERP_HEAD, S_INTERP_HEAD_FN, S_PY_VERSION, S_REFTOTAL, S_NEGATIVE_REFCNT, S_CODE_TYPE,
	S_FRAME_TYPE, S_STRING_TYPE, S_UNICODE_TYPE, S_BYTES_TYPE, S_TYPE_TYPE, S_TSTATE_CURRENT, S_EVAL_EX,
	S_EVAL_EX_COLD, S_EVAL_DEFAULT, S_EVAL_DEFAULT_COLD, S_N
};
static const char *const sym_names[S_N] = {
	"_PyRuntime", "interp_head", "PyInterpreterState_Head", "Py_Version", "_Py_RefTotal", "_Py_NegativeRefcount",
	"PyCode_Type", "PyFrame_Type", "PyString_Type", "PyUnicode_Type", "PyBytes_Type", "PyType_Type",
	"_PyThreadState_Current", "PyEval_EvalFrameEx", "PyEval_EvalFrameEx.cold", "_PyEval_EvalFrameDefault",
	"_PyEval_EvalFrameDefault.cold",
};

static int fail(char *msg, size_t msglen, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (msg && msglen)
		vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
	return status;
}

/* What a permission error reading another process needs, for its message. */
static const char *access_hint(int err)
{
	return err == EACCES || err == EPERM ? " (it belongs to another user or is not dumpable: run as that user, "
					       "as root, or with CAP_SYS_PTRACE)" : "";
}

static bool rd(struct ember_python *py, uint64_t addr, void *buf, size_t len)
{
	return rm_read(py->pid, addr, buf, len, NULL, &py->syscalls);
}

/* "libpython3.11.so.1.0", "libpython3.6m.so", "libpython3.13t.so" */
static bool is_libpython(const char *path, int *maj, int *min, char *abi, size_t abilen)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	if (strncmp(b, "libpython", 9) != 0)
		return false;
	const char *p = b + 9;
	if (!isdigit((unsigned char)p[0]) || p[1] != '.' || !isdigit((unsigned char)p[2]))
		return false;
	*maj = p[0] - '0';
	*min = (int)strtol(p + 2, (char **)&p, 10);
	size_t k = 0;
	while (islower((unsigned char)*p) && k + 1 < abilen)
		abi[k++] = *p++;
	abi[k] = 0;
	return strncmp(p, ".so", 3) == 0;
}

/* ------------------------------------------------------------ the mapping */

static bool collect_map(void *arg, const struct ember_proc_map *m)
{
	struct find *f = arg;
	if (EMBER_GROW(f->maps, f->maps_cap, f->nmaps + 1) != 0) {
		f->maps_oom = true;
		return false;
	}
	struct map *e = &f->maps[f->nmaps];
	*e = (struct map){ .start = m->lo, .end = m->hi, .offset = m->offset, .inode = m->inode };
	memcpy(e->perms, m->perms, sizeof e->perms);
	if (m->path[0] && m->inode && !(e->path = strdup(m->path))) {
		f->maps_oom = true;
		return false;
	}
	f->nmaps++;
	return true;
}

static void find_free(struct find *f)
{
	for (size_t i = 0; i < f->nmaps; i++)
		free(f->maps[i].path);
	free(f->maps);
	if (f->elf.data)
		ember_elf_close(&f->elf);
}

/* The object holding the runtime: libpython if mapped, else the executable. */
static int find_object(struct ember_python *py, struct find *f, char *msg, size_t msglen)
{
	char exe[4096];
	int rc = ember_proc_maps(py->pid, collect_map, f);
	/* An ended process: no /proc entry, or a zombie's empty maps. */
	if ((rc == 0 && !f->nmaps) || rc == -ESRCH || rc == -ENOENT)
		return fail(msg, msglen, EMBER_PY_GONE, "pid %d: the process has ended", (int)py->pid);
	if (rc < 0)
		return fail(msg, msglen, EMBER_PY_NO_ACCESS, "pid %d: cannot read /proc/%d/maps: %s%s", (int)py->pid,
			    (int)py->pid, strerror(-rc), access_hint(-rc));
	/* Its executable link hidden (another user's process, whose maps
	 * CAP_PERFMON still shows): its memory is out of reach too, which is
	 * not "no Python runtime". */
	ssize_t en = ember_proc_exe(py->pid, exe, sizeof exe);
	if (en == -EACCES || en == -EPERM)
		return fail(msg, msglen, EMBER_PY_NO_ACCESS, "pid %d: cannot read /proc/%d/exe: %s%s", (int)py->pid,
			    (int)py->pid, strerror((int)-en), access_hint((int)-en));
	if (en < 0)
		exe[0] = 0;
	int a, b;
	char abi[8];
	for (size_t i = 0; i < f->nmaps && !f->obj; i++)
		if (f->maps[i].path && f->maps[i].offset == 0 && is_libpython(f->maps[i].path, &a, &b, abi, sizeof abi))
			f->obj = &f->maps[i];
	for (size_t i = 0; i < f->nmaps && !f->obj; i++)
		if (f->maps[i].path && f->maps[i].offset == 0 && strcmp(f->maps[i].path, exe) == 0)
			f->obj = &f->maps[i];
	if (!f->obj)
		return fail(msg, msglen, EMBER_PY_NOT_PYTHON, "pid %d: %s: no CPython runtime (no libpython mapped)",
			    (int)py->pid, exe[0] ? exe : "?");
	f->lib = is_libpython(f->obj->path, &f->lib_major, &f->lib_minor, f->abi, sizeof f->abi);
	return EMBER_PY_OK;
}

/* A 64-bit little-endian ELF file of ember's own machine with a PT_LOAD
 * at file offset 0. */
static int open_elf(struct ember_elf *e, const char *path)
{
	int rc = ember_elf_open(e, path);
	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < e->nloads; i++)
		if (e->loads[i].offset == 0 && e->machine == EMBER_ELF_MACHINE)
			return 0;
	ember_elf_close(e);
	return -ENOEXEC;
}

/* Every symbol of enum sym, in one pass: absolute addresses (0: none). */
static void lookup(struct find *f)
{
	ember_elf_symbols(&f->elf, sym_names, S_N, f->sym, f->sym_size);
	for (int i = 0; i < S_N; i++)
		f->sym[i] = f->sym[i] ? f->sym[i] + f->bias : 0;
}

/* The same bytes the process mapped: map_files, then its root, then the
 * path; its symbols; and whether its memory can be read at all. */
static int open_object(struct ember_python *py, struct find *f, char *msg, size_t msglen)
{
	const struct map *obj = f->obj;
	char *path = py->rt.opened;
	size_t len = sizeof py->rt.opened;
	snprintf(path, len, "/proc/%d/map_files/%llx-%llx", (int)py->pid, (unsigned long long)obj->start,
		 (unsigned long long)obj->end);
	int rc = open_elf(&f->elf, path);
	if (rc < 0) {
		snprintf(path, len, "/proc/%d/root%s", (int)py->pid, obj->path);
		rc = open_elf(&f->elf, path);
	}
	if (rc < 0) {
		snprintf(path, len, "%s", obj->path);
		rc = open_elf(&f->elf, path);
	}
	if (rc < 0)
		return fail(msg, msglen, rc == -ENOEXEC ? EMBER_PY_NOT_PYTHON : EMBER_PY_NO_ACCESS,
			    "pid %d: cannot open %s: %s", (int)py->pid, obj->path, strerror(-rc));
	uint8_t probe[8];
	int err = 0;
	if (!rm_read(py->pid, obj->start, probe, sizeof probe, &err, &py->syscalls) && (err == EPERM || err == ESRCH))
		return fail(msg, msglen, EMBER_PY_NO_ACCESS, "pid %d: cannot read its memory: %s%s", (int)py->pid,
			    strerror(err), access_hint(err));
	f->bias = ember_elf_bias(&f->elf, obj->start, 0);
	snprintf(py->rt.path, sizeof py->rt.path, "%s", obj->path);
	py->rt.bias = f->bias;
	lookup(f);
	if (!f->sym[S_RUNTIME]) {
		uint64_t sec = ember_elf_section(&f->elf, ".PyRuntime", NULL);
		f->sym[S_RUNTIME] = sec ? sec + f->bias : 0;
	}
	if (!f->sym[S_RUNTIME] && !f->sym[S_INTERP_HEAD] && !f->sym[S_INTERP_HEAD_FN])
		return fail(msg, msglen, EMBER_PY_NOT_PYTHON,
			    "pid %d: %s: no CPython runtime (no _PyRuntime, interp_head or PyInterpreterState_Head)",
			    (int)py->pid, obj->path);
	/* Build-id of the file we parsed vs. the bytes the process mapped. */
	if (f->elf.build_id_len && f->elf.build_id_vaddr && !py->opts.no_build_id_check) {
		uint8_t live[20];
		if (rd(py, f->elf.build_id_vaddr + f->bias, live, f->elf.build_id_len) &&
		    memcmp(live, f->elf.build_id, f->elf.build_id_len) != 0)
			return fail(msg, msglen, EMBER_PY_ERROR,
				    "pid %d: %s: build-id of the file differs from the mapped one (replaced on disk?)",
				    (int)py->pid, obj->path);
	}
	return EMBER_PY_OK;
}

/* ------------------------------------------------------------ the version */

/* Find "X.Y.Z[abc..N][+] (" in buf (sys.version's start). */
static bool find_version_string(const uint8_t *buf, size_t n, int *maj, int *min, int *mic)
{
	for (size_t i = 0; i + 8 < n; i++) {
		if ((buf[i] != '2' && buf[i] != '3') || buf[i + 1] != '.' || (i && isdigit(buf[i - 1])))
			continue;
		size_t j = i + 2;
		int a = 0, b = 0, nd = 0;
		while (j < n && isdigit(buf[j]) && nd < 3) { a = a * 10 + buf[j++] - '0'; nd++; }
		if (!nd || j >= n || buf[j] != '.')
			continue;
		j++; nd = 0;
		while (j < n && isdigit(buf[j]) && nd < 3) { b = b * 10 + buf[j++] - '0'; nd++; }
		if (!nd)
			continue;
		while (j < n && (isalnum(buf[j]) || buf[j] == '+') && j - i < 24)
			j++;
		if (j + 1 < n && buf[j] == ' ' && buf[j + 1] == '(') {
			*maj = buf[i] - '0';
			*min = a;
			*mic = b;
			return true;
		}
	}
	return false;
}

/* sys.version's text in the object's writable memory (and the bss after it). */
static bool scan_version(struct ember_python *py, const struct find *f, int *maj, int *min, int *mic)
{
	size_t budget = SCAN_LIMIT;
	uint8_t *buf = malloc(SCAN_CHUNK);
	bool found = false;
	if (!buf)
		return false;
	for (size_t i = 0; i < f->nmaps && !found; i++) {
		const struct map *e = &f->maps[i];
		bool mine = e->inode == f->obj->inode && e->perms[1] == 'w';
		bool bss = !e->path && i && f->maps[i - 1].inode == f->obj->inode && e->perms[1] == 'w' &&
			   f->maps[i - 1].end == e->start;
		if (!mine && !bss)
			continue;
		for (uint64_t a = e->start; a < e->end && budget && !found; a += SCAN_CHUNK - 64) {
			size_t len = e->end - a < SCAN_CHUNK ? e->end - a : SCAN_CHUNK;
			if (len > budget)
				len = budget;
			budget -= len;
			if (!rd(py, a, buf, len))
				break;
			found = find_version_string(buf, len, maj, min, mic);
			if (len < SCAN_CHUNK)
				break;
		}
	}
	free(buf);
	return found;
}

/* The exact version, most trustworthy source first: the 3.13+
 * _Py_DebugOffsets cookie, Py_Version, sys.version in memory, the library
 * name.  Also whether the build is free-threaded. */
static int find_version(struct ember_python *py, struct find *f, char *msg, size_t msglen)
{
	struct py_runtime *rt = &py->rt;
	int maj = 0, min = 0, mic = -1, level = 0xf, serial = 0;
	uint8_t cookie[24];
	uint64_t runtime = f->sym[S_RUNTIME], v64, ft;
	uint32_t v = 0;
	if (runtime && rd(py, runtime, cookie, sizeof cookie) && memcmp(cookie, "xdebugpy", 8) == 0) {
		memcpy(&v64, cookie + 8, 8);
		memcpy(&ft, cookie + 16, 8);
		v = (uint32_t)v64;
		f->free_threaded = ft != 0;
		snprintf(f->how, sizeof f->how, "version from _Py_DebugOffsets");
	} else if (f->sym[S_PY_VERSION] && rd(py, f->sym[S_PY_VERSION], &v, 4)) {
		snprintf(f->how, sizeof f->how, "version from Py_Version");
	}
	if (v) {
		maj = v >> 24; min = (v >> 16) & 255; mic = (v >> 8) & 255; level = (v >> 4) & 15; serial = v & 15;
	}
	if (!maj && scan_version(py, f, &maj, &min, &mic))
		snprintf(f->how, sizeof f->how, "version from sys.version in memory");
	if (!maj && f->lib) {
		maj = f->lib_major;
		min = f->lib_minor;
		snprintf(f->how, sizeof f->how, "version from the library name only");
	}
	if (!maj)
		return fail(msg, msglen, EMBER_PY_ERROR, "pid %d: %s: CPython runtime found but its version is unknown",
			    (int)py->pid, f->obj->path);
	if (f->lib && (f->lib_major != maj || f->lib_minor != min))
		return fail(msg, msglen, EMBER_PY_ERROR, "pid %d: %s: version %d.%d does not match the library name",
			    (int)py->pid, f->obj->path, maj, min);
	static const char *lv[16] = { [0xa] = "a", [0xb] = "b", [0xc] = "rc" };
	if (mic < 0)
		snprintf(rt->version, sizeof rt->version, "%d.%d", maj, min);
	else if (level != 0xf && lv[level])
		snprintf(rt->version, sizeof rt->version, "%d.%d.%d%s%d", maj, min, mic, lv[level], serial);
	else
		snprintf(rt->version, sizeof rt->version, "%d.%d.%d", maj, min, mic);
	rt->major = maj;
	rt->minor = min;
	rt->micro = mic;
	return EMBER_PY_OK;
}

/* Versions and builds refused; the offsets of the one found. */
static int pick_offsets(struct ember_python *py, struct find *f, char *msg, size_t msglen)
{
	struct py_runtime *rt = &py->rt;
	int maj = rt->major, min = rt->minor;
	f->debug = f->sym[S_REFTOTAL] || f->sym[S_NEGATIVE_REFCNT] || strchr(f->abi, 'd');
	if (f->free_threaded || strchr(f->abi, 't'))
		return fail(msg, msglen, EMBER_PY_UNSUPPORTED, "CPython %s free-threaded build (%s): not supported",
			    rt->version, f->obj->path);
	/* A later minor version is refused by name, even with _Py_DebugOffsets:
	 * that struct's own layout changes between minor versions (3.15 put
	 * fields in its middle), so it cannot be read before it is measured. */
	if (!(maj == 2 && min == 7) && !(maj == 3 && min >= 6 && min <= 15))
		return fail(msg, msglen, EMBER_PY_UNSUPPORTED,
			    "CPython %s%s (%s): not supported (supported: 2.7, 3.6-3.15)", rt->version,
			    f->debug ? " debug build" : "", f->obj->path);
	const struct py_offsets *tbl = py_offsets_for(maj, min, rt->micro);
	if (!tbl)
		return fail(msg, msglen, EMBER_PY_UNSUPPORTED, "CPython %s: no offset table", rt->version);
	rt->off = *tbl;
	rt->lt_kind = maj == 2 ? PY_LT_LNOTAB_UNSIGNED : min <= 9 ? PY_LT_LNOTAB : min == 10 ? PY_LT_310
										  : PY_LT_LOCATIONS;
	if (maj == 3 && min >= 13) {
		uint8_t dbg[PY_DBG_MAX];
		char why[160] = "_PyRuntime not found or not readable";
		uint64_t runtime = f->sym[S_RUNTIME];
		size_t len = rt->off.dbg_size > 0 && rt->off.dbg_size <= PY_DBG_MAX ? (size_t)rt->off.dbg_size : 0;
		if (!runtime || !len || !rd(py, runtime, dbg, len) ||
		    !py_offsets_apply_debug(&rt->off, dbg, len, why, sizeof why))
			return fail(msg, msglen, EMBER_PY_ERROR, "CPython %s: cannot use _Py_DebugOffsets: %s",
				    rt->version, why);
	}
	return EMBER_PY_OK;
}

/* ------------------------------------------------------------ the rest */

/* Types, to validate every object followed; Py_TRACE_REFS builds refused. */
static int find_types(struct ember_python *py, struct find *f, char *msg, size_t msglen)
{
	struct py_runtime *rt = &py->rt;
	int maj = rt->major, min = rt->minor;
	rt->t_code = f->sym[S_CODE_TYPE];
	rt->t_frame = f->sym[S_FRAME_TYPE];
	rt->t_str = maj == 2 ? f->sym[S_STRING_TYPE] : f->sym[S_UNICODE_TYPE];
	rt->t_bytes = maj == 2 ? rt->t_str : f->sym[S_BYTES_TYPE];
	rt->t_py2unicode = maj == 2 ? f->sym[S_UNICODE_TYPE] : 0;
	uint64_t t_type = f->sym[S_TYPE_TYPE];
	if (!rt->t_code || !rt->t_str || !rt->t_bytes || (min <= 10 && maj == 3 && !rt->t_frame) ||
	    (maj == 2 && !rt->t_frame))
		return fail(msg, msglen, EMBER_PY_ERROR, "CPython %s (%s): type objects not found in the symbols",
			    rt->version, f->obj->path);
	/* Py_TRACE_REFS: two extra pointers before every object header. */
	uint64_t w[4];
	if (t_type && rd(py, rt->t_code, w, sizeof w) && w[3] == t_type)
		return fail(msg, msglen, EMBER_PY_UNSUPPORTED,
			    "CPython %s%s (%s): Py_TRACE_REFS object layout: not supported", rt->version,
			    f->debug ? " debug build" : "", f->obj->path);
	return EMBER_PY_OK;
}

/* The variable a getter function at fn (absolute) returns, when its code is
 * nothing but that load and a return; 0 otherwise. */
static uint64_t getter_target(const struct find *f, uint64_t fn)
{
	const uint8_t *c = ember_elf_at(&f->elf, fn - f->bias, 12);
	if (!c)
		return 0;
#if defined(__x86_64__)
	/* mov rax,[rip+disp32]; ret */
	if (c[0] == 0x48 && c[1] == 0x8b && c[2] == 0x05 && c[7] == 0xc3) {
		int32_t disp;
		memcpy(&disp, c + 3, 4);
		return fn + 7 + (uint64_t)(int64_t)disp;
	}
#elif defined(__aarch64__)
	/* adrp x0, page; ldr x0, [x0, #off]; ret */
	uint32_t in[3];
	memcpy(in, c, sizeof in);
	if ((in[0] & 0x9f00001fu) == 0x90000000u && (in[1] & 0xffc003ffu) == 0xf9400000u && in[2] == 0xd65f03c0u) {
		int64_t page = (int64_t)((((in[0] >> 5) & 0x7ffff) << 2) | ((in[0] >> 29) & 3));
		if (page & (1 << 20))
			page -= 1 << 21;
		return (fn & ~0xfffull) + (uint64_t)(page << 12) + ((in[1] >> 10) & 0xfff) * 8;
	}
#endif
	return 0;
}

/* The interpreter list and the GIL holder's slot. */
static int find_interpreters(struct ember_python *py, struct find *f, char *msg, size_t msglen)
{
	struct py_runtime *rt = &py->rt;
	uint64_t runtime = f->sym[S_RUNTIME], head = f->sym[S_INTERP_HEAD], head_fn = f->sym[S_INTERP_HEAD_FN];
	if (rt->major == 3 && rt->minor >= 7) {
		if (!runtime)
			return fail(msg, msglen, EMBER_PY_ERROR, "CPython %s (%s): _PyRuntime not found (stripped?)",
				    rt->version, f->obj->path);
		rt->runtime = runtime;
		rt->interp_head_addr = runtime + rt->off.rt_interp_head;
		if (rt->off.rt_tstate_current >= 0)
			rt->gil_tstate_addr = runtime + rt->off.rt_tstate_current;
		return EMBER_PY_OK;
	}
	if (!head && head_fn)
		head = getter_target(f, head_fn);
	if (!head)
		return fail(msg, msglen, EMBER_PY_ERROR, "CPython %s (%s): interp_head not found", rt->version,
			    f->obj->path);
	rt->interp_head_addr = head;
	rt->gil_tstate_addr = f->sym[S_TSTATE_CURRENT];
	return EMBER_PY_OK;
}

/* The eval loop's hot and cold parts: native frames that are Python activations. */
static void find_eval(struct py_runtime *rt, const struct find *f)
{
	int which[2] = { rt->major == 2 ? S_EVAL_EX : S_EVAL_DEFAULT, rt->major == 2 ? S_EVAL_EX_COLD : S_EVAL_DEFAULT_COLD };
	for (int i = 0; i < 2; i++)
		if (f->sym[which[i]] && f->sym_size[which[i]]) {
			rt->eval_lo[rt->neval] = f->sym[which[i]];
			rt->eval_hi[rt->neval] = f->sym[which[i]] + f->sym_size[which[i]];
			rt->neval++;
		}
}

int py_runtime_find(struct ember_python *py, char *msg, size_t msglen)
{
	struct find f = { 0 };
	struct py_runtime *rt = &py->rt;
	snprintf(rt->root, sizeof rt->root, "/proc/%d/root", (int)py->pid);
	int rc = find_object(py, &f, msg, msglen);
	if (rc == EMBER_PY_OK)
		rc = open_object(py, &f, msg, msglen);
	if (rc == EMBER_PY_OK)
		rc = find_version(py, &f, msg, msglen);
	if (rc == EMBER_PY_OK)
		rc = pick_offsets(py, &f, msg, msglen);
	if (rc == EMBER_PY_OK)
		rc = find_types(py, &f, msg, msglen);
	if (rc == EMBER_PY_OK)
		rc = find_interpreters(py, &f, msg, msglen);
	if (rc == EMBER_PY_OK) {
		find_eval(rt, &f);
		py_runtime_set_lengths(rt);
		snprintf(rt->where, sizeof rt->where, "CPython %s%s in %s (%s%s, %s, %s)", rt->version,
			 f.debug ? " (debug build)" : "", f.obj->path, f.lib ? "shared library" : "executable",
			 f.elf.is_exec_type ? ", non-PIE" : "", f.elf.has_symtab ? ".symtab" : ".dynsym only", f.how);
	}
	find_free(&f);
	return rc;
}
