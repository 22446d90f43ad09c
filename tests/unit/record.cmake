# record/: the capture-side aggregation of stacks, on made-up samples.
add_executable(test_record ${PROJECT_SOURCE_DIR}/tests/unit/test_record.c)
target_link_libraries(test_record PRIVATE ember_record ember_symbolizer)
target_include_directories(test_record PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit ${PROJECT_SOURCE_DIR}/record)
add_test(NAME unit.record COMMAND test_record)
set_tests_properties(unit.record PROPERTIES LABELS unit)
