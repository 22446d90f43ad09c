# symbolizer/ unit test.  Fixtures are compiled by explicit commands rather
# than targets so the project's flags (sanitizers, RelWithDebInfo, -Werror)
# never change their code: the test relies on exact -O2 inlining.
set(SYMB_FIX_SRC ${CMAKE_CURRENT_LIST_DIR}/fixtures)
set(SYMB_FIX_DIR ${CMAKE_CURRENT_BINARY_DIR}/symbolizer-fixtures)
set(SYMB_FIX_FLAGS -O2 -g -fomit-frame-pointer)
file(MAKE_DIRECTORY ${SYMB_FIX_DIR})
find_program(SYMB_OBJCOPY NAMES ${CMAKE_OBJCOPY} objcopy REQUIRED)
find_program(SYMB_STRIP NAMES ${CMAKE_STRIP} strip REQUIRED)

add_custom_command(OUTPUT ${SYMB_FIX_DIR}/symb_fixture
  COMMAND ${CMAKE_C_COMPILER} ${SYMB_FIX_FLAGS} -o symb_fixture ${SYMB_FIX_SRC}/symb_fixture.c
  DEPENDS ${SYMB_FIX_SRC}/symb_fixture.c
  WORKING_DIRECTORY ${SYMB_FIX_DIR} VERBATIM)

add_custom_command(OUTPUT ${SYMB_FIX_DIR}/symb_fixture_cxx
  COMMAND ${CMAKE_CXX_COMPILER} ${SYMB_FIX_FLAGS} -o symb_fixture_cxx ${SYMB_FIX_SRC}/symb_fixture_cxx.cc
  DEPENDS ${SYMB_FIX_SRC}/symb_fixture_cxx.cc
  WORKING_DIRECTORY ${SYMB_FIX_DIR} VERBATIM)

# GCC LTO: lto_helper() is inlined across CUs (abstract origin by
# DW_FORM_ref_addr), the layout of Debian's python3.11.
add_custom_command(OUTPUT ${SYMB_FIX_DIR}/symb_lto
  COMMAND ${CMAKE_C_COMPILER} ${SYMB_FIX_FLAGS} -flto -o symb_lto
          ${SYMB_FIX_SRC}/symb_lto_main.c ${SYMB_FIX_SRC}/symb_lto_helper.c
  DEPENDS ${SYMB_FIX_SRC}/symb_lto_main.c ${SYMB_FIX_SRC}/symb_lto_helper.c
  WORKING_DIRECTORY ${SYMB_FIX_DIR} VERBATIM)

# No .debug_aranges, like clang output: CUs must be found by their ranges.
add_custom_command(OUTPUT ${SYMB_FIX_DIR}/symb_fixture_noaranges
  COMMAND ${SYMB_OBJCOPY} --remove-section=.debug_aranges symb_fixture symb_fixture_noaranges
  DEPENDS ${SYMB_FIX_DIR}/symb_fixture
  WORKING_DIRECTORY ${SYMB_FIX_DIR} VERBATIM)

# Shared library stripped to .dynsym only.
add_custom_command(OUTPUT ${SYMB_FIX_DIR}/libsymbfix.so ${SYMB_FIX_DIR}/libsymbfix_stripped.so
  COMMAND ${CMAKE_C_COMPILER} ${SYMB_FIX_FLAGS} -shared -fPIC -o libsymbfix.so ${SYMB_FIX_SRC}/symb_fixture_lib.c
  COMMAND ${SYMB_STRIP} --strip-all -o libsymbfix_stripped.so libsymbfix.so
  DEPENDS ${SYMB_FIX_SRC}/symb_fixture_lib.c
  WORKING_DIRECTORY ${SYMB_FIX_DIR} VERBATIM)

# Separate debug info found through .gnu_debuglink: one copy keeps .symtab
# (strip -g), one keeps nothing but .dynsym (names from the debug file).
# symb_fixture_nodl has no debuglink: the test finds its debug file by
# build-id under a fake container root.
add_custom_command(
  OUTPUT ${SYMB_FIX_DIR}/symb_fixture.debug ${SYMB_FIX_DIR}/symb_fixture_dl
         ${SYMB_FIX_DIR}/symb_fixture_dl_all ${SYMB_FIX_DIR}/symb_fixture_nodl
  COMMAND ${SYMB_OBJCOPY} --only-keep-debug symb_fixture symb_fixture.debug
  COMMAND ${SYMB_STRIP} -g -o symb_fixture_dl symb_fixture
  COMMAND ${SYMB_OBJCOPY} --add-gnu-debuglink=symb_fixture.debug symb_fixture_dl
  COMMAND ${SYMB_STRIP} --strip-all -o symb_fixture_dl_all symb_fixture
  COMMAND ${SYMB_OBJCOPY} --add-gnu-debuglink=symb_fixture.debug symb_fixture_dl_all
  COMMAND ${SYMB_STRIP} --strip-all -o symb_fixture_nodl symb_fixture
  DEPENDS ${SYMB_FIX_DIR}/symb_fixture
  WORKING_DIRECTORY ${SYMB_FIX_DIR} VERBATIM)

add_custom_target(symbolizer_fixtures DEPENDS
  ${SYMB_FIX_DIR}/symb_fixture ${SYMB_FIX_DIR}/symb_fixture_cxx ${SYMB_FIX_DIR}/symb_lto
  ${SYMB_FIX_DIR}/libsymbfix_stripped.so ${SYMB_FIX_DIR}/symb_fixture_dl
  ${SYMB_FIX_DIR}/symb_fixture_noaranges)

add_executable(test_symbolizer ${CMAKE_CURRENT_LIST_DIR}/test_symbolizer.c)
target_link_libraries(test_symbolizer PRIVATE ember_symbolizer elf)
add_dependencies(test_symbolizer symbolizer_fixtures)
add_test(NAME unit.symbolizer COMMAND test_symbolizer ${SYMB_FIX_DIR} ${SYMB_FIX_SRC})
set_tests_properties(unit.symbolizer PROPERTIES LABELS unit TIMEOUT 300
  # its symbol cache in the build tree, not the user's (kept: later runs are warm)
  ENVIRONMENT "XDG_CACHE_HOME=${CMAKE_CURRENT_BINARY_DIR}/symbolizer-cache")

# JIT code: perf maps and jitdump files (symbolizer/jit_map.c), JIT modules.
add_executable(test_jit_map ${CMAKE_CURRENT_LIST_DIR}/test_jit_map.c)
target_link_libraries(test_jit_map PRIVATE ember_symbolizer)
target_include_directories(test_jit_map PRIVATE ${CMAKE_CURRENT_LIST_DIR} ${PROJECT_SOURCE_DIR}/symbolizer)
add_test(NAME unit.jit_map COMMAND test_jit_map)
set_tests_properties(unit.jit_map PROPERTIES LABELS unit)

# The cache on disk (symbolizer/symcache.c, symcache_elf.c): entries, damage, concurrent
# writers, the LRU bound, an unwritable folder, and the same frames with the
# cache off, cold and warm for libc.so.6 and python3.11 (docs/symbolization.md).
add_executable(test_symcache ${CMAKE_CURRENT_LIST_DIR}/test_symcache.c)
target_link_libraries(test_symcache PRIVATE ember_symbolizer elf PkgConfig::ZLIB)
target_include_directories(test_symcache PRIVATE ${CMAKE_CURRENT_LIST_DIR} ${PROJECT_SOURCE_DIR}/symbolizer)
add_test(NAME unit.symcache COMMAND test_symcache)
set_tests_properties(unit.symcache PROPERTIES LABELS unit TIMEOUT 300)
