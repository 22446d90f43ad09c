# python-stacks/: CPython frame reading for ember (see python-stacks/README.md).
# Included from the root CMakeLists.txt.  The few ELF lookups of the hot path
# are parsed by hand (elf_syms.c); the eval loop's DWARF, when the interpreter
# has some, is read with libdw (eval_dwarf.c).
add_library(ember_python STATIC
  ${PROJECT_SOURCE_DIR}/python-stacks/find_runtime.c
  ${PROJECT_SOURCE_DIR}/python-stacks/elf_syms.c
  ${PROJECT_SOURCE_DIR}/python-stacks/offsets.c
  ${PROJECT_SOURCE_DIR}/python-stacks/offsets_table.c
  ${PROJECT_SOURCE_DIR}/python-stacks/remote_mem.c
  ${PROJECT_SOURCE_DIR}/python-stacks/threads.c
  ${PROJECT_SOURCE_DIR}/python-stacks/frames.c
  ${PROJECT_SOURCE_DIR}/python-stacks/code_cache.c
  ${PROJECT_SOURCE_DIR}/python-stacks/evidence.c
  ${PROJECT_SOURCE_DIR}/python-stacks/eval_dwarf.c
  ${PROJECT_SOURCE_DIR}/python-stacks/eval_cold.c
  ${PROJECT_SOURCE_DIR}/python-stacks/thread_names.c
  ${PROJECT_SOURCE_DIR}/python-stacks/linetable.c)
target_include_directories(ember_python PUBLIC ${PROJECT_SOURCE_DIR}/python-stacks)
target_link_libraries(ember_python PRIVATE PkgConfig::LIBDW Threads::Threads)
