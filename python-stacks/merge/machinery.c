/* The interpreter's call machinery by name (py_merge.h,
 * ember_py_machinery): the functions between a Python frame and what it
 * calls (a Python function, a C function, a method, a type's slot, a
 * generator), the eval loop's own helpers, and the interpreter's start and
 * its threads' bootstrap.  Python frames stand for these.  The names are
 * CPython's own, 2.7 and 3.6 to 3.15, taken from its sources and from the
 * frames seen between a Python frame and its callee in profiles of each
 * version; python-stacks/README.md ("Which native frames a Python stack
 * shows") says what each family does.  A name is matched without its clone
 * suffix (GCC's ".lto_priv.0", ".isra.0", ".constprop.0", ".part.0",
 * ".cold", LLVM's ".llvm.N", a PLT stub's "@plt"), exactly against the
 * table below or by one of the prefixes after it.  With the machinery go
 * the helpers inlined into the eval loop (reference counting, its value
 * stack, its inline caches): they are the loop's own code, so a sample in
 * one belongs to the frame that inlined it.
 *
 * On the other side of the line, and so not here: what a user recognises
 * as a builtin doing something, even when it calls Python code of its own
 * (list.sort and sorted with a key, map, filter, min/max, sum, any/all,
 * functools.reduce, partial and lru_cache, re.sub with a function, the
 * asyncio C tasks, contextvars.Context.run, weakref callbacks); the
 * abstract object protocol that dispatches an operator to a type
 * (PyNumber_Add, PyObject_RichCompare, PyObject_GetAttr, PyObject_Repr...);
 * the import system (import_name, PyImport_ImportModuleLevelObject); the
 * interpreter's initialisation; the collector, the allocator, the compiler
 * and every built-in type's and module's own code.  (A prefix "PyObject_Call"
 * would take the allocator's PyObject_Calloc: the C API's calls are named
 * one family at a time.) */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "py_merge.h"

enum family {
	EVAL,   /* the eval loop, its entry from C, its call helpers, and the
	         * helpers inlined into it (its inline caches, its thread state) */
	FRAME,  /* a Python frame set up, its arguments bound, its value stack,
	         * torn down */
	CALL,   /* the generic call paths: call API, vectorcall, tp_call, the
	         * recursion check every call makes, a deallocation dispatched */
	PYFUNC, /* calling a Python function or a bound method */
	CFUNC,  /* calling a C function or a method descriptor */
	SLOT,   /* a type slot that calls a class's dunder, a slot wrapper */
	GEN,    /* resuming a generator, coroutine or async generator */
	TRACE,  /* calling a trace, profile or sys.monitoring callback */
	RUN,    /* start-up, running a file, string, module or class body, exit */
	THREAD, /* a thread's bootstrap into its Python function */
	REF,    /* reference counting, inlined into every function: a sample in
	         * it belongs to the function it sits in (the eval loop, mostly),
	         * and a deallocation it starts shows by its type's dealloc */
};

