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
    configure_file(${CMAKE_CURRENT_SOURCE_DIR}/sid/python-in-root.sh.in ${wrapper} @ONLY
                   FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                                    WORLD_READ WORLD_EXECUTE)
    if(kind STREQUAL "d")
      list(APPEND EMBER_SID_DEBUG_PYTHONS "sid-${ver}d=${wrapper}")
    else()
      list(APPEND EMBER_SID_PYTHONS "sid-${ver}=${wrapper}")
    endif()
  endforeach()
endforeach()
message(STATUS "ember: Debian sid root ${EMBER_SID_ROOT}: CPython ${EMBER_SID_VERSIONS_TEXT} tests registered (label sid)")
