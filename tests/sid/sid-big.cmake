# The bigger Debian sid root (tests/sid/packages-big.txt, `make sid-big-root`):
# CPython 3.14 with NumPy 2, PyTorch 2 and OpenCV, for the tests labelled
# sid-big (`make test-sid-big`; neither `make test` nor `make test-sid` runs
# them).  Included after sid.cmake (its ember_sid_wrapper).
#
# Sets, when the root exists at configure time:
#   EMBER_SID_BIG_ROOT     the root directory ($EMBER_SID_BIG_ROOT, default
#                          ~/.cache/ember/sid-big-root)
#   EMBER_SID_BIG_PYTHONS  "sid-3.14=WRAPPER": WRAPPER ARGS runs
#                          /usr/bin/python3.14 ARGS inside that root, as the
#                          same process (BUILD/tests/sid-big/python3.14)
# Otherwise the list is empty, one message says how to get the root, and no
# sid-big test is registered.
if(NOT DEFINED EMBER_SID_BIG_ROOT)
  if(DEFINED ENV{EMBER_SID_BIG_ROOT})
    set(EMBER_SID_BIG_ROOT $ENV{EMBER_SID_BIG_ROOT})
  else()
    set(EMBER_SID_BIG_ROOT $ENV{HOME}/.cache/ember/sid-big-root)
  endif()
endif()
set(EMBER_SID_BIG_PYTHONS "")
if(NOT EXISTS ${EMBER_SID_BIG_ROOT}/etc/ember-sid-root.stamp OR NOT EXISTS ${EMBER_SID_BIG_ROOT}/usr/bin/python3.14)
  message(STATUS "ember: no bigger Debian sid root at ${EMBER_SID_BIG_ROOT}: the CPython 3.14 + NumPy 2, "
                 "PyTorch 2 and OpenCV tests (label sid-big) are not registered; `make sid-big-root` builds it "
                 "(root, 2-3 minutes, 2.5 GB), `make test-sid-big` runs them")
  return()
endif()
set(wrapper ${CMAKE_CURRENT_BINARY_DIR}/sid-big/python3.14)
ember_sid_wrapper(${EMBER_SID_BIG_ROOT} python3.14 ${wrapper})
set(EMBER_SID_BIG_PYTHONS "sid-3.14=${wrapper}")
message(STATUS "ember: bigger Debian sid root ${EMBER_SID_BIG_ROOT}: CPython 3.14 + NumPy 2, PyTorch 2, OpenCV "
               "tests registered (label sid-big)")
