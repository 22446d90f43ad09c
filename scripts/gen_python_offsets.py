#!/usr/bin/env python3
"""Generate python-stacks/runtime/offsets_table.c: the byte offsets of the CPython
structs ember's Python-stack reader needs, one entry per minor version
(2.7, 3.6-3.15), measured with offsetof()/sizeof() against each version's own
installed headers (pyenv: $(pyenv root)/versions/X.Y.Z/include/pythonX.Y*;
3.14 and 3.15: Debian sid's, in the root file system `make sid-root` builds,
$EMBER_SID_ROOT or ~/.cache/ember/sid-root; a minor version neither has:
the system's /usr/include/pythonX.Y, Debian's python3-dev).

  gen_python_offsets.py                 write python-stacks/runtime/offsets_table.c
  gen_python_offsets.py -o FILE         write FILE
  gen_python_offsets.py --check FILE    regenerate the entries whose headers are
                                        present and check each appears verbatim
                                        in FILE (exit 0 ok, 1 differ, 77 none);
                                        the system's headers (another patch
                                        release) are checked field by field
                                        against the entry covering their release
  --need X.Y                            fail when X.Y's headers are not found
                                        (repeatable; tests of the sid root)
  --arch aarch64                        measure for AArch64 instead (Debian's
                                        cross compiler and qemu-user): writes
                                        python-stacks/runtime/offsets_table_aarch64.c

The layouts differ between the two only where a struct embeds glibc's
pthread types (a mutex is 40 bytes on x86-64, 48 on AArch64): the GIL's
state, and what follows it in _PyRuntimeState up to 3.11.

3.13+ also publishes most offsets at run time (_Py_DebugOffsets at &_PyRuntime);
the reader prefers those and uses this table only for what they lack.
Field value -1 = the field does not exist in that version.

An entry covers the patch releases micro_first..micro_last of its minor
version (0..255: all of them).  Patch releases laid out differently from the
one whose headers are measured get an entry of their own (PATCH_RANGES),
placed first: the reader takes the first entry that covers the running
release.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

MINORS = [(2, 7), (3, 6), (3, 7), (3, 8), (3, 9), (3, 10), (3, 11), (3, 12), (3, 13), (3, 14), (3, 15)]

# ((major, minor), (first, last patch release), fields that differ there from
# the measured release of that minor version, as the difference from the
# measured value).  Their headers are not measured.
PATCH_RANGES = [
    # 3.7.0-3.7.3: _PyRuntimeState has 88 bytes less before gilstate than
    # from 3.7.4 on (the interpreter list before it is where 3.7.4 has it),
    # so gilstate.tstate_current, the GIL holder, is at 1392.
    ((3, 7), (0, 3), {"rt_tstate_current": -88}),
]

# (field name in struct py_offsets, C expression or None) -- expressions are
# evaluated inside #if guards below; order = struct order.
FIELDS = [
    "rt_size", "rt_interp_head", "rt_interp_main", "rt_main_thread", "rt_tstate_current",
    "rt_gil_last_holder", "rt_gil_locked",
    "is_next", "is_tstate_head", "is_ceval_gil", "gil_last_holder", "gil_locked",
    "ts_size", "ts_next", "ts_interp", "ts_frame", "ts_cframe", "ts_current_frame",
    "ts_thread_id", "ts_native_thread_id", "ts_status",
    "cf_current_frame",
    "fo_back", "fo_code", "fo_lasti", "fo_localsplus",
    "if_size", "if_code", "if_previous", "if_instr", "if_owner", "if_is_entry",
    "if_owner_shim", "if_owner_last", "stackref_tag_bits", "ts_holds_gil",
    "co_size", "co_firstlineno", "co_code", "co_filename", "co_name", "co_qualname",
    "co_linetable", "co_firsttraceable", "co_code_adaptive", "co_argcount", "co_varnames", "co_flags",
    "co_version",
    # locals (ember dump --locals): the frame's local slots, their names, a float's value
    "if_localsplus", "co_localsplusnames", "float_val", "stackref_borrow_tag",
    "stackref_int_tag", "stackref_int_shift",
    "tuple_item", "type_name",
    "ob_type", "ob_size", "bytes_sval",
    "str_length", "str_state", "str_ascii_data", "str_compact_data", "str_utf8", "str_utf8_length",
    "uni_length", "uni_str", "unicode_size",
    # thread names (thread_names.c): sys.modules -> threading -> _active -> Thread._name
    "is_modules", "mod_dict",
    "dict_keys", "dict_values", "dict_mask", "dict_table",
    "dk_size", "dk_log2_size", "dk_log2_index_bytes", "dk_kind", "dk_kind_general", "dk_nentries",
    "dk_indices",
    "dke_size", "dke_key", "dke_value", "dku_size", "dku_key", "dku_value",
    "dv_values", "dv_capacity", "dv_valid",
    "tp_basicsize", "tp_dictoffset", "tp_flags", "ht_cached_keys", "tpf_heaptype", "tpf_managed_dict",
    "tpf_inline_values",
    "obj_dict_before", "obj_values_before", "obj_inline_values",
    "long_tag", "long_digit", "long_shift", "long_tag_bits", "int_ival",
]

# 3.13+: where, inside that version's _Py_DebugOffsets, the value of each
# struct py_offsets field the reader takes from the running process is.
# The struct itself changes between minor versions (3.15 inserts fields in
# the middle), so its layout is measured like the rest: (index name in
# runtime/py_runtime.h's enum py_dbg, member path in _Py_DebugOffsets, first
# version that has it).
DEBUG_FIELDS = [
    ("PY_DBG_RT_INTERP_HEAD", "runtime_state.interpreters_head", (3, 13)),
    ("PY_DBG_IS_NEXT", "interpreter_state.next", (3, 13)),
    ("PY_DBG_IS_THREADS_HEAD", "interpreter_state.threads_head", (3, 13)),
    ("PY_DBG_IS_CEVAL_GIL", "interpreter_state.ceval_gil", (3, 13)),
    ("PY_DBG_IS_IMPORTS_MODULES", "interpreter_state.imports_modules", (3, 13)),
    ("PY_DBG_TS_NEXT", "thread_state.next", (3, 13)),
    ("PY_DBG_TS_INTERP", "thread_state.interp", (3, 13)),
    ("PY_DBG_TS_CURRENT_FRAME", "thread_state.current_frame", (3, 13)),
    ("PY_DBG_TS_THREAD_ID", "thread_state.thread_id", (3, 13)),
    ("PY_DBG_TS_NATIVE_THREAD_ID", "thread_state.native_thread_id", (3, 13)),
    ("PY_DBG_TS_STATUS", "thread_state.status", (3, 13)),
    ("PY_DBG_TS_HOLDS_GIL", "thread_state.holds_gil", (3, 15)),
    ("PY_DBG_IF_SIZE", "interpreter_frame.size", (3, 13)),
    ("PY_DBG_IF_PREVIOUS", "interpreter_frame.previous", (3, 13)),
    ("PY_DBG_IF_EXECUTABLE", "interpreter_frame.executable", (3, 13)),
    ("PY_DBG_IF_INSTR_PTR", "interpreter_frame.instr_ptr", (3, 13)),
    ("PY_DBG_IF_OWNER", "interpreter_frame.owner", (3, 13)),
    ("PY_DBG_CO_SIZE", "code_object.size", (3, 13)),
    ("PY_DBG_CO_FILENAME", "code_object.filename", (3, 13)),
    ("PY_DBG_CO_NAME", "code_object.name", (3, 13)),
    ("PY_DBG_CO_QUALNAME", "code_object.qualname", (3, 13)),
    ("PY_DBG_CO_LINETABLE", "code_object.linetable", (3, 13)),
    ("PY_DBG_CO_FIRSTLINENO", "code_object.firstlineno", (3, 13)),
    ("PY_DBG_CO_CODE_ADAPTIVE", "code_object.co_code_adaptive", (3, 13)),
    ("PY_DBG_OB_TYPE", "pyobject.ob_type", (3, 13)),
    ("PY_DBG_TP_FLAGS", "type_object.tp_flags", (3, 13)),
    ("PY_DBG_DICT_MA_KEYS", "dict_object.ma_keys", (3, 13)),
    ("PY_DBG_DICT_MA_VALUES", "dict_object.ma_values", (3, 13)),
    ("PY_DBG_LONG_LV_TAG", "long_object.lv_tag", (3, 13)),
    ("PY_DBG_LONG_OB_DIGIT", "long_object.ob_digit", (3, 13)),
    ("PY_DBG_BYTES_OB_SIZE", "bytes_object.ob_size", (3, 13)),
    ("PY_DBG_BYTES_OB_SVAL", "bytes_object.ob_sval", (3, 13)),
    ("PY_DBG_UNICODE_STATE", "unicode_object.state", (3, 13)),
    ("PY_DBG_UNICODE_LENGTH", "unicode_object.length", (3, 13)),
    ("PY_DBG_UNICODE_ASCII_SIZE", "unicode_object.asciiobject_size", (3, 13)),
]


def debug_probe():
    """The probe's lines measuring DEBUG_FIELDS (and the struct's size)."""
    out = ["static void debug_offsets(void) {", "#if PYV(3,13)",
           '    P("dbg_size", sizeof(_Py_DebugOffsets));']
    for name, path, (ma, mi) in DEBUG_FIELDS:
        out.append("#if PYV(%d,%d)" % (ma, mi))
        out.append('    O("%s", _Py_DebugOffsets, %s);' % (name, path))
        out.append("#endif")
    out += ["#endif", "}"]
    return "\n".join(out) + "\n"

PROBE = r'''
#include <Python.h>
#include <stdio.h>
#include <stddef.h>
#if PY_MAJOR_VERSION == 2
#  include <code.h>
#  include <frameobject.h>
#else
#  if PY_MINOR_VERSION <= 10
#    include <frameobject.h>
#  endif
#  if PY_MINOR_VERSION == 7
#    include <internal/pystate.h>
#  elif PY_MINOR_VERSION == 8
#    include <internal/pycore_pystate.h>
#  elif PY_MINOR_VERSION >= 9
#    include <internal/pycore_interp.h>
#    include <internal/pycore_runtime.h>
#  endif
#  if PY_MINOR_VERSION >= 11
#    include <internal/pycore_frame.h>
#    include <internal/pycore_code.h>
#    include <internal/pycore_dict.h>
#    include <internal/pycore_object.h>
#  endif
#  if PY_MINOR_VERSION >= 14
#    include <internal/pycore_stackref.h>
#  endif
#  if PY_MINOR_VERSION >= 10
#    include <internal/pycore_moduleobject.h>
#  else
#    include <longintrepr.h>
#  endif
#endif
#define P(name, v) printf("%s %ld\n", name, (long)(v))
#define O(name, T, F) P(name, offsetof(T, F))
#define PYV(a,b) (PY_MAJOR_VERSION > (a) || (PY_MAJOR_VERSION == (a) && PY_MINOR_VERSION >= (b)))

/* Structs the installed headers do not declare, written out as that
 * version's source has them (layouts only; sizes come from the real types):
 * PyModuleObject before 3.10 (Objects/moduleobject.c: md_dict right after
 * the object header), PyDictKeysObject and PyDictKeyEntry of 3.6-3.10
 * (Objects/dict-common.h; 3.6 has a union for dk_indices at the same place). */
#if !PYV(3,10)
typedef struct { PyObject_HEAD PyObject *md_dict; } mirror_module;
#endif
#if PYV(3,6) && !PYV(3,11)
typedef struct {
    Py_ssize_t dk_refcnt;
    Py_ssize_t dk_size;
    void *dk_lookup;
    Py_ssize_t dk_usable;
    Py_ssize_t dk_nentries;
    char dk_indices[];
} mirror_dictkeys;
typedef struct { Py_hash_t me_hash; PyObject *me_key; PyObject *me_value; } mirror_dictentry;
#endif

/* Where a Thread object's _name is: sys.modules, module dicts, dict
 * internals, instance attribute storage, int keys (threading._active). */
static void thread_name_offsets(void) {
#if PYV(3,12)
    O("is_modules", PyInterpreterState, imports.modules);
#else
    O("is_modules", PyInterpreterState, modules);
#endif
#if PYV(3,10)
    O("mod_dict", PyModuleObject, md_dict);
#else
    O("mod_dict", mirror_module, md_dict);
#endif
    O("tp_basicsize", PyTypeObject, tp_basicsize);
    O("tp_dictoffset", PyTypeObject, tp_dictoffset);
    O("tp_flags", PyTypeObject, tp_flags);
    P("tpf_heaptype", Py_TPFLAGS_HEAPTYPE);
#if PY_MAJOR_VERSION == 2
    O("dict_mask", PyDictObject, ma_mask);
    O("dict_table", PyDictObject, ma_table);
    P("dke_size", sizeof(PyDictEntry));
    O("dke_key", PyDictEntry, me_key);
    O("dke_value", PyDictEntry, me_value);
    O("int_ival", PyIntObject, ob_ival);
#else
    O("dict_keys", PyDictObject, ma_keys);
    O("dict_values", PyDictObject, ma_values);
    O("ht_cached_keys", PyHeapTypeObject, ht_cached_keys);
# if PYV(3,11)
    O("dk_log2_size", PyDictKeysObject, dk_log2_size);
    O("dk_log2_index_bytes", PyDictKeysObject, dk_log2_index_bytes);
    O("dk_kind", PyDictKeysObject, dk_kind);
    P("dk_kind_general", DICT_KEYS_GENERAL);
    O("dk_nentries", PyDictKeysObject, dk_nentries);
    O("dk_indices", PyDictKeysObject, dk_indices);
    P("dke_size", sizeof(PyDictKeyEntry));
    O("dke_key", PyDictKeyEntry, me_key);
    O("dke_value", PyDictKeyEntry, me_value);
    P("dku_size", sizeof(PyDictUnicodeEntry));
    O("dku_key", PyDictUnicodeEntry, me_key);
    O("dku_value", PyDictUnicodeEntry, me_value);
    O("dv_values", PyDictValues, values);
    P("tpf_managed_dict", Py_TPFLAGS_MANAGED_DICT);
    {   /* the managed dict/values slots before the object: ask the
         * header's own accessors about a fake object */
        static PyTypeObject tp;
        static PyObject mem[16];
        PyObject *obj = &mem[8];
        tp.tp_flags = Py_TPFLAGS_MANAGED_DICT;
        tp.tp_basicsize = sizeof(PyObject);
#  if PYV(3,13)
        tp.tp_flags |= Py_TPFLAGS_INLINE_VALUES;
#  endif
        obj->ob_type = &tp;
#  if PYV(3,13)
        P("obj_dict_before", (char *)obj - (char *)_PyObject_ManagedDictPointer(obj));
        P("obj_inline_values", (char *)_PyObject_InlineValues(obj) - (char *)obj);
#  elif PYV(3,12)
        P("obj_dict_before", (char *)obj - (char *)_PyObject_DictOrValuesPointer(obj));
#  else
        P("obj_dict_before", (char *)obj - (char *)_PyObject_ManagedDictPointer(obj));
        P("obj_values_before", (char *)obj - (char *)_PyObject_ValuesPointer(obj));
#  endif
    }
#  if PYV(3,13)
    O("dv_capacity", PyDictValues, capacity);
    O("dv_valid", PyDictValues, valid);
    P("tpf_inline_values", Py_TPFLAGS_INLINE_VALUES);
#  endif
# else
    O("dk_size", mirror_dictkeys, dk_size);
    O("dk_nentries", mirror_dictkeys, dk_nentries);
    O("dk_indices", mirror_dictkeys, dk_indices);
    P("dke_size", sizeof(mirror_dictentry));
    O("dke_key", mirror_dictentry, me_key);
    O("dke_value", mirror_dictentry, me_value);
# endif
# if PYV(3,12)
    O("long_tag", PyLongObject, long_value.lv_tag);
    O("long_digit", PyLongObject, long_value.ob_digit);
    P("long_tag_bits", _PyLong_NON_SIZE_BITS);
# else
    O("long_tag", PyLongObject, ob_base.ob_size);
    O("long_digit", PyLongObject, ob_digit);
# endif
    P("long_shift", PyLong_SHIFT);
#endif
}

/*DEBUG_OFFSETS*/
int main(void) {
    printf("version %s\n", PY_VERSION);
#if PYV(3,7)
    P("rt_size", sizeof(_PyRuntimeState));
    O("rt_interp_head", _PyRuntimeState, interpreters.head);
    O("rt_interp_main", _PyRuntimeState, interpreters.main);
# if PYV(3,8)
    O("rt_main_thread", _PyRuntimeState, main_thread);
# endif
# if !PYV(3,12)
    O("rt_tstate_current", _PyRuntimeState, gilstate.tstate_current);
    O("rt_gil_last_holder", _PyRuntimeState, ceval.gil.last_holder);
    O("rt_gil_locked", _PyRuntimeState, ceval.gil.locked);
# endif
#endif
    O("is_next", PyInterpreterState, next);
#if PYV(3,11)
    O("is_tstate_head", PyInterpreterState, threads.head);
#else
    O("is_tstate_head", PyInterpreterState, tstate_head);
#endif
#if PYV(3,12)
    O("is_ceval_gil", PyInterpreterState, ceval.gil);
#endif
#if PYV(3,7)
    O("gil_last_holder", struct _gil_runtime_state, last_holder);
    O("gil_locked", struct _gil_runtime_state, locked);
#endif
    P("ts_size", sizeof(PyThreadState));
    O("ts_next", PyThreadState, next);
    O("ts_interp", PyThreadState, interp);
#if !PYV(3,11)
    O("ts_frame", PyThreadState, frame);
#elif !PYV(3,13)
    O("ts_cframe", PyThreadState, cframe);
    O("cf_current_frame", _PyCFrame, current_frame);
#else
    O("ts_current_frame", PyThreadState, current_frame);
#endif
    O("ts_thread_id", PyThreadState, thread_id);
#if PYV(3,11)
    O("ts_native_thread_id", PyThreadState, native_thread_id);
#endif
#if PYV(3,12)
    O("ts_status", PyThreadState, _status);
#endif
#if !PYV(3,11)
    O("fo_back", PyFrameObject, f_back);
    O("fo_code", PyFrameObject, f_code);
    O("fo_lasti", PyFrameObject, f_lasti);
    O("fo_localsplus", PyFrameObject, f_localsplus);
    O("co_argcount", PyCodeObject, co_argcount);
    O("co_varnames", PyCodeObject, co_varnames);
    O("co_flags", PyCodeObject, co_flags);
#else
    P("if_size", sizeof(_PyInterpreterFrame));
# if PYV(3,13)
    O("if_code", _PyInterpreterFrame, f_executable);
    O("if_instr", _PyInterpreterFrame, instr_ptr);
# else
    O("if_code", _PyInterpreterFrame, f_code);
    O("if_instr", _PyInterpreterFrame, prev_instr);
# endif
    O("if_previous", _PyInterpreterFrame, previous);
    O("if_owner", _PyInterpreterFrame, owner);
# if !PYV(3,12)
    O("if_is_entry", _PyInterpreterFrame, is_entry);
# endif
    /* Owners from the first shim value up are frames the interpreter
     * pushed for itself (3.12 and 3.13 the C stack's entry frame; 3.14 also
     * the interpreter's own); past the last, the value is garbage. */
# if PYV(3,14)
    P("if_owner_shim", FRAME_OWNED_BY_INTERPRETER);
# elif PYV(3,12)
    P("if_owner_shim", FRAME_OWNED_BY_CSTACK);
# endif
# if PYV(3,15)
    P("if_owner_last", FRAME_OWNED_BY_INTERPRETER);
# elif PYV(3,12)
    P("if_owner_last", FRAME_OWNED_BY_CSTACK);
# else
    P("if_owner_last", FRAME_OWNED_BY_FRAME_OBJECT);
# endif
    O("if_localsplus", _PyInterpreterFrame, localsplus);
# if PYV(3,14)
    /* f_executable is a tagged _PyStackRef: the low bits are not the pointer's */
    P("stackref_tag_bits", Py_TAG_BITS);
    /* a frame slot's reference: the tag of one that owns no count (an
     * object's address, or NULL: the empty slot), and the tag and shift
     * of a small int held in the bits themselves (3.14 has no name for
     * the shift: measured from a tagged 1) */
    P("stackref_borrow_tag", Py_TAG_REFCNT);
    P("stackref_int_tag", Py_INT_TAG);
    P("stackref_int_shift", __builtin_ctzl(PyStackRef_TagInt(1).bits & ~(uintptr_t)Py_TAG_BITS));
    O("ts_holds_gil", PyThreadState, holds_gil);
# endif
#endif
    P("co_size", sizeof(PyCodeObject));
    O("co_firstlineno", PyCodeObject, co_firstlineno);
    O("co_filename", PyCodeObject, co_filename);
    O("co_name", PyCodeObject, co_name);
#if PYV(3,11)
    O("co_qualname", PyCodeObject, co_qualname);
    O("co_linetable", PyCodeObject, co_linetable);
    O("co_firsttraceable", PyCodeObject, _co_firsttraceable);
    O("co_code_adaptive", PyCodeObject, co_code_adaptive);
    O("co_localsplusnames", PyCodeObject, co_localsplusnames);
# if PYV(3,12)
    O("co_version", PyCodeObject, co_version);
# endif
#elif PYV(3,10)
    O("co_code", PyCodeObject, co_code);
    O("co_linetable", PyCodeObject, co_linetable);
#else
    O("co_code", PyCodeObject, co_code);
    O("co_linetable", PyCodeObject, co_lnotab);
#endif
    O("ob_type", PyObject, ob_type);
    O("ob_size", PyVarObject, ob_size);
    O("tuple_item", PyTupleObject, ob_item);
    O("type_name", PyTypeObject, tp_name);
    O("float_val", PyFloatObject, ob_fval);
#if PY_MAJOR_VERSION == 2
    O("bytes_sval", PyStringObject, ob_sval);
    O("uni_length", PyUnicodeObject, length);
    O("uni_str", PyUnicodeObject, str);
    P("unicode_size", Py_UNICODE_SIZE);
#else
    O("bytes_sval", PyBytesObject, ob_sval);
    O("str_length", PyASCIIObject, length);
    O("str_state", PyASCIIObject, state);
    P("str_ascii_data", sizeof(PyASCIIObject));
    P("str_compact_data", sizeof(PyCompactUnicodeObject));
    O("str_utf8", PyCompactUnicodeObject, utf8);
    O("str_utf8_length", PyCompactUnicodeObject, utf8_length);
#endif
    thread_name_offsets();
    debug_offsets();
    return 0;
}
'''


def pyenv_root():
    r = os.environ.get("PYENV_ROOT")
    if r:
        return r
    try:
        return subprocess.run(["pyenv", "root"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return os.path.expanduser("~/.pyenv")


def sid_root():
    """The Debian sid root file system that has 3.14 and 3.15 (tests/sid)."""
    return os.environ.get("EMBER_SID_ROOT") or os.path.expanduser("~/.cache/ember/sid-root")


def find_include(root, major, minor):
    """Newest installed X.Y.Z with headers: (full version, include dir).
    Minor versions pyenv lacks are looked for in the sid root's /usr/include
    (Debian's layout: pythonX.Y/ with the multiarch pyconfig.h beside)."""
    inc = os.path.join(sid_root(), "usr", "include", "python%d.%d" % (major, minor))
    if (major, minor) >= (3, 14) and os.path.isfile(os.path.join(inc, "Python.h")):
        return ("sid", inc)
    best = None
    for d in glob.glob(os.path.join(root, "versions", "%d.%d.*" % (major, minor))):
        m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", os.path.basename(d))
        if not m:
            continue  # skip 3.13.0t, dev builds, envs
        inc = glob.glob(os.path.join(d, "include", "python%d.%d*" % (major, minor)))
        inc = [i for i in inc if re.fullmatch(r"python\d\.\d+m?", os.path.basename(i))]
        if not inc:
            continue
        key = tuple(int(x) for x in m.groups())
        if best is None or key > best[0]:
            best = (key, os.path.basename(d), inc[0])
    if best:
        return (best[1], best[2])
    inc = os.path.join(SYSTEM_INCLUDE, "python%d.%d" % (major, minor))
    return ("system", inc) if os.path.isfile(os.path.join(inc, "Python.h")) else None


# Debian's python3-dev: /usr/include/pythonX.Y and its multiarch pyconfig.h.
SYSTEM_INCLUDE = "/usr/include"


ARCHES = {
    "x86_64": {"cc": ["cc"], "run": [], "guard": "__x86_64__", "name": "x86-64", "triplet": "x86_64-linux-gnu",
               "file": "offsets_table.c"},
    "aarch64": {"cc": ["aarch64-linux-gnu-gcc"], "run": ["qemu-aarch64-static", "-L", "/usr/aarch64-linux-gnu"],
                "guard": "__aarch64__", "name": "AArch64", "triplet": "aarch64-linux-gnu", "file": "offsets_table_aarch64.c"},
}


def multiarch_dir(tmp, inc, triplet):
    """Debian's pythonX.Y/pyconfig.h includes <TRIPLET/pythonX.Y/pyconfig.h>
    from /usr/include: a directory that has only that, so that the root's
    other headers (its libc) stay out of the compiler's path."""
    name = os.path.basename(inc)
    real = os.path.join(os.path.dirname(inc), triplet, name)
    if not os.path.isdir(real) and os.path.dirname(inc) == SYSTEM_INCLUDE:
        # The host's pyconfig.h for the cross build, as pyenv's headers give
        # it: both are LP64 Linux, and pyconfig.h sets no struct layout.
        real = os.path.join(SYSTEM_INCLUDE, ARCHES["x86_64"]["triplet"], name)
    if not os.path.isdir(real):
        return []
    os.makedirs(os.path.join(tmp, "multiarch", triplet))
    os.symlink(real, os.path.join(tmp, "multiarch", triplet, name))
    return ["-I" + os.path.join(tmp, "multiarch")]


def measure(inc, arch):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.c")
        exe = os.path.join(tmp, "probe")
        with open(src, "w") as f:
            f.write(PROBE.replace("/*DEBUG_OFFSETS*/", debug_probe()))
        subprocess.run(arch["cc"] + ["-std=gnu11", "-w", "-DPy_BUILD_CORE", "-I" + inc,
                        "-I" + os.path.join(inc, "internal")] + multiarch_dir(tmp, inc, arch["triplet"]) +
                       ["-o", exe, src], check=True)
        out = subprocess.run(arch["run"] + [exe], capture_output=True, text=True, check=True).stdout
    vals = {}
    version = None
    for line in out.splitlines():
        k, v = line.split()
        if k == "version":
            version = v
        else:
            vals[k] = int(v)
    return version, vals


def entry_fields(block):
    """An entry without its label and headers_version: what the reader uses."""
    lines = block.strip("\n").split("\n")[1:-1]
    return "\n".join(re.sub(r' \.headers_version = "[^"]*",', "", l) for l in lines)


def same_fields(block, committed):
    """Whether an entry of FILE has BLOCK's fields (the same minor version and
    patch range, measured from another patch release's headers)."""
    want = entry_fields(block)
    for other in re.findall(r"\t/\* BEGIN .*?\*/\n.*?\t/\* END [^*]*\*/", committed, re.S):
        if entry_fields(other) == want:
            return True
    return False


def entry(major, minor, version, vals, micros=(0, 255), label=None):
    label = label or "%s (measured from its headers)" % version
    lines = ["\t/* BEGIN %s */" % label,
             "\t{ .major = %d, .minor = %d, .micro_first = %d, .micro_last = %d, .headers_version = \"%s\","
             % (major, minor, micros[0], micros[1], version)]
    for name in FIELDS:
        lines.append("\t  .%s = %d," % (name, vals.get(name, -1)))
    lines.append("\t  .dbg_size = %d," % vals.get("dbg_size", -1))
    if "dbg_size" in vals:
        lines.append("\t  .dbg = {")
        for name, _, _ in DEBUG_FIELDS:
            lines.append("\t\t[%s] = %d," % (name, vals.get(name, -1)))
        lines.append("\t  },")
    lines.append("\t},")
    lines.append("\t/* END %s */" % label.split(" ")[0])
    return "\n".join(lines) + "\n"


def patch_entries(major, minor, version, vals):
    """The entries of the patch ranges of major.minor laid out differently
    from the measured version: its values with theirs."""
    out = []
    for (mm, (first, last), fields) in PATCH_RANGES:
        if mm != (major, minor):
            continue
        label = "%d.%d.%d-%d.%d.%d (%s's headers, with %s as those releases have it)" % (
            major, minor, first, major, minor, last, version, ", ".join(sorted(fields)))
        moved = {k: vals[k] + d for k, d in fields.items()}
        out.append(entry(major, minor, version, dict(vals, **moved), (first, last), label))
    return out


HEAD = """/* GENERATED by scripts/gen_python_offsets.py -- do not edit.
 * %s offsets of the CPython structs the reader follows, measured with
 * offsetof()/sizeof() against each version's installed headers (release,
 * GIL builds).  -1 = no such field in that version.  An entry is for the
 * patch releases micro_first..micro_last; the first one that covers a
 * release is its. */
#include "py_runtime.h"

#if defined(%s)
const struct py_offsets py_offsets_table[] = {
"""
TAIL = """};
const size_t py_offsets_table_len = sizeof py_offsets_table / sizeof py_offsets_table[0];
#endif
"""


def generate(root, arch):
    blocks = []
    for major, minor in MINORS:
        found = find_include(root, major, minor)
        if found and found[0] == "sid" and not os.path.isdir(
                os.path.join(os.path.dirname(found[1]), arch["triplet"], os.path.basename(found[1]))):
            found = None   # the root is another architecture's: no pyconfig.h for this one
        if not found:
            print("gen_python_offsets: no headers for %d.%d" % (major, minor), file=sys.stderr)
            continue
        version, vals = measure(found[1], arch)
        label = "%s (the system's headers)" % version if found[0] == "system" else None
        blocks.extend(patch_entries(major, minor, version, vals))
        blocks.append(entry(major, minor, version, vals, label=label))
    return blocks


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    out = None
    check = None
    arch = ARCHES["x86_64"]
    need = []
    i = 1
    while i < len(argv):
        if argv[i] == "-o":
            out = argv[i + 1]; i += 2
        elif argv[i] == "--check":
            check = argv[i + 1]; i += 2
        elif argv[i] == "--need" and i + 1 < len(argv):
            need.append(argv[i + 1]); i += 2
        elif argv[i] == "--arch" and i + 1 < len(argv) and argv[i + 1] in ARCHES:
            arch = ARCHES[argv[i + 1]]; i += 2
        else:
            print(__doc__, file=sys.stderr)
            return 64
    out = out or os.path.join(here, "..", "python-stacks", "runtime", arch["file"])
    missing = [t for t in arch["cc"][:1] + arch["run"][:1] if not shutil.which(t)]
    if missing:
        print("SKIP: %s not installed (make cross-arm64 installs it)" % " and ".join(missing))
        return 77
    blocks = generate(pyenv_root(), arch)
    measured = {b.split("\n")[0].split()[2].rsplit(".", 1)[0] for b in blocks if "BEGIN" in b.split("\n")[0]}
    missing = [v for v in need if v not in measured]
    if missing:
        print("FAIL: no headers found for %s (sid root: %s)" % (", ".join(missing), sid_root()))
        return 1
    if check:
        if not blocks:
            print("SKIP: no CPython headers found under %s nor in %s (make deps-test installs python3-dev)"
                  % (pyenv_root(), SYSTEM_INCLUDE))
            return 77
        with open(check) as f:
            committed = f.read()
        bad = 0
        for b in blocks:
            name = b.split("\n")[0]
            if b in committed:
                print("same: %s" % name.strip())
            elif "(the system's headers)" in name and same_fields(b, committed):
                print("same fields as the committed entry: %s" % name.strip())
            else:
                print("DIFFERS: %s\n%s" % (name.strip(), b))
                bad += 1
        print("%d entries compared, %d differ" % (len(blocks), bad))
        return 1 if bad else 0
    with open(out, "w") as f:
        f.write(HEAD % (arch["name"], arch["guard"]) + "".join(blocks) + TAIL)
    print("wrote %s (%d versions)" % (out, len(blocks)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
