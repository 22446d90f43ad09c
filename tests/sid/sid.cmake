# CPython releases newer than Debian 12's, from a Debian sid root directory
# (tests/sid/build-root.sh, `make sid-root`), run inside it by generated
# wrappers and profiled from the host: `make test-sid` (ctest -L sid).
#
# Sets, when the root exists at configure time:
#   EMBER_SID_ROOT        the root directory ($EMBER_SID_ROOT, default
#                         ~/.cache/ember/sid-root)
#   EMBER_SID_PYTHONS     "sid-3.14=WRAPPER" ... : WRAPPER ARGS runs
#                         /usr/bin/python3.14 ARGS inside the root, as the same
#                         process (tests/sid/in-root.sh)
#   EMBER_SID_DEBUG_PYTHONS  the same for the Py_DEBUG builds (python3.14d ...)
# Otherwise both lists are empty and one message says how to get the root;
# the tests that need it are then not registered at all (`make test` never
# needs it).
if(NOT DEFINED EMBER_SID_ROOT)
  if(DEFINED ENV{EMBER_SID_ROOT})
    set(EMBER_SID_ROOT $ENV{EMBER_SID_ROOT})
  else()
    set(EMBER_SID_ROOT $ENV{HOME}/.cache/ember/sid-root)
  endif()
endif()
# ember_sid_wrapper(ROOT EXE OUT): write OUT, a wrapper that runs
# /usr/bin/EXE inside ROOT (python-in-root.sh.in).  Also for the bigger
# root of sid-big.cmake.
set(EMBER_SID_DIR ${CMAKE_CURRENT_LIST_DIR})
function(ember_sid_wrapper root exe out)
  set(EMBER_SID_ROOT ${root})
  set(EMBER_SID_EXE ${exe})
  configure_file(${EMBER_SID_DIR}/python-in-root.sh.in ${out} @ONLY
                 FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                                  WORLD_READ WORLD_EXECUTE)
endfunction()

set(EMBER_SID_VERSIONS 3.14 3.15)
string(REPLACE ";" " and " EMBER_SID_VERSIONS_TEXT "${EMBER_SID_VERSIONS}")
set(EMBER_SID_PYTHONS "")
set(EMBER_SID_DEBUG_PYTHONS "")
if(NOT EXISTS ${EMBER_SID_ROOT}/etc/ember-sid-root.stamp)
  message(STATUS "ember: no Debian sid root at ${EMBER_SID_ROOT}: the CPython ${EMBER_SID_VERSIONS_TEXT} tests "
                 "(label sid) are not registered; `make sid-root` builds it (root, ~2 minutes), "
                 "`make test-sid` runs them")
  return()
endif()
foreach(ver ${EMBER_SID_VERSIONS})
  foreach(kind "" d)
    set(EMBER_SID_EXE python${ver}${kind})
    if(NOT EXISTS ${EMBER_SID_ROOT}/usr/bin/${EMBER_SID_EXE})
      message(STATUS "ember: the sid root has no /usr/bin/${EMBER_SID_EXE}: `make sid-root` brings it up to date")
      continue()
    endif()
    set(wrapper ${CMAKE_CURRENT_BINARY_DIR}/sid/${EMBER_SID_EXE})
    ember_sid_wrapper(${EMBER_SID_ROOT} ${EMBER_SID_EXE} ${wrapper})
    if(kind STREQUAL "d")
      list(APPEND EMBER_SID_DEBUG_PYTHONS "sid-${ver}d=${wrapper}")
    else()
      list(APPEND EMBER_SID_PYTHONS "sid-${ver}=${wrapper}")
    endif()
  endforeach()
endforeach()
message(STATUS "ember: Debian sid root ${EMBER_SID_ROOT}: CPython ${EMBER_SID_VERSIONS_TEXT} tests registered (label sid)")
