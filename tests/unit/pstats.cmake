# pstats exporter.  unit.pstats: the C checks (exact bytes, a reader for the
# marshal subset, known numbers).  unit.pstats.VERSION: the .prof files of
# every synthetic profile through tests/exporters/check_pstats.py (pstats,
# the invariants of docs/consumers.md §3.4, snakeviz's and gprof2dot's
# needs) under each Python, found when the test runs (pyenv root,
# /usr/bin/python3); 77 = not installed.
add_executable(test_pstats ${CMAKE_CURRENT_LIST_DIR}/test_pstats.c)
target_link_libraries(test_pstats PRIVATE ember_exporters ember_profile m)
add_test(NAME unit.pstats COMMAND test_pstats)
set_tests_properties(unit.pstats PROPERTIES LABELS unit)

# Every interpreter the install step provides; a newer one needs a line here.
set(EMBER_PSTATS_PYTHONS 2.7 3.6 3.7 3.8 3.9 3.10 3.11 3.12 3.13 system)
foreach(v IN LISTS EMBER_PSTATS_PYTHONS)
  add_test(NAME unit.pstats.${v}
    COMMAND test_pstats --python ${v} ${CMAKE_CURRENT_LIST_DIR}/../exporters/check_pstats.py)
  set_tests_properties(unit.pstats.${v} PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 120)
endforeach()
