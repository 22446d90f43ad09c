# SVG flame graphs (exporters/svg.c, exporters/flame_tree.c).
#
# unit.svg writes SVGs from the synthetic profiles and checks their text;
# tests/exporters/check_svg.py (Python 3, standard library) checks the XML,
# the frame contract of the embedded script, geometry, nesting and pruning.
# browser.svg drives the SVGs in headless Chromium (/usr/bin/chromium)
# through playwright-core: search, zoom, reset, hover, legend, and a graph
# taller than the window (`ember convert` of a deep folded profile) opening on
# its root, in a file, an <iframe> and an <object>.  It needs
# `npm ci` in tests/browser and skips (exit 77) without it or without
# chromium.  svg_bench times ember_write_svg (results: bench/RESULTS.md).
set(EMBER_SVG_PYTHON /usr/bin/python3 CACHE FILEPATH "Python 3 running check_svg.py")
find_program(EMBER_NODE NAMES node nodejs)

add_executable(test_svg ${CMAKE_CURRENT_LIST_DIR}/test_svg.c)
target_include_directories(test_svg PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_svg PRIVATE ember_exporters ember_profile)
add_test(NAME unit.svg
  COMMAND test_svg --checker ${CMAKE_CURRENT_LIST_DIR}/../exporters/check_svg.py --python ${EMBER_SVG_PYTHON})
set_tests_properties(unit.svg PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")

if(EMBER_NODE)
  add_test(NAME browser.svg
    COMMAND ${EMBER_NODE} ${CMAKE_CURRENT_LIST_DIR}/../browser/test_svg_browser.js --test-svg $<TARGET_FILE:test_svg>
    --ember $<TARGET_FILE:ember>)
else()
  add_test(NAME browser.svg
    COMMAND ${EMBER_SVG_PYTHON} -c "print('SKIP: node not found: SVG browser test not run'); raise SystemExit(77)")
endif()
set_tests_properties(browser.svg PROPERTIES LABELS "e2e;browser" SKIP_RETURN_CODE 77 TIMEOUT 180)

add_executable(svg_bench ${CMAKE_CURRENT_LIST_DIR}/../../bench/svg_bench.c)
target_link_libraries(svg_bench PRIVATE ember_exporters ember_profile m)
