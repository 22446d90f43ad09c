# python-stacks/: line-table decoders against every installed CPython's own
# answers, the frame reader against live interpreters (every pyenv version
# found at configure time, the system /usr/bin/python3, Debian's Py_DEBUG
# build /usr/bin/python3.11d from python3.11-dbg, and 3.14 and 3.15 from the
# Debian sid root when it exists: label sid), a churn
# robustness run, a non-Python target, the .cold part of the eval loop
# found without symbols, and the generated offset table
# against the installed headers.  Tests whose interpreter is missing exit 77.
add_executable(test_python_linetable ${PROJECT_SOURCE_DIR}/tests/unit/test_python_linetable.c)
target_link_libraries(test_python_linetable PRIVATE ember_python)
target_include_directories(test_python_linetable PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit ${PY_LAYER_DIRS})
add_executable(test_python_stacks ${PROJECT_SOURCE_DIR}/tests/unit/test_python_stacks.c)
target_link_libraries(test_python_stacks PRIVATE ember_python)
target_include_directories(test_python_stacks PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit ${PY_LAYER_DIRS})

add_executable(test_python_cold ${PROJECT_SOURCE_DIR}/tests/unit/test_python_cold.c)
target_link_libraries(test_python_cold PRIVATE ember_python PkgConfig::LIBDW)
target_include_directories(test_python_cold PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit ${PY_LAYER_DIRS})

set(EMBER_PYDIR ${PROJECT_SOURCE_DIR}/tests/python)
if(DEFINED ENV{PYENV_ROOT})
  set(EMBER_PYENV_ROOT $ENV{PYENV_ROOT})
else()
  set(EMBER_PYENV_ROOT $ENV{HOME}/.pyenv)