/* Sorted (strcmp) for bsearch. */
static const struct machinery_name {
	const char *name;
	enum family family;
} names[] = {
	{ "PyCFunction_Call",                                      CFUNC },
	{ "PyEval_EvalCode",                                       EVAL },
	{ "PyEval_EvalCodeEx",                                     EVAL },
	{ "PyEval_EvalFrame",                                      EVAL },
	{ "PyEval_EvalFrameEx",                                    EVAL },
	{ "PyFrame_BlockPop",                                      FRAME },
	{ "PyFrame_BlockSetup",                                    FRAME },
	{ "PyFrame_New",                                           FRAME },
	{ "PyGen_am_send",                                         GEN },
	{ "PyInstance_New",                                        PYFUNC },
	{ "PyIter_Next",                                           CALL },
	{ "PyIter_Send",                                           GEN },
	{ "PyObject_Call",                                         CALL },
	{ "PyObject_CallFinalizer",                                CALL },
	{ "PyObject_CallFinalizerFromDealloc",                     CALL },
	{ "PyObject_CallNoArgs",                                   CALL },
	{ "PyObject_CallObject",                                   CALL },
	{ "PyObject_CallOneArg",                                   CALL },
	{ "PyVectorcall_Call",                                     CALL },
	{ "PyVectorcall_Function",                                 CALL },
	{ "PyVectorcall_NARGS",                                    CALL },
	{ "Py_BytesMain",                                          RUN },
	{ "Py_DECREF",                                             REF },
	{ "Py_EnterRecursiveCall",                                 CALL },
	{ "Py_Finalize",                                           RUN },
	{ "Py_FinalizeEx",                                         RUN },
	{ "Py_INCREF",                                             REF },
	{ "Py_LeaveRecursiveCall",                                 CALL },
	{ "Py_Main",                                               RUN },
	{ "Py_NewRef",                                             REF },
	{ "Py_RunMain",                                            RUN },
	{ "Py_XDECREF",                                            REF },
	{ "Py_XINCREF",                                            REF },
	{ "Py_XNewRef",                                            REF },
	{ "RunMainFromImporter",                                   RUN },
	{ "RunModule",                                             RUN },
	{ "_PyCFunction_FastCallDict",                             CFUNC },
	{ "_PyCFunction_FastCallKeywords",                         CFUNC },
	{ "_PyCallMethodDescriptorFastWithKeywords_StackRefSteal", EVAL },
	{ "_PyCallMethodDescriptorFast_StackRefSteal",             EVAL },
	{ "_PyEvalFrameClearAndPop",                               FRAME },
	{ "_PyEval_CallTracing",                                   TRACE },
	{ "_PyEval_EvalCode",                                      EVAL },
	{ "_PyEval_EvalCodeWithName",                              EVAL },
	{ "_PyEval_FrameClearAndPop",                              FRAME },
	{ "_PyEval_MakeFrameVector",                               EVAL },
	{ "_PyEval_Vector",                                        EVAL },
	{ "_PyFrame_Clear",                                        FRAME },
	{ "_PyFrame_ClearExceptCode",                              FRAME },
	{ "_PyFrame_ClearLocals",                                  FRAME },
	{ "_PyFrame_GetStackPointer",                              FRAME },
	{ "_PyFrame_Initialize",                                   FRAME },
	{ "_PyFrame_InitializeSpecials",                           FRAME },
	{ "_PyFrame_New_NoTrack",                                  FRAME },
	{ "_PyFrame_PushTrampolineUnchecked",                      FRAME },
	{ "_PyFrame_PushUnchecked",                                FRAME },
	{ "_PyFrame_SetStackPointer",                              FRAME },
	{ "_PyFrame_StackPeek",                                    FRAME },
	{ "_PyFrame_StackPop",                                     FRAME },
	{ "_PyFrame_StackPush",                                    FRAME },
	{ "_PyFrame_Stackbase",                                    FRAME },
	{ "_PyFunction_Vectorcall",                                PYFUNC },
	{ "_PyGen_Finalize",                                       GEN },
	{ "_PyGen_Send",                                           GEN },
	{ "_PyMethodDescr_FastCallKeywords",                       CFUNC },
	{ "_PyObject_Call",                                        CALL },
	{ "_PyObject_CallOneArg",                                  CALL },
	{ "_PyObject_Call_Prepend",                                CALL },
	{ "_PyObject_MakeTpCall",                                  CALL },
	{ "_PyThreadState_BumpFramePointer",                       FRAME },
	{ "_PyThreadState_BumpFramePointerSlow",                   FRAME },
	{ "_PyThreadState_GET",                                    EVAL },
	{ "_PyThreadState_HasStackSpace",                          FRAME },
	{ "_PyThreadState_PopFrame",                               FRAME },
	{ "_PyThreadState_PushFrame",                              FRAME },
	{ "_PyVectorcall_Call",                                    CALL },
	{ "_PyVectorcall_Function",                                CALL },
	{ "_PyVectorcall_FunctionInline",                          CALL },
	{ "_Py_BuiltinCallFastWithKeywords_StackRefSteal",         EVAL },
	{ "_Py_BuiltinCallFast_StackRefSteal",                     EVAL },
	{ "_Py_CallBuiltinClass_StackRefSteal",                    EVAL },
	{ "_Py_CheckFunctionResult",                               CALL },
	{ "_Py_CheckRecursiveCall",                                CALL },
	{ "_Py_CheckRecursiveCallPy",                              FRAME },
	{ "_Py_DECREF",                                            REF },
	{ "_Py_DECREF_NO_DEALLOC",                                 REF },
	{ "_Py_DECREF_SPECIALIZED",                                REF },
	{ "_Py_Dealloc",                                           CALL },
	{ "_Py_EnterRecursiveCall",                                CALL },
	{ "_Py_EnterRecursiveCallTstate",                          CALL },
	{ "_Py_EnterRecursivePy",                                  FRAME },
	{ "_Py_Finalize",                                          RUN },
	{ "_Py_HandlePending",                                     EVAL },
	{ "_Py_INCREF",                                            REF },
	{ "_Py_IsImmortal",                                        REF },
	{ "_Py_LeaveRecursiveCall",                                CALL },
	{ "_Py_LeaveRecursiveCallPy",                              FRAME },
	{ "_Py_LeaveRecursiveCallTstate",                          CALL },
	{ "_Py_NewRef",                                            REF },
	{ "_Py_UnixMain",                                          RUN },
	{ "_Py_VectorCallInstrumentation_StackRefSteal",           EVAL },
	{ "_Py_VectorCall_StackRefSteal",                          EVAL },
	{ "_Py_XDECREF",                                           REF },
	{ "_Py_XINCREF",                                           REF },
	{ "_Py_XNewRef",                                           REF },
	{ "_gen_throw",                                            GEN },
	{ "_start",                                                RUN },
	{ "async_gen_asend_iternext",                              GEN },
	{ "async_gen_asend_send",                                  GEN },
	{ "async_gen_asend_throw",                                 GEN },
	{ "async_gen_athrow_iternext",                             GEN },
	{ "async_gen_athrow_send",                                 GEN },
	{ "async_gen_athrow_throw",                                GEN },
	{ "atexit_callfuncs",                                      RUN },
	{ "build_class",                                           RUN },
	{ "builtin___build_class__",                               RUN },
	{ "builtin_eval",                                          RUN },
	{ "builtin_eval_impl",                                     RUN },
	{ "builtin_exec",                                          RUN },
	{ "builtin_exec_impl",                                     RUN },
	{ "builtin_execfile",                                      RUN },
	{ "call_attribute",                                        SLOT },
	{ "call_exc_trace",                                        TRACE },
	{ "call_function",                                         EVAL },
	{ "call_function_tail",                                    CALL },
	{ "call_instrumentation_vector",                           TRACE },
	{ "call_instrumentation_vector_protected",                 TRACE },
	{ "call_maybe",                                            SLOT },
	{ "call_method",                                           SLOT },
	{ "call_one_instrument",                                   TRACE },
	{ "call_profile_func",                                     TRACE },
	{ "call_py_exitfuncs",                                     RUN },
	{ "call_sys_exitfunc",                                     RUN },
	{ "call_trace",                                            TRACE },
	{ "call_trace_func",                                       TRACE },
	{ "call_trace_protected",                                  TRACE },
	{ "call_trampoline",                                       TRACE },
	{ "call_unbound",                                          SLOT },
	{ "call_unbound_noarg",                                    SLOT },
	{ "callmethod",                                            CALL },
	{ "cfunction_call",                                        CFUNC },
	{ "cfunction_call_varargs",                                CFUNC },
	{ "cfunction_check_kwargs",                                CFUNC },
	{ "cfunction_enter_call",                                  CFUNC },
	{ "classmethoddescr_call",                                 CFUNC },
	{ "clear_gen_frame",                                       FRAME },
	{ "clear_thread_frame",                                    FRAME },
	{ "coro_wrapper_close",                                    GEN },
	{ "coro_wrapper_iternext",                                 GEN },
	{ "coro_wrapper_send",                                     GEN },
	{ "coro_wrapper_throw",                                    GEN },
	{ "do_call",                                               EVAL },
	{ "do_call_core",                                          EVAL },
	{ "eval_frame_handle_pending",                             EVAL },
	{ "exec_code_in_module",                                   RUN },
	{ "exec_statement",                                        RUN },
	{ "ext_do_call",                                           EVAL },
	{ "fast_function",                                         EVAL },
	{ "frame_dealloc",                                         FRAME },
	{ "function_call",                                         PYFUNC },
	{ "function_code_fastcall",                                PYFUNC },
	{ "gen_close",                                             GEN },
	{ "gen_close_iter",                                        GEN },
	{ "gen_del",                                               GEN },
	{ "gen_iternext",                                          GEN },
	{ "gen_send",                                              GEN },
	{ "gen_send_ex",                                           GEN },
	{ "gen_send_ex2",                                          GEN },
	{ "gen_throw",                                             GEN },
	{ "half_compare",                                          SLOT },
	{ "half_richcompare",                                      SLOT },
	{ "initialize_locals",                                     FRAME },
	{ "instance_call",                                         PYFUNC },
	{ "instancemethod_call",                                   PYFUNC },
	{ "load_args",                                             EVAL },
	{ "lookup_maybe",                                          SLOT },
	{ "lookup_maybe_method",                                   SLOT },
	{ "lookup_method",                                         SLOT },
	{ "main",                                                  RUN },
	{ "maybe_call_line_trace",                                 TRACE },
	{ "method_call",                                           PYFUNC },
	{ "method_check_args",                                     CFUNC },
	{ "method_enter_call",                                     CFUNC },
	{ "methoddescr_call",                                      CFUNC },
	{ "object_vacall",                                         CALL },
	{ "profile_trampoline",                                    TRACE },
	{ "property_descr_get",                                    CALL },
	{ "property_descr_set",                                    CALL },
	{ "pyrun_file",                                            RUN },
	{ "pyrun_simple_file",                                     RUN },
	{ "pythread_wrapper",                                      THREAD },
	{ "read_obj",                                              EVAL },
	{ "read_u16",                                              EVAL },
	{ "read_u32",                                              EVAL },
	{ "read_u64",                                              EVAL },
	{ "run_command",                                           RUN },
	{ "run_eval_code_obj",                                     RUN },
	{ "run_file",                                              RUN },
	{ "run_mod",                                               RUN },
	{ "run_pyc_file",                                          RUN },
	{ "sm_call",                                               PYFUNC },
	{ "t_bootstrap",                                           THREAD },
	{ "thread_run",                                            THREAD },
	{ "tp_new_wrapper",                                        SLOT },
	{ "trace_call_function",                                   EVAL },
	{ "trace_trampoline",                                      TRACE },
	{ "type_call",                                             CALL },
	{ "update_keyword_args",                                   EVAL },
	{ "update_star_args",                                      EVAL },
	{ "vectorcall_maybe",                                      SLOT },
	{ "vectorcall_method",                                     SLOT },
	{ "vectorcall_unbound",                                    SLOT },
	{ "wait_for_thread_shutdown",                              RUN },
	{ "wrap_binaryfunc",                                       SLOT },
	{ "wrap_binaryfunc_l",                                     SLOT },
	{ "wrap_binaryfunc_r",                                     SLOT },
	{ "wrap_buffer",                                           SLOT },
	{ "wrap_call",                                             SLOT },
	{ "wrap_cmpfunc",                                          SLOT },
	{ "wrap_coercefunc",                                       SLOT },
	{ "wrap_del",                                              SLOT },
	{ "wrap_delattr",                                          SLOT },
	{ "wrap_delitem",                                          SLOT },
	{ "wrap_delslice",                                         SLOT },
	{ "wrap_descr_delete",                                     SLOT },
	{ "wrap_descr_get",                                        SLOT },
	{ "wrap_descr_set",                                        SLOT },
	{ "wrap_hashfunc",                                         SLOT },
	{ "wrap_indexargfunc",                                     SLOT },
	{ "wrap_init",                                             SLOT },
	{ "wrap_inquirypred",                                      SLOT },
	{ "wrap_lenfunc",                                          SLOT },
	{ "wrap_next",                                             SLOT },
	{ "wrap_objobjargproc",                                    SLOT },
	{ "wrap_objobjproc",                                       SLOT },
	{ "wrap_releasebuffer",                                    SLOT },
	{ "wrap_richcmpfunc",                                      SLOT },
	{ "wrap_setattr",                                          SLOT },
	{ "wrap_sq_delitem",                                       SLOT },
	{ "wrap_sq_item",                                          SLOT },
	{ "wrap_sq_setitem",                                       SLOT },
	{ "wrap_ssizessizeargfunc",                                SLOT },
	{ "wrap_ssizessizeobjargproc",                             SLOT },
	{ "wrap_ternaryfunc",                                      SLOT },
	{ "wrap_ternaryfunc_r",                                    SLOT },
	{ "wrap_unaryfunc",                                        SLOT },
	{ "wrapper_call",                                          SLOT },
	{ "wrapperdescr_call",                                     SLOT },
	{ "wrapperdescr_raw_call",                                 SLOT },
};

