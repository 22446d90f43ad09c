# The off-CPU tracer (sampler/offcpu.h): a BPF object compiled by clang and
# embedded in the sampler (offcpu_obj.c includes the object file's bytes).
# Included from the root CMakeLists.txt after the sampler library.
find_program(EMBER_BPF_CLANG NAMES clang clang-16 clang-15 clang-14 REQUIRED)
set(EMBER_OFFCPU_BPF_OBJECT ${CMAKE_BINARY_DIR}/offcpu.bpf.o)
set(EMBER_OFFCPU_ARCH_INCLUDE)
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(EMBER_OFFCPU_ARCH_INCLUDE -I/usr/include/${CMAKE_LIBRARY_ARCHITECTURE})   # asm/types.h
endif()
add_custom_command(OUTPUT ${EMBER_OFFCPU_BPF_OBJECT}
  COMMAND ${EMBER_BPF_CLANG} -O2 -g -target bpf -Wall -Werror ${EMBER_OFFCPU_ARCH_INCLUDE}
          -I${PROJECT_SOURCE_DIR}/sampler
          -c ${PROJECT_SOURCE_DIR}/sampler/offcpu.bpf.c -o ${EMBER_OFFCPU_BPF_OBJECT}
  DEPENDS ${PROJECT_SOURCE_DIR}/sampler/offcpu.bpf.c ${PROJECT_SOURCE_DIR}/sampler/offcpu_record.h
  COMMENT "BPF off-CPU tracer")
target_sources(ember_sampler PRIVATE ${PROJECT_SOURCE_DIR}/sampler/offcpu.c ${PROJECT_SOURCE_DIR}/sampler/offcpu_obj.c)
target_link_libraries(ember_sampler PRIVATE PkgConfig::LIBBPF)
set_source_files_properties(${PROJECT_SOURCE_DIR}/sampler/offcpu_obj.c PROPERTIES
  OBJECT_DEPENDS ${EMBER_OFFCPU_BPF_OBJECT}
  COMPILE_DEFINITIONS EMBER_OFFCPU_BPF_OBJECT="${EMBER_OFFCPU_BPF_OBJECT}")
