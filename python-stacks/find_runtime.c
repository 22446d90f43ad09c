/* ember_python_open(): find the CPython runtime in a live process (libpython
 * or the executable; PIE, non-PIE, stripped), check the mapped file's
 * build-id, detect the exact version from the process, pick the offsets and
 * locate the interpreter list and the GIL holder slot.  Never runs the
 * target's binary. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "py_internal.h"

#define SCAN_LIMIT (64u << 20)  /* bytes of writable data scanned for sys.version */

static int fail(char *msg, size_t msglen, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (msg && msglen)
		vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
	return status;
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

static bool scan_version(struct ember_python *py, const struct proc_maps *m, uint64_t inode,
			 int *maj, int *min, int *mic)
{
	size_t budget = SCAN_LIMIT;
	uint8_t *buf = malloc(1u << 20);
	bool found = false;
	if (!buf)
		return false;
	for (size_t i = 0; i < m->n && !found; i++) {
		const struct map_entry *e = &m->v[i];
		bool mine = e->inode == inode && e->perms[1] == 'w';
		bool bss = !e->path && i && m->v[i - 1].inode == inode && e->perms[1] == 'w' &&
			   m->v[i - 1].end == e->start;
		if (!mine && !bss)
			continue;
		for (uint64_t a = e->start; a < e->end && budget && !found; a += (1u << 20) - 64) {
			size_t len = e->end - a < (1u << 20) ? e->end - a : (1u << 20);
			if (len > budget)
				len = budget;
			budget -= len;
			if (!rm_read(py->pid, a, buf, len, NULL, &py->st.syscalls))
				break;
			found = find_version_string(buf, len, maj, min, mic);
			if (len < (1u << 20))
				break;
		}
	}
	free(buf);
	return found;
}

static bool rd(struct ember_python *py, uint64_t addr, void *buf, size_t len)
{
	return rm_read(py->pid, addr, buf, len, NULL, &py->st.syscalls);
}

static void set_lengths(struct ember_python *py)
{
	const struct py_offsets *o = &py->off;
	int32_t ts[] = { o->ts_next + 8, o->ts_interp + 8, o->ts_frame + 8, o->ts_cframe + 8,
			 o->ts_current_frame + 8, o->ts_thread_id + 8, o->ts_native_thread_id + 8,
			 o->ts_status + 4 };
	int32_t fr[] = { o->fo_back + 8, o->fo_code + 8, o->fo_lasti + 4, o->if_code + 8,
			 o->if_previous + 8, o->if_instr + 8, o->if_owner + 1, o->if_is_entry + 1, o->ob_type + 8 };
	int32_t co[] = { o->ob_type + 8, o->ob_size + 8, o->co_firstlineno + 4, o->co_code + 8,
			 o->co_filename + 8, o->co_name + 8, o->co_qualname + 8, o->co_linetable + 8,
			 o->co_firsttraceable + 4, o->co_argcount + 4, o->co_varnames + 8, o->co_flags + 4,
			 o->co_version + 4 };
	py->ts_len = py->fr_len = py->co_len = 0;
	for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
		if (ts[i] > (int32_t)py->ts_len) py->ts_len = ts[i];
	for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++)
		if (fr[i] > (int32_t)py->fr_len) py->fr_len = fr[i];
	for (size_t i = 0; i < sizeof co / sizeof co[0]; i++)
		if (co[i] > (int32_t)py->co_len) py->co_len = co[i];
	py->ts_len = (py->ts_len + 7) & ~7u;
	py->fr_len = (py->fr_len + 7) & ~7u;
	py->co_len = (py->co_len + 7) & ~7u;
	py->str_hdr_len = (uint32_t)(o->major == 2 ? 40 : o->str_compact_data + 8);
	/* The hash follows the length in PyASCIIObject and PyStringObject.  Code
	 * objects are told apart by their names' hashes where they have no
	 * number of their own (co_version, 3.12+): code_cache.c. */
	py->str_hash_off = o->co_version >= 0 ? 0 : (uint32_t)((o->major == 2 ? o->ob_size : o->str_length) + 8);
}