endif()
file(GLOB EMBER_PYENV_VERSIONS LIST_DIRECTORIES true ${EMBER_PYENV_ROOT}/versions/*)
set(EMBER_PYTHONS "system=/usr/bin/python3" "debug=/usr/bin/python3.11d")
foreach(dir ${EMBER_PYENV_VERSIONS})
  get_filename_component(ver ${dir} NAME)
  # Tests are named by X.Y: the first patch release of each found is used.
  if(ver MATCHES "^([0-9]+\\.[0-9]+)\\.[0-9]+$" AND EXISTS ${dir}/bin/python)
    set(minor ${CMAKE_MATCH_1})
    if(NOT minor IN_LIST EMBER_PY_MINORS)
      list(APPEND EMBER_PY_MINORS ${minor})
      list(APPEND EMBER_PYTHONS "${minor}=${dir}/bin/python")
    endif()
  endif()
endforeach()

set(EMBER_PY_TESTS unit.python.notpython unit.python.cold_scan)
add_test(NAME unit.python.notpython COMMAND test_python_stacks notpython)
# The eval loop's .cold part found without symbols, against Debian's python3
# and the symbol table of its debug file (python3.11-dbg).
add_test(NAME unit.python.cold_scan COMMAND test_python_cold /usr/bin/python3)
# The three tests of one interpreter VER=EXE; their names are appended to
# the list named by out.
function(ember_python_unit_tests entry out)
  string(REPLACE "=" ";" pair ${entry})
  list(GET pair 0 ver)
  list(GET pair 1 exe)
  add_test(NAME unit.python.linetable.${ver}
           COMMAND test_python_linetable ${exe} ${EMBER_PYDIR}/dump_linetables.py
                   ${CMAKE_CURRENT_BINARY_DIR}/linetables-${ver}.bin)
  add_test(NAME unit.python.stacks.${ver} COMMAND test_python_stacks stacks ${exe} ${EMBER_PYDIR})
  add_test(NAME unit.python.churn.${ver} COMMAND test_python_stacks churn ${exe} ${EMBER_PYDIR})
  set(${out} ${${out}} unit.python.linetable.${ver} unit.python.stacks.${ver} unit.python.churn.${ver} PARENT_SCOPE)
endfunction()
foreach(entry ${EMBER_PYTHONS})
  ember_python_unit_tests(${entry} EMBER_PY_TESTS)
endforeach()
# CPython 3.14 and 3.15 inside the Debian sid root (tests/sid/sid.cmake): the
# wrappers run them as the process the tests start, so the reader finds
# them by pid as any other.
set(EMBER_PY_SID_TESTS "")
foreach(entry ${EMBER_SID_PYTHONS})
  ember_python_unit_tests(${entry} EMBER_PY_SID_TESTS)
  # The eval loop's .cold part without symbols, against the symbols of the
  # root's own debug file (python3.X-dbg): GCC 16 moves the whole opcode
  # body there.
  string(REGEX REPLACE "^sid-([0-9.]+)=.*" "\\1" ver ${entry})
  add_test(NAME unit.python.cold_scan.sid-${ver}
           COMMAND test_python_cold ${EMBER_SID_ROOT}/usr/bin/python${ver} ${EMBER_SID_ROOT})
  list(APPEND EMBER_PY_SID_TESTS unit.python.cold_scan.sid-${ver})
endforeach()


find_program(EMBER_PY_GEN_PYTHON NAMES python3)
if(EMBER_PY_GEN_PYTHON)
  add_test(NAME unit.python.offsets_table
           COMMAND ${EMBER_PY_GEN_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/gen_python_offsets.py
                   --check ${PROJECT_SOURCE_DIR}/python-stacks/runtime/offsets_table.c)
  # The AArch64 table, measured with the cross compiler under qemu-user.
  add_test(NAME unit.python.offsets_table.aarch64
           COMMAND ${EMBER_PY_GEN_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/gen_python_offsets.py --arch aarch64
                   --check ${PROJECT_SOURCE_DIR}/python-stacks/runtime/offsets_table_aarch64.c)
  list(APPEND EMBER_PY_TESTS unit.python.offsets_table unit.python.offsets_table.aarch64)
  # 3.14 and 3.15 measured from the sid root's headers (libpython3.X-dev).
  if(EMBER_SID_PYTHONS)
    add_test(NAME unit.python.offsets_table.sid
             COMMAND ${CMAKE_COMMAND} -E env EMBER_SID_ROOT=${EMBER_SID_ROOT}
                     ${EMBER_PY_GEN_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/gen_python_offsets.py
                     --check ${PROJECT_SOURCE_DIR}/python-stacks/runtime/offsets_table.c --need 3.14 --need 3.15)
    add_test(NAME unit.python.offsets_table.aarch64.sid
             COMMAND ${CMAKE_COMMAND} -E env EMBER_SID_ROOT=${EMBER_SID_ROOT}
                     ${EMBER_PY_GEN_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/gen_python_offsets.py --arch aarch64
                     --check ${PROJECT_SOURCE_DIR}/python-stacks/runtime/offsets_table_aarch64.c --need 3.14 --need 3.15)
    list(APPEND EMBER_PY_SID_TESTS unit.python.offsets_table.sid unit.python.offsets_table.aarch64.sid)
  endif()
endif()

set_tests_properties(${EMBER_PY_TESTS} PROPERTIES LABELS "unit;python" SKIP_RETURN_CODE 77
                     TIMEOUT 300 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;PYENV_ROOT=${EMBER_PYENV_ROOT}")
if(EMBER_PY_SID_TESTS)
  set_tests_properties(${EMBER_PY_SID_TESTS} PROPERTIES LABELS "unit;python;sid" SKIP_RETURN_CODE 77
                       TIMEOUT 300 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()

# The merge of Python frames into native stacks, on made-up stacks.
add_executable(test_merge ${PROJECT_SOURCE_DIR}/tests/unit/test_merge.c)
target_link_libraries(test_merge PRIVATE ember_python)
target_include_directories(test_merge PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit)
add_test(NAME unit.merge COMMAND test_merge)
set_tests_properties(unit.merge PROPERTIES LABELS unit)

# The values `ember dump --locals` shows (python-stacks/read/locals.c), from byte
# images of objects laid out with the table's offsets of 3.11-3.15, read
# from this process: 3.14+'s tagged frame slots and each version's ints.
add_executable(test_python_locals ${PROJECT_SOURCE_DIR}/tests/unit/test_python_locals.c)
target_link_libraries(test_python_locals PRIVATE ember_python)
target_include_directories(test_python_locals PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit ${PY_LAYER_DIRS})
add_test(NAME unit.python.locals COMMAND test_python_locals)
set_tests_properties(unit.python.locals PROPERTIES LABELS unit)

# The interpreter's call machinery by name (python-stacks/merge/machinery.c,
# built into the test: its tables are checked too).
add_executable(test_machinery ${PROJECT_SOURCE_DIR}/tests/unit/test_machinery.c)
target_include_directories(test_machinery PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit
  ${PROJECT_SOURCE_DIR}/python-stacks/merge ${PROJECT_SOURCE_DIR}/python-stacks ${PROJECT_SOURCE_DIR}/unwind)
add_test(NAME unit.machinery COMMAND test_machinery)
set_tests_properties(unit.machinery PROPERTIES LABELS unit)
