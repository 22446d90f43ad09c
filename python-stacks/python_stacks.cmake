# python-stacks/: CPython frame reading for ember (see python-stacks/README.md).
# Included from the root CMakeLists.txt.  Files in layer order, lowest first,
# one folder a layer (python-stacks/README.md).  The runtime's symbols come from common/'s ELF
# view (runtime.c); the eval loop's DWARF, when the interpreter has some, is
# read with libdw (eval_dwarf.c).
add_library(ember_python STATIC
  ${PROJECT_SOURCE_DIR}/python-stacks/runtime/remote_mem.c
  ${PROJECT_SOURCE_DIR}/python-stacks/runtime/offsets.c
  ${PROJECT_SOURCE_DIR}/python-stacks/runtime/offsets_table.c
  ${PROJECT_SOURCE_DIR}/python-stacks/runtime/offsets_table_aarch64.c
  ${PROJECT_SOURCE_DIR}/python-stacks/runtime/linetable.c
  ${PROJECT_SOURCE_DIR}/python-stacks/runtime/runtime.c
  ${PROJECT_SOURCE_DIR}/python-stacks/read/snapshot.c
  ${PROJECT_SOURCE_DIR}/python-stacks/read/strings.c
  ${PROJECT_SOURCE_DIR}/python-stacks/read/code_cache.c
  ${PROJECT_SOURCE_DIR}/python-stacks/read/code_index.c
  ${PROJECT_SOURCE_DIR}/python-stacks/read/frames.c
  ${PROJECT_SOURCE_DIR}/python-stacks/read/threads.c
  ${PROJECT_SOURCE_DIR}/python-stacks/read/thread_read.c
  ${PROJECT_SOURCE_DIR}/python-stacks/read/py_dict.c
  ${PROJECT_SOURCE_DIR}/python-stacks/read/thread_names.c
  ${PROJECT_SOURCE_DIR}/python-stacks/read/locals.c
  ${PROJECT_SOURCE_DIR}/python-stacks/check/eval_cold.c
  ${PROJECT_SOURCE_DIR}/python-stacks/check/eval_dwarf.c
  ${PROJECT_SOURCE_DIR}/python-stacks/check/calib.c
  ${PROJECT_SOURCE_DIR}/python-stacks/check/evidence.c
  ${PROJECT_SOURCE_DIR}/python-stacks/copier/copier_ring.c
  ${PROJECT_SOURCE_DIR}/python-stacks/copier/copier_intake.c
  ${PROJECT_SOURCE_DIR}/python-stacks/copier/copier.c
  ${PROJECT_SOURCE_DIR}/python-stacks/copier/copier_obj.c
  ${PROJECT_SOURCE_DIR}/python-stacks/session/reader.c
  ${PROJECT_SOURCE_DIR}/python-stacks/session/session.c
  ${PROJECT_SOURCE_DIR}/python-stacks/merge/machinery.c
  ${PROJECT_SOURCE_DIR}/python-stacks/merge/merge.c)
# Public: the reader (python_stacks.h), the sessions (session/session.h)
# and the merge (merge/py_merge.h).  Each layer's own header is the
# contract of its folder for the layers above it (PY_LAYER_DIRS; tests
# that drive a layer directly add them).
target_include_directories(ember_python PUBLIC ${PROJECT_SOURCE_DIR}/python-stacks
  ${PROJECT_SOURCE_DIR}/python-stacks/session ${PROJECT_SOURCE_DIR}/python-stacks/merge)
set(PY_LAYER_DIRS ${PROJECT_SOURCE_DIR}/python-stacks/runtime ${PROJECT_SOURCE_DIR}/python-stacks/read
  ${PROJECT_SOURCE_DIR}/python-stacks/check ${PROJECT_SOURCE_DIR}/python-stacks/copier)
target_include_directories(ember_python PRIVATE ${PY_LAYER_DIRS})
target_link_libraries(ember_python PUBLIC ember_common ember_sampler PRIVATE PkgConfig::LIBDW PkgConfig::LIBBPF Threads::Threads)

# The frame copier: a BPF object embedded in ember (copier/copier_obj.c includes
# its bytes; cmake/bpf.cmake builds it).
ember_bpf_object(${PROJECT_SOURCE_DIR}/python-stacks/copier/copier.bpf.c ${PROJECT_SOURCE_DIR}/python-stacks/copier/copier_obj.c
  EMBER_COPIER_BPF_OBJECT "BPF frame copier" ${PROJECT_SOURCE_DIR}/python-stacks/read/copier_record.h)
# Said by `ember --version`, in whatever links the copier.
target_compile_definitions(ember_python INTERFACE EMBER_HAVE_BPF_COPIER=1)
