# BPF programs: compiled by clang for the BPF target and embedded in a
# library (a C file of it includes the object file's bytes, from the path
# given in the compile definition DEFINE).  The object is built for the
# target architecture's headers (asm/types.h under the multiarch include
# folder), as a cross build needs.
find_program(EMBER_BPF_CLANG NAMES clang clang-16 clang-15 clang-14 REQUIRED)
set(EMBER_BPF_ARCH_INCLUDE)
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(EMBER_BPF_ARCH_INCLUDE -I/usr/include/${CMAKE_LIBRARY_ARCHITECTURE})
endif()

# ember_bpf_object(SOURCE EMBED_FILE DEFINE WHAT DEPENDS...): SOURCE (a
# .bpf.c) into ${CMAKE_BINARY_DIR}/<name>.o, which EMBED_FILE includes
# through the macro DEFINE; WHAT names the step in the build's output.
# DEPENDS are the headers it includes: their folders are searched too.
# The variable named DEFINE is set to the object's path, for other targets
# that depend on it.
function(ember_bpf_object source embed_file define what)
  get_filename_component(name ${source} NAME_WE)
  get_filename_component(dir ${source} DIRECTORY)
  set(object ${CMAKE_BINARY_DIR}/${name}.bpf.o)
  set(includes -I${dir})
  foreach(header ${ARGN})
    get_filename_component(header_dir ${header} DIRECTORY)
    list(APPEND includes -I${header_dir})
  endforeach()
  add_custom_command(OUTPUT ${object}
    COMMAND ${EMBER_BPF_CLANG} -O2 -g -target bpf -Wall -Werror ${EMBER_BPF_ARCH_INCLUDE} ${includes}
            -c ${source} -o ${object}
    DEPENDS ${source} ${ARGN}
    COMMENT "${what}")
  set_source_files_properties(${embed_file} PROPERTIES
    OBJECT_DEPENDS ${object}
    COMPILE_DEFINITIONS ${define}="${object}")
  set(${define} ${object} PARENT_SCOPE)
endfunction()
