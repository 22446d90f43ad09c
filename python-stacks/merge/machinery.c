/* The interpreter's call machinery by name (py_merge.h,
 * ember_py_machinery): the functions every call goes through on its way
 * from a Python frame to what it calls (a Python function, a C function,
 * a method, a type's slot), the eval loop's setup of frames and
 * generators, and the interpreter's start and its threads' bootstrap.
 * Python frames stand for these; everything else the interpreter runs is
 * work a user would recognise (the garbage collector, the allocator, the
 * compiler, a built-in type's or module's C code: list.sort, _pickle,
 * _sre, _json) and is shown under the Python line that ran it.
 *
 * Names are CPython's own, 2.7 to 3.15 (python-stacks/README.md, "Which
 * native frames a Python stack shows", says what each family does).
 * GCC's clone suffixes (".lto_priv.0", ".isra.0", ".constprop.0",
 * ".part.0", ".cold") are ignored. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "py_merge.h"

/* Exact names, sorted (bytewise) for bsearch. */
static const char *const names[] = {
	"PyCFunction_Call",
	"PyEval_EvalCode",
	"PyEval_EvalCodeEx",
	"PyEval_EvalFrame",
	"PyEval_EvalFrameEx",
	"PyObject_Call",
	"PyObject_CallNoArgs",
	"PyObject_CallObject",
	"PyObject_CallOneArg",
	"PyObject_Vectorcall",
	"PyObject_VectorcallDict",
	"PyObject_VectorcallMethod",
	"PyVectorcall_Call",
	"Py_BytesMain",
	"Py_FinalizeEx",
	"Py_Main",
	"Py_RunMain",
	"_PyCFunction_FastCallDict",
	"_PyCFunction_FastCallKeywords",
	"_PyEval_EvalCode",
	"_PyEval_EvalCodeWithName",
	"_PyEval_EvalFrame",
	"_PyEval_EvalFrameDefault",
	"_PyEval_Vector",
	"_PyFunction_FastCall",
	"_PyFunction_FastCallDict",
	"_PyFunction_FastCallKeywords",
	"_PyFunction_Vectorcall",
	"_PyMethodDef_RawFastCallDict",
	"_PyMethodDef_RawFastCallKeywords",
	"_PyObject_Call",
	"_PyObject_Call_Prepend",
	"_PyObject_FastCall",
	"_PyObject_FastCallDict",
	"_PyObject_FastCallDictTstate",
	"_PyObject_FastCallKeywords",
	"_PyObject_FastCall_Prepend",
	"_PyObject_MakeTpCall",
	"_PyObject_VectorcallTstate",
	"_PyVectorcall_Call",
	"builtin_exec",
	"builtin_exec_impl",
	"call_function",
	"call_trampoline",
	"call_unbound",
	"call_unbound_noarg",
	"callmethod",
	"cfunction_call",
	"cfunction_call_varargs",
	"do_call",
	"do_call_core",
	"exec_code_in_module",
	"ext_do_call",
	"fast_function",
	"function_call",
	"function_code_fastcall",
	"gen_iternext",
	"gen_send",
	"gen_send_ex",
	"gen_send_ex2",
	"instancemethod_call",
	"main",
	"method_call",
	"method_vectorcall",
	"object_vacall",
	"pyrun_file",
	"pyrun_simple_file",
	"run_eval_code_obj",
	"run_mod",
	"slot_tp_call",
	"slot_tp_init",
	"slot_tp_new",
	"t_bootstrap",
	"thread_run",
	"type_call",
	"vectorcall_method",
	"vectorcall_unbound",
	"wrapper_call",
	"wrapperdescr_call",
};

/* Families open-ended by version and signature. */
static const char *const prefixes[] = {
	"PyEval_Call",             /* the C API's calls of a Python object from C code: */
	"PyObject_CallFunction",   /* PyObject_CallMethod, _PyObject_CallFunction_SizeT, */
	"PyObject_CallMethod",     /* _PyObject_CallMethodIdOneArg, PyEval_CallFunction... */
	"PyRun_",                  /* running a file or string (also embedders' entry) */
	"_PyEval_EvalFrame",       /* the eval loop's entry and its inlined variants */
	"_PyObject_CallFunction",
	"_PyObject_CallMethod",
	"_PyRun_",
	"_TAIL_CALL_",             /* 3.14's tail-calling interpreter's opcode handlers */
	"cfunction_vectorcall_",   /* a C function's calling conventions: _O, _NOARGS, _FASTCALL... */
	"method_vectorcall_",      /* a method descriptor's: _O, _NOARGS, _VARARGS... */
	"pymain_",                 /* python's main(): options, the file, the REPL */
};

static int by_name(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

bool ember_py_machinery(const char *function)
{
	if (!function)
		return false;
	char base[128];
	size_t n = strcspn(function, ".");   /* a clone suffix is dropped */
	if (n >= sizeof base)
		return false;
	memcpy(base, function, n);
	base[n] = 0;
	if (bsearch(base, names, sizeof names / sizeof names[0], sizeof names[0], by_name))
		return true;
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}
