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
  ${PROJECT_SOURCE_DIR}/python-stacks/merge.c)
target_include_directories(ember_python PUBLIC ${PROJECT_SOURCE_DIR}/python-stacks)
target_link_libraries(ember_python PUBLIC ember_common ember_sampler PRIVATE PkgConfig::LIBDW PkgConfig::LIBBPF Threads::Threads)

# The frame copier: a BPF program compiled by clang and embedded
# in ember (copier_obj.c includes the object file's bytes).
find_program(EMBER_BPF_CLANG NAMES clang clang-16 clang-15 clang-14 REQUIRED)
set(EMBER_COPIER_BPF_OBJECT ${CMAKE_BINARY_DIR}/copier.bpf.o)
set(EMBER_BPF_ARCH_INCLUDE)
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(EMBER_BPF_ARCH_INCLUDE -I/usr/include/${CMAKE_LIBRARY_ARCHITECTURE})   # asm/types.h
endif()
add_custom_command(OUTPUT ${EMBER_COPIER_BPF_OBJECT}
  COMMAND ${EMBER_BPF_CLANG} -O2 -g -target bpf -Wall -Werror ${EMBER_BPF_ARCH_INCLUDE}
          -I${PROJECT_SOURCE_DIR}/python-stacks
          -c ${PROJECT_SOURCE_DIR}/python-stacks/copier.bpf.c -o ${EMBER_COPIER_BPF_OBJECT}
  DEPENDS ${PROJECT_SOURCE_DIR}/python-stacks/copier.bpf.c
          ${PROJECT_SOURCE_DIR}/python-stacks/copier_record.h
  COMMENT "BPF frame copier")
set_source_files_properties(${PROJECT_SOURCE_DIR}/python-stacks/copier_obj.c PROPERTIES
  OBJECT_DEPENDS ${EMBER_COPIER_BPF_OBJECT}
  COMPILE_DEFINITIONS EMBER_COPIER_BPF_OBJECT="${EMBER_COPIER_BPF_OBJECT}")