static int locate(struct ember_python *py, const struct proc_maps *m, const struct map_entry *obj,
		  struct elf_file *elf, char *msg, size_t msglen)
{
	const struct py_offsets *tbl;
	char how[160] = "";
	uint64_t bias = obj->start - (elf->first_load_vaddr & ~4095ull);
	int lmaj = 0, lmin = 0;
	char abi[8] = "";
	bool lib = is_libpython(obj->path, &lmaj, &lmin, abi, sizeof abi);

#define SYM(name) ({ uint64_t v_ = elf_symbol(elf, name, NULL); v_ ? v_ + bias : 0; })
	uint64_t rt = SYM("_PyRuntime"), rt_size = 0;
	if (!rt) {
		uint64_t sec = elf_section(elf, ".PyRuntime", &rt_size);
		rt = sec ? sec + bias : 0;
	}
	uint64_t interp_head = SYM("interp_head");
	uint64_t interp_head_fn = SYM("PyInterpreterState_Head");
	if (!rt && !interp_head && !interp_head_fn)
		return fail(msg, msglen, EMBER_PY_NOT_PYTHON,
			    "pid %d: %s: no CPython runtime (no _PyRuntime, interp_head or PyInterpreterState_Head)",
			    (int)py->pid, obj->path);

	/* Build-id of the file we parsed vs. the bytes the process mapped. */
	if (elf->build_id_len && elf->build_id_vaddr && !py->opts.no_build_id_check) {
		uint8_t live[20];
		if (rd(py, elf->build_id_vaddr + bias, live, elf->build_id_len) &&
		    memcmp(live, elf->build_id, elf->build_id_len) != 0)
			return fail(msg, msglen, EMBER_PY_ERROR,
				    "pid %d: %s: build-id of the file differs from the mapped one (replaced on disk?)",
				    (int)py->pid, obj->path);
	}

	/* Version, most trustworthy first. */
	int maj = 0, min = 0, mic = -1, level = 0xf, serial = 0;
	bool free_threaded = false;
	uint8_t cookie[24];
	uint64_t pyv = SYM("Py_Version");
	if (rt && rd(py, rt, cookie, sizeof cookie) && memcmp(cookie, "xdebugpy", 8) == 0) {
		uint64_t v, ft;
		memcpy(&v, cookie + 8, 8);
		memcpy(&ft, cookie + 16, 8);
		maj = v >> 24; min = (v >> 16) & 255; mic = (v >> 8) & 255; level = (v >> 4) & 15; serial = v & 15;
		free_threaded = ft != 0;
		snprintf(how, sizeof how, "version from _Py_DebugOffsets");
	} else if (pyv) {
		uint32_t v;
		if (rd(py, pyv, &v, 4)) {
			maj = v >> 24; min = (v >> 16) & 255; mic = (v >> 8) & 255; level = (v >> 4) & 15; serial = v & 15;
			snprintf(how, sizeof how, "version from Py_Version");
		}
	}
	if (!maj && scan_version(py, m, obj->inode, &maj, &min, &mic))
		snprintf(how, sizeof how, "version from sys.version in memory");
	if (!maj && lib) {
		maj = lmaj;
		min = lmin;
		snprintf(how, sizeof how, "version from the library name only");
	}
	if (!maj)
		return fail(msg, msglen, EMBER_PY_ERROR, "pid %d: %s: CPython runtime found but its version is unknown",
			    (int)py->pid, obj->path);
	if (lib && (lmaj != maj || lmin != min))
		return fail(msg, msglen, EMBER_PY_ERROR, "pid %d: %s: version %d.%d does not match the library name",
			    (int)py->pid, obj->path, maj, min);
	static const char *lv[16] = { [0xa] = "a", [0xb] = "b", [0xc] = "rc" };
	if (mic < 0)
		snprintf(py->version, sizeof py->version, "%d.%d", maj, min);
	else if (level != 0xf && lv[level])
		snprintf(py->version, sizeof py->version, "%d.%d.%d%s%d", maj, min, mic, lv[level], serial);
	else
		snprintf(py->version, sizeof py->version, "%d.%d.%d", maj, min, mic);
	py->major = maj;
	py->minor = min;
	py->micro = mic;

	bool debug = elf_symbol(elf, "_Py_RefTotal", NULL) || elf_symbol(elf, "_Py_NegativeRefcount", NULL) ||
		     strchr(abi, 'd');
	if (free_threaded || strchr(abi, 't'))
		return fail(msg, msglen, EMBER_PY_UNSUPPORTED,
			    "CPython %s free-threaded build (%s): not supported", py->version, obj->path);
	if (!(maj == 2 && min == 7) && !(maj == 3 && min >= 6 && min <= 13))
		return fail(msg, msglen, EMBER_PY_UNSUPPORTED,
			    "CPython %s%s (%s): not supported (supported: 2.7, 3.6-3.13)",
			    py->version, debug ? " debug build" : "", obj->path);
	tbl = py_offsets_for(maj, min, mic);
	if (!tbl)
		return fail(msg, msglen, EMBER_PY_UNSUPPORTED, "CPython %s: no offset table", py->version);
	py->off = *tbl;
	py->lt_kind = maj == 2 ? PY_LT_LNOTAB_UNSIGNED : min <= 9 ? PY_LT_LNOTAB : min == 10 ? PY_LT_310 : PY_LT_LOCATIONS;
	if (maj == 3 && min >= 13) {
		uint8_t dbg[600];
		char why[160];
		if (!rt || !rd(py, rt, dbg, sizeof dbg) || !py_offsets_apply_debug(&py->off, dbg, sizeof dbg, why, sizeof why))
			return fail(msg, msglen, EMBER_PY_ERROR, "CPython %s: cannot use _Py_DebugOffsets", py->version);
	}

