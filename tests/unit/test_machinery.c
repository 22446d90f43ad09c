/* The interpreter's call machinery by name (python-stacks/merge/machinery.c):
 * the table sorted, each family's names and prefixes, clone suffixes, and
 * the interpreter's work that must stay shown (the collector, the
 * allocator, the compiler, built-in types' and modules' code).  Includes
 * the implementation to check its tables. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "machinery.c"

static const char *const machinery[] = {
	/* the eval loop and its entry from C */
	"_PyEval_EvalFrameDefault", "_PyEval_EvalFrame", "PyEval_EvalFrameEx",
	"PyEval_EvalCodeEx", "_PyEval_EvalCodeWithName", "_PyEval_Vector",
	"PyEval_EvalCode", "call_function", "fast_function", "do_call_core",
	"ext_do_call", "_Py_HandlePending", "eval_frame_handle_pending",
	"_TAIL_CALL_CALL_PY_EXACT_ARGS", "_Py_VectorCall_StackRefSteal",
	"_PyCallMethodDescriptorFast_StackRefSteal", "read_u16",
	"_Py_atomic_load_uintptr_relaxed",
	/* frames */
	"_PyEvalFramePushAndInit", "_PyEvalFramePushAndInit_Ex",
	"_PyEval_FrameClearAndPop", "_PyEvalFrameClearAndPop",
	"clear_thread_frame", "_PyFrame_New_NoTrack", "frame_dealloc",
	"initialize_locals", "_PyThreadState_PushFrame", "_PyFrame_StackPush",
	"PyFrame_BlockSetup", "_Py_EnterRecursivePy",
	/* generic call paths */
	"PyObject_Call", "_PyObject_Call", "PyObject_Vectorcall",
	"_PyObject_VectorcallTstate", "PyObject_VectorcallMethod",
	"_PyObject_VectorcallPrepend", "_PyObject_MakeTpCall",
	"_PyObject_FastCallDictTstate", "_PyObject_FastCallKeywords",
	"_PyObject_Call_Prepend", "PyObject_CallOneArg", "_PyObject_CallNoArgs",
	"PyObject_CallFunctionObjArgs", "_PyObject_CallFunction_SizeT",
	"PyObject_CallMethodObjArgs", "_PyObject_CallMethodIdObjArgs",
	"PyEval_CallObjectWithKeywords", "object_vacall", "callmethod",
	"PyVectorcall_Call", "_PyStack_UnpackDict", "type_call", "PyIter_Next",
	"_PyObject_MaybeCallSpecialOneArg", "PyObject_CallFinalizerFromDealloc",
	"property_descr_get", "_Py_Dealloc", "_Py_EnterRecursiveCallTstate",
	/* Python functions and bound methods */
	"_PyFunction_Vectorcall", "function_code_fastcall", "_PyFunction_FastCall",
	"_PyFunction_FastCallKeywords", "function_call", "method_vectorcall",
	"instancemethod_call", "sm_call",
	/* C functions and method descriptors */
	"cfunction_vectorcall_O", "cfunction_vectorcall_FASTCALL_KEYWORDS",
	"cfunction_call", "PyCFunction_Call", "_PyCFunction_FastCallKeywords",
	"_PyMethodDef_RawFastCallKeywords", "method_vectorcall_VARARGS_KEYWORDS",
	"methoddescr_call", "classmethoddescr_call",
	/* type slots and slot wrappers */
	"slot_tp_call", "slot_tp_init", "slot_tp_new", "slot_nb_add",
	"slot_tp_richcompare", "slot_tp_hash", "slot_sq_item", "slot_tp_finalize",
	"_Py_slot_tp_getattr_hook", "call_attribute", "vectorcall_method",
	"vectorcall_unbound", "call_unbound_noarg", "call_method", "lookup_maybe_method",
	"half_richcompare", "wrapperdescr_call", "wrapper_call", "wrap_init",
	"wrap_binaryfunc_l", "tp_new_wrapper",
	/* generators, coroutines, async generators */
	"gen_iternext", "gen_send_ex", "gen_send_ex2", "PyGen_am_send", "PyIter_Send",
	"_PyGen_Send", "gen_throw", "gen_close", "coro_wrapper_send",
	"async_gen_asend_send",
	/* tracing and monitoring */
	"call_trace", "call_trampoline", "trace_trampoline", "call_trace_func",
	"_Py_call_instrumentation_2args", "call_instrumentation_vector",
	"sys_trace_func2", "sys_profile_call_or_return",
	/* running code */
	"_start", "main", "Py_BytesMain", "Py_Main", "Py_RunMain", "pymain_main",
	"pymain_run_python", "pymain_run_file_obj", "_PyRun_AnyFileObject",
	"_PyRun_SimpleFileObject", "PyRun_SimpleFileExFlags", "PyRun_StringFlags",
	"pyrun_file", "run_mod", "run_eval_code_obj", "builtin_exec",
	"builtin_exec_impl", "builtin_eval", "exec_statement", "builtin___build_class__",
	"exec_code_in_module", "PyImport_ExecCodeModuleObject", "Py_FinalizeEx", "_Py_Finalize",
	"RunModule",
	/* threads */
	"t_bootstrap", "thread_run", "pythread_wrapper",
	/* reference counting */
	"Py_DECREF", "_Py_DECREF", "Py_XDECREF", "Py_INCREF", "PyStackRef_CLOSE",
};

