# record/: the capture-side aggregation of stacks, on made-up samples.
add_executable(test_record ${PROJECT_SOURCE_DIR}/tests/unit/test_record.c)
target_link_libraries(test_record PRIVATE ember_record ember_symbolizer)
target_include_directories(test_record PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit ${PROJECT_SOURCE_DIR}/record)
add_test(NAME unit.record COMMAND test_record)
set_tests_properties(unit.record PROPERTIES LABELS unit)

# record/: dispatch attribution's plan, on made-up stacks.
add_executable(test_attribute ${PROJECT_SOURCE_DIR}/tests/unit/test_attribute.c)
target_link_libraries(test_attribute PRIVATE ember_record)
target_include_directories(test_attribute PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit ${PROJECT_SOURCE_DIR}/record
  ${PROJECT_SOURCE_DIR}/resolve)
add_test(NAME unit.attribute COMMAND test_attribute)
set_tests_properties(unit.attribute PROPERTIES LABELS unit)

# Thread pools by their code (resolve/pools.h): what a stack is to a pool.
add_executable(test_pools ${PROJECT_SOURCE_DIR}/tests/unit/test_pools.c)
target_link_libraries(test_pools PRIVATE ember_resolve)
target_include_directories(test_pools PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit)
add_test(NAME unit.pools COMMAND test_pools)
set_tests_properties(unit.pools PROPERTIES LABELS unit)