	/* Types, to validate every object we follow. */
	py->t_code = SYM("PyCode_Type");
	py->t_frame = SYM("PyFrame_Type");
	py->t_str = maj == 2 ? SYM("PyString_Type") : SYM("PyUnicode_Type");
	py->t_bytes = maj == 2 ? py->t_str : SYM("PyBytes_Type");
	py->t_py2unicode = maj == 2 ? SYM("PyUnicode_Type") : 0;
	uint64_t t_type = SYM("PyType_Type");
	if (!py->t_code || !py->t_str || !py->t_bytes || (min <= 10 && maj == 3 && !py->t_frame) ||
	    (maj == 2 && !py->t_frame))
		return fail(msg, msglen, EMBER_PY_ERROR, "CPython %s (%s): type objects not found in the symbols",
			    py->version, obj->path);
	/* Py_TRACE_REFS: two extra pointers before every object header. */
	uint64_t w[4];
	if (t_type && rd(py, py->t_code, w, sizeof w) && w[3] == t_type)
		return fail(msg, msglen, EMBER_PY_UNSUPPORTED,
			    "CPython %s%s (%s): Py_TRACE_REFS object layout: not supported", py->version,
			    debug ? " debug build" : "", obj->path);

	/* Interpreter list and GIL slot. */
	if (maj == 3 && min >= 7) {
		if (!rt)
			return fail(msg, msglen, EMBER_PY_ERROR, "CPython %s (%s): _PyRuntime not found (stripped?)",
				    py->version, obj->path);
		py->runtime = rt;
		py->interp_head_addr = rt + py->off.rt_interp_head;
		if (py->off.rt_tstate_current >= 0)
			py->gil_tstate_addr = rt + py->off.rt_tstate_current;
	} else {
		if (!interp_head && interp_head_fn) {
			/* mov rax,[rip+disp32]; ret */
			const uint8_t *c = elf_at_vaddr(elf, interp_head_fn - bias, 8);
			if (c && c[0] == 0x48 && c[1] == 0x8b && c[2] == 0x05 && c[7] == 0xc3) {
				int32_t disp;
				memcpy(&disp, c + 3, 4);
				interp_head = interp_head_fn + 7 + disp;
			}
		}
		if (!interp_head)
			return fail(msg, msglen, EMBER_PY_ERROR, "CPython %s (%s): interp_head not found",
				    py->version, obj->path);
		py->interp_head_addr = interp_head;
		py->gil_tstate_addr = SYM("_PyThreadState_Current");
	}
	/* The eval loop's hot and cold parts: native frames that are Python activations. */
	const char *eval_name = py->major == 2 ? "PyEval_EvalFrameEx" : "_PyEval_EvalFrameDefault";
	char cold_name[64];
	snprintf(cold_name, sizeof cold_name, "%s.cold", eval_name);
	const char *eval_names[2] = { eval_name, cold_name };
	for (int i = 0; i < 2; i++) {
		uint64_t size = 0, v = elf_symbol(elf, eval_names[i], &size);
		if (v && size) {
			py->eval_lo[py->neval] = v + bias;
			py->eval_hi[py->neval] = v + bias + size;
			py->neval++;
		}
	}
#undef SYM

	set_lengths(py);
	snprintf(py->describe, sizeof py->describe, "CPython %s%s in %s (%s%s, %s, %s)", py->version,
		 debug ? " (debug build)" : "", obj->path, lib ? "shared library" : "executable",
		 elf->is_exec ? ", non-PIE" : "", elf->has_symtab ? ".symtab" : ".dynsym only", how);
	return EMBER_PY_OK;
}