static const char *const work[] = {
	/* the collector */
	"gc_collect_main", "gc_collect", "gc_collect_impl", "_Py_RunGC",
	"collect_with_callback", "gc_collect_generations", "_PyObject_GC_Link",
	"_PyObject_GC_Alloc", "deduce_unreachable", "subtract_refs", "visit_decref",
	"visit_reachable", "dict_traverse", "list_traverse", "move_unreachable",
	"delete_garbage", "finalize_garbage",
	/* the allocator */
	"PyObject_Malloc", "_PyObject_Malloc", "PyObject_Calloc", "_PyObject_Calloc",
	"PyObject_Free", "_PyObject_Free", "pymalloc_alloc", "pymalloc_free",
	"allocate_from_new_pool",
	/* the compiler */
	"builtin_compile", "builtin_compile_impl", "Py_CompileStringObject",
	"_PyAST_Compile", "_PyPegen_run_parser_from_string", "compiler_visit_expr",
	/* built-in modules and types */
	"list_sort", "list_sort_impl", "listsort", "merge_at", "binarysort",
	"unsafe_object_compare", "keyobject_richcompare", "load", "load_build",
	"_pickle_loads", "_pickle_Unpickler_load", "load_binunicode", "save",
	"sre_ucs1_match", "sre_ucs1_search", "pattern_subx", "_sre_SRE_Pattern_sub",
	"scanstring_unicode", "scan_once_unicode", "scanner_call", "encoder_call",
	"map_next", "filter_next", "min_max", "builtin_sum", "builtin_sorted",
	"builtin_next", "builtin_len", "functools_reduce", "partial_vectorcall",
	"partial_call", "bounded_lru_cache_wrapper", "infinite_lru_cache_wrapper",
	"context_run", "task_step", "task_step_impl", "handle_callback",
	"unicode_split", "PyUnicode_Join", "type_new", "object_new", "list_dealloc",
	"subtype_dealloc", "dict_dealloc", "take_gil", "drop_gil",
	/* the object protocol, attribute lookup, import */
	"PyNumber_Add", "binary_op1", "PyObject_RichCompare", "do_richcompare",
	"PyObject_GetAttr", "_PyObject_GenericGetAttrWithDict", "PyObject_GetIter",
	"PyObject_Repr", "import_name", "PyImport_ImportModuleLevelObject",
	"builtin___import__", "import_find_and_load", "Py_InitializeFromConfig",
	/* near misses of the families */
	"wrap_codec_error", "wrap_strftime", "call_show_warning", "lookup_tp_mro",
	"PyFrame_FastToLocalsWithError", "_PyFrame_ClearFreeList", "gen_dealloc",
	"PyObject_CallableCheck", "PyRun", "run_at_forkers", "slot",
	"PyObject_Vectorcal", "method_get", "cfunction", "_PyEval_EvalFram",
	/* not a C name */
	"", ".lto_priv.0", "@plt", "[libpython3.12.so.1.0+0x1a2b3c]",
};

int main(void)
{
	size_t n_names = sizeof names / sizeof names[0];
	for (size_t i = 1; i < n_names; i++)
		CHECK_MSG(strcmp(names[i - 1].name, names[i].name) < 0, names[i].name);
	for (size_t i = 0; i < n_names; i++)
		CHECK_MSG(ember_py_machinery(names[i].name), names[i].name);
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		CHECK_MSG(ember_py_machinery(prefixes[i].prefix), prefixes[i].prefix);
	for (int f = EVAL; f <= REF; f++) {
		bool seen = false;
		for (size_t i = 0; i < n_names; i++)
			seen |= names[i].family == (enum family)f;
		for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
			seen |= prefixes[i].family == (enum family)f;
		CHECK(seen);
	}
	for (size_t i = 0; i < sizeof machinery / sizeof machinery[0]; i++)
		CHECK_MSG(ember_py_machinery(machinery[i]), machinery[i]);
	for (size_t i = 0; i < sizeof work / sizeof work[0]; i++)
		CHECK_MSG(!ember_py_machinery(work[i]), work[i]);

	/* GCC's clone suffixes, alone and combined, LLVM's, a PLT stub */
	static const char *const suffixes[] = {
		".lto_priv.0", ".isra.0", ".constprop.0", ".part.0", ".cold",
		".constprop.0.isra.0", ".lto_priv.0.cold", ".part.0.lto_priv.0",
		".isra.0.cold", ".llvm.1234567890", "@plt",
	};
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		static const char *const hidden[] = { "slot_tp_call", "_PyEval_EvalFrameDefault", "cfunction_vectorcall_O" };
		static const char *const shown[] = { "gc_collect_main", "list_sort_impl" };
		char buf[128];
		for (size_t k = 0; k < sizeof hidden / sizeof hidden[0]; k++) {
			snprintf(buf, sizeof buf, "%s%s", hidden[k], suffixes[i]);
			CHECK_MSG(ember_py_machinery(buf), buf);
		}
		for (size_t k = 0; k < sizeof shown / sizeof shown[0]; k++) {
			snprintf(buf, sizeof buf, "%s%s", shown[k], suffixes[i]);
			CHECK_MSG(!ember_py_machinery(buf), buf);
		}
	}

	/* no name, and a name longer than any of CPython's */
	CHECK(!ember_py_machinery(NULL));
	char longname[300];
	memset(longname, 'x', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	memcpy(longname, "slot_", 5);
	CHECK(!ember_py_machinery(longname));
	return check_report();
}