/* Families whose members vary by version or calling convention. */
static const struct machinery_prefix {
	const char *prefix;
	enum family family;
} prefixes[] = {
	{ "_PyEval_EvalFrame",          EVAL },   /* _PyEval_EvalFrameDefault, _PyEval_EvalFrame */
	{ "_TAIL_CALL_",                EVAL },   /* 3.14's tail-calling interpreter's opcode handlers */
	{ "_Py_atomic_",                EVAL },   /* atomics inlined in the eval loop (its eval breaker) */
	{ "_PyEvalFramePushAndInit",    FRAME },  /* 3.11+: and _Ex, from a tuple and a dict */
	{ "PyEval_Call",                CALL },   /* PyEval_CallObjectWithKeywords, _CallFunction, _CallMethod */
	{ "PyObject_CallFunction",      CALL },   /* the C API's calls by format or by arguments */
	{ "PyObject_CallMethod",        CALL },   /* ... a method by name: _NoArgs, _OneArg, _ObjArgs */
	{ "_PyObject_CallFunction",     CALL },   /* _Va, _SizeT */
	{ "_PyObject_CallMethod",       CALL },   /* _Id, _IdObjArgs, _SizeT, _Format... */
	{ "_PyObject_CallNoArg",        CALL },   /* _PyObject_CallNoArg(s)(Tstate) */
	{ "PyObject_Vectorcall",        CALL },   /* PyObject_Vectorcall, _Dict, _Method */
	{ "_PyObject_Vectorcall",       CALL },   /* _Tstate, _DictTstate, _MethodId, _Prepend */
	{ "_PyObject_FastCall",         CALL },   /* 3.6-3.12: _Dict, _Keywords, _Tstate, _Prepend */
	{ "_PyObject_MaybeCallSpecial", CALL },   /* 3.14+: a dunder by name, if the type has it */
	{ "_PyStack_",                  CALL },   /* a call's arguments converted: _AsDict, _UnpackDict */
	{ "_PyFunction_FastCall",       PYFUNC }, /* 3.6-3.7: _Dict, _Keywords; 3.6's own in ceval.c */
	{ "_PyMethodDef_RawFastCall",   CFUNC },  /* 3.7: _Dict, _Keywords */
	{ "cfunction_vectorcall_",      CFUNC },  /* 3.8+: _O, _NOARGS, _FASTCALL, _FASTCALL_KEYWORDS... */
	{ "method_vectorcall",          CFUNC },  /* 3.8+: a bound method, a method descriptor's _O, _VARARGS... */
	{ "slot_",                      SLOT },   /* slot_tp_call, slot_tp_init, slot_nb_add, slot_sq_item... */
	{ "_Py_slot_",                  SLOT },   /* 3.12+: _Py_slot_tp_getattr_hook */
	{ "_Py_call_instrumentation",   TRACE },  /* 3.12+: sys.monitoring events */
	{ "sys_profile_",               TRACE },  /* 3.12+: sys.setprofile over sys.monitoring */
	{ "sys_trace_",                 TRACE },  /* 3.12+: sys.settrace over sys.monitoring */
	{ "PyImport_ExecCodeModule",    RUN },    /* an imported module's body: _Ex, _Object, _WithPathnames */
	{ "PyRun_",                     RUN },    /* a file or a string run: PyRun_SimpleFileExFlags, _StringFlags */
	{ "_PyRun_",                    RUN },    /* _PyRun_AnyFileObject, _PyRun_SimpleFileObject... */
	{ "pymain_",                    RUN },    /* python's main(): options, the script, -m, -c, the REPL */
	{ "PyStackRef_",                REF },    /* 3.14+: the eval loop's stack references: _CLOSE, _DUP */
	{ "_PyStackRef_",               REF },
};

static int by_name(const void *key, const void *elem)
{
	return strcmp(key, ((const struct machinery_name *)elem)->name);
}

bool ember_py_machinery(const char *function)
{
	if (!function)
		return false;
	/* The C name ends at the first '.' (a clone suffix) or '@' (@plt). */
	char base[128];
	size_t n = strcspn(function, ".@");
	if (n == 0 || n >= sizeof base)
		return false;
	memcpy(base, function, n);
	base[n] = '\0';
	if (bsearch(base, names, sizeof names / sizeof names[0], sizeof names[0], by_name))
		return true;
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (strncmp(base, prefixes[i].prefix, strlen(prefixes[i].prefix)) == 0)
			return true;
	return false;
}
