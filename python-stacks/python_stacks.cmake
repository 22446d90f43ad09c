# python-stacks/: CPython frame reading for ember (see python-stacks/README.md).
# Included from the root CMakeLists.txt.  No external libraries: the few ELF
# lookups it needs are parsed by hand (elf_syms.c).
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
  ${PROJECT_SOURCE_DIR}/python-stacks/thread_names.c
  ${PROJECT_SOURCE_DIR}/python-stacks/linetable.c)
target_include_directories(ember_python PUBLIC ${PROJECT_SOURCE_DIR}/python-stacks)
