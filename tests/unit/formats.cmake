# Unit tests of the speedscope, pprof and Chrome trace exporters.
#
# unit.formats writes every format from the synthetic profiles and runs the
# validators in tests/exporters (Python 3, standard library; `go tool pprof`
# too when Go is installed).  unit.formats.speedscope_schema validates the
# speedscope files with the JSON Schema of the pinned speedscope npm package
# (run `npm ci` in tests/exporters first; skipped, exit 77, otherwise).
get_target_property(FORMATS_SOURCES ember_exporters SOURCES)
if(NOT FORMATS_SOURCES MATCHES "speedscope\\.c")
  message(STATUS "unit.formats: exporters/speedscope.c etc. not in ember_exporters yet; test not added")
  return()
endif()

set(EMBER_FORMATS_PYTHON /usr/bin/python3 CACHE FILEPATH "Python 3 running the exporter validators")
find_program(EMBER_NODE NAMES node nodejs)
set(FORMATS_VALIDATORS ${PROJECT_SOURCE_DIR}/tests/exporters)
set(FORMATS_OUT ${CMAKE_CURRENT_BINARY_DIR}/formats-out)

add_executable(test_formats ${CMAKE_CURRENT_LIST_DIR}/test_formats.c)
target_include_directories(test_formats PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_formats PRIVATE ember_exporters ember_profile)

add_test(NAME unit.formats
  COMMAND test_formats --validators ${FORMATS_VALIDATORS} --out ${FORMATS_OUT}
          --python ${EMBER_FORMATS_PYTHON})
set_tests_properties(unit.formats PROPERTIES
  LABELS unit TIMEOUT 300 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")

if(EMBER_NODE)
  add_test(NAME unit.formats.speedscope_schema
    COMMAND ${EMBER_NODE} ${FORMATS_VALIDATORS}/validate_speedscope.js
            --gen $<TARGET_FILE:test_formats> ${CMAKE_CURRENT_BINARY_DIR}/formats-schema)
else()
  add_test(NAME unit.formats.speedscope_schema
    COMMAND ${EMBER_FORMATS_PYTHON} -c "print('SKIP: node not found: speedscope schema not checked'); raise SystemExit(77)")
endif()
set_tests_properties(unit.formats.speedscope_schema PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 120)
