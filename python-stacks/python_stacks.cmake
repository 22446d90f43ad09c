# python-stacks/: CPython frame reading for ember (see python-stacks/README.md).
# Included from the root CMakeLists.txt.  Files in layer order, lowest first
# (python-stacks/README.md).  The runtime's symbols come from common/'s ELF
# view (runtime.c); the eval loop's DWARF, when the interpreter has some, is
# read with libdw (eval_dwarf.c).
add_library(ember_python STATIC
  ${PROJECT_SOURCE_DIR}/python-stacks/remote_mem.c
  ${PROJECT_SOURCE_DIR}/python-stacks/offsets.c
  ${PROJECT_SOURCE_DIR}/python-stacks/offsets_table.c
  ${PROJECT_SOURCE_DIR}/python-stacks/offsets_table_aarch64.c
  ${PROJECT_SOURCE_DIR}/python-stacks/linetable.c
  ${PROJECT_SOURCE_DIR}/python-stacks/runtime.c
  ${PROJECT_SOURCE_DIR}/python-stacks/snapshot.c
  ${PROJECT_SOURCE_DIR}/python-stacks/strings.c
  ${PROJECT_SOURCE_DIR}/python-stacks/code_cache.c
  ${PROJECT_SOURCE_DIR}/python-stacks/code_index.c
  ${PROJECT_SOURCE_DIR}/python-stacks/frames.c
  ${PROJECT_SOURCE_DIR}/python-stacks/threads.c
  ${PROJECT_SOURCE_DIR}/python-stacks/thread_read.c
  ${PROJECT_SOURCE_DIR}/python-stacks/eval_cold.c
  ${PROJECT_SOURCE_DIR}/python-stacks/eval_dwarf.c
  ${PROJECT_SOURCE_DIR}/python-stacks/calib.c
  ${PROJECT_SOURCE_DIR}/python-stacks/evidence.c
  ${PROJECT_SOURCE_DIR}/python-stacks/py_dict.c
  ${PROJECT_SOURCE_DIR}/python-stacks/thread_names.c
  ${PROJECT_SOURCE_DIR}/python-stacks/locals.c
  ${PROJECT_SOURCE_DIR}/python-stacks/copier_ring.c
  ${PROJECT_SOURCE_DIR}/python-stacks/copier_intake.c
  ${PROJECT_SOURCE_DIR}/python-stacks/copier.c
  ${PROJECT_SOURCE_DIR}/python-stacks/copier_obj.c
  ${PROJECT_SOURCE_DIR}/python-stacks/reader.c
  ${PROJECT_SOURCE_DIR}/python-stacks/session.c
  ${PROJECT_SOURCE_DIR}/python-stacks/machinery.c
  ${PROJECT_SOURCE_DIR}/python-stacks/merge.c)
target_include_directories(ember_python PUBLIC ${PROJECT_SOURCE_DIR}/python-stacks)
target_link_libraries(ember_python PUBLIC ember_common ember_sampler PRIVATE PkgConfig::LIBDW PkgConfig::LIBBPF Threads::Threads)

# The frame copier: a BPF object embedded in ember (copier_obj.c includes
# its bytes; cmake/bpf.cmake builds it).
ember_bpf_object(${PROJECT_SOURCE_DIR}/python-stacks/copier.bpf.c ${PROJECT_SOURCE_DIR}/python-stacks/copier_obj.c
  EMBER_COPIER_BPF_OBJECT "BPF frame copier" ${PROJECT_SOURCE_DIR}/python-stacks/copier_record.h)
# Said by `ember --version`, in whatever links the copier.
target_compile_definitions(ember_python INTERFACE EMBER_HAVE_BPF_COPIER=1)