int ember_python_open(struct ember_python **out, pid_t pid, const struct ember_python_opts *opts,
		      char *msg, size_t msglen)
{
	struct ember_python_opts def = EMBER_PYTHON_OPTS_DEFAULT;
	struct proc_maps m;
	char exe[4096], path[4200];
	int rc;

	*out = NULL;
	if (msg && msglen)
		msg[0] = 0;
	rc = proc_maps_read(pid, &m);
	if (rc < 0)
		return fail(msg, msglen, EMBER_PY_NO_ACCESS, "pid %d: cannot read /proc/%d/maps: %s",
			    (int)pid, (int)pid, strerror(-rc));
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = 0;
	if (n > 10 && strcmp(exe + n - 10, " (deleted)") == 0)
		exe[n - 10] = 0;

	/* The object holding the runtime: libpython if mapped, else the executable. */
	const struct map_entry *obj = NULL;
	int a, b;
	char abi[8];
	for (size_t i = 0; i < m.n && !obj; i++)
		if (m.v[i].path && m.v[i].offset == 0 && is_libpython(m.v[i].path, &a, &b, abi, sizeof abi))
			obj = &m.v[i];
	for (size_t i = 0; i < m.n && !obj; i++)
		if (m.v[i].path && m.v[i].offset == 0 && strcmp(m.v[i].path, exe) == 0)
			obj = &m.v[i];
	if (!obj) {
		proc_maps_free(&m);
		return fail(msg, msglen, EMBER_PY_NOT_PYTHON, "pid %d: %s: no CPython runtime (no libpython mapped)",
			    (int)pid, exe[0] ? exe : "?");
	}

	struct ember_python *py = calloc(1, sizeof *py);
	if (!py) {
		proc_maps_free(&m);
		return fail(msg, msglen, EMBER_PY_ERROR, "out of memory");
	}
	py->pid = pid;
	py->opts = opts ? *opts : def;
	if (!py->opts.max_depth)
		py->opts.max_depth = 2048;
	py->pthread_tid_off = -1;
	py->own_pid = (uint32_t)pid;
	snprintf(py->root, sizeof py->root, "/proc/%d/root", (int)pid);

	/* Same bytes the process mapped: map_files, then its root, then the path. */
	struct elf_file elf;
	snprintf(path, sizeof path, "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)obj->start, (unsigned long long)obj->end);
	rc = elf_open(&elf, path);
	if (rc < 0) {
		snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, obj->path);
		rc = elf_open(&elf, path);
	}
	if (rc < 0) {
		snprintf(path, sizeof path, "%s", obj->path);
		rc = elf_open(&elf, path);
	}
	if (rc < 0) {
		int st = rc == -ENOEXEC ? EMBER_PY_NOT_PYTHON : EMBER_PY_NO_ACCESS;
		fail(msg, msglen, st, "pid %d: cannot open %s: %s", (int)pid, obj->path, strerror(-rc));
		proc_maps_free(&m);
		free(py);
		return st;
	}
	/* Can we read its memory at all? */
	uint8_t probe[8];
	int err = 0;
	if (!rm_read(pid, obj->start, probe, sizeof probe, &err, &py->st.syscalls) && (err == EPERM || err == ESRCH)) {
		elf_close(&elf);
		proc_maps_free(&m);
		free(py);
		return fail(msg, msglen, EMBER_PY_NO_ACCESS, "pid %d: cannot read its memory: %s", (int)pid, strerror(err));
	}
	rc = locate(py, &m, obj, &elf, msg, msglen);
	snprintf(py->rt_path, sizeof py->rt_path, "%s", obj->path);
	py->rt_bias = obj->start - (elf.first_load_vaddr & ~4095ull);
	snprintf(py->dwarf_path, sizeof py->dwarf_path, "%s", path);
	py->dwarf_bias = obj->start - (elf.first_load_vaddr & ~4095ull);
	py->dwarf_deferred = py->opts.defer_debug_info && !py->opts.no_debug_info;
	if (rc == EMBER_PY_OK && !py->opts.no_debug_info)
		py_eval_dwarf_start(py, path, py->dwarf_bias, py->dwarf_deferred);
	elf_close(&elf);
	proc_maps_free(&m);
	if (rc != EMBER_PY_OK) {
		free(py);
		return rc;
	}
	py->snap = calloc(1, sizeof *py->snap);
	if (!py->snap) {
		free(py);
		return fail(msg, msglen, EMBER_PY_ERROR, "out of memory");
	}
	py_scan_threads(py);
	*out = py;
	return EMBER_PY_OK;
}

const char *ember_python_version(const struct ember_python *py)
{
	return py->version;
}

const char *ember_python_describe(const struct ember_python *py)
{
	return py->describe;
}

void ember_python_close(struct ember_python *py)
{
	if (!py)
		return;
	py_copier_detach(py);
	py_code_free_all(py);
	free(py->bc);
	free(py->calib);
	py_eval_dwarf_stop(py);
	free(py->eval_locs);
	for (size_t i = 0; i < py->nthreads; i++)
		free(py->threads[i].plan);
	free(py->threads);
	if (py->snap)
		free(py->snap->buf);
	free(py->snap);
	free(py);
}

void ember_python_stats(const struct ember_python *py, struct ember_python_stats *out)
{
	*out = py->st;
	out->evidence_sites = py->calib_learnt;
}
