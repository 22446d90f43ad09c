# cli/outputs.c: how an output replaces its file (temporary file, rename,
# cleanup on failure), on files in a temporary directory.
add_executable(test_outputs ${CMAKE_CURRENT_LIST_DIR}/test_outputs.c ${PROJECT_SOURCE_DIR}/cli/outputs.c
  ${PROJECT_SOURCE_DIR}/cli/options.c)
target_include_directories(test_outputs PRIVATE ${CMAKE_CURRENT_LIST_DIR} ${PROJECT_SOURCE_DIR}/cli)
target_link_libraries(test_outputs PRIVATE ember_record ember_exporters ember_profile ember_help ember_symbolizer)
add_test(NAME unit.outputs COMMAND test_outputs)
set_tests_properties(unit.outputs PROPERTIES LABELS unit)
