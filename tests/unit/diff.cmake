# `ember diff` (diff/, exporters/svg_diff.c, the diff halves of folded.c and
# pprof.c).
#
# unit.diff builds synthetic BASE/NEW profiles with known changes and checks
# the comparison (ranking, noise, renames, share vs absolute, iterations,
# --by keys, differing rates), the delta table formats and the differential
# writers' text.  browser.svg_diff drives a differential SVG written by
# `test_diff --write-svg` in headless Chromium, like browser.svg, and a tall
# one from `ember diff` of deep folded profiles that must open on its root
# (skipped, exit 77, without node, chromium or `npm ci` in tests/browser).
set(EMBER_DIFF_PYTHON /usr/bin/python3 CACHE FILEPATH "Python 3 for the diff tests")
find_program(EMBER_NODE NAMES node nodejs)

add_executable(test_diff ${CMAKE_CURRENT_LIST_DIR}/test_diff.c)
target_include_directories(test_diff PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_diff PRIVATE ember_diff ember_exporters ember_profile m)
add_test(NAME unit.diff COMMAND test_diff --python ${EMBER_DIFF_PYTHON})
set_tests_properties(unit.diff PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")

if(EMBER_NODE)
  add_test(NAME browser.svg_diff
    COMMAND ${EMBER_NODE} ${CMAKE_CURRENT_LIST_DIR}/../browser/test_svg_diff_browser.js --test-diff $<TARGET_FILE:test_diff>
    --ember $<TARGET_FILE:ember>)
else()
  add_test(NAME browser.svg_diff
    COMMAND ${EMBER_DIFF_PYTHON} -c "print('SKIP: node not found: diff SVG browser test not run'); raise SystemExit(77)")
endif()
set_tests_properties(browser.svg_diff PROPERTIES LABELS "e2e;browser" SKIP_RETURN_CODE 77 TIMEOUT 180)
