# common/: the id table, growth, the interner, the /proc reader, the ELF view.
add_executable(test_common ${CMAKE_CURRENT_LIST_DIR}/test_common.c)
target_link_libraries(test_common PRIVATE ember_common Threads::Threads)
target_include_directories(test_common PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_compile_options(test_common PRIVATE -fasynchronous-unwind-tables)
target_link_options(test_common PRIVATE -rdynamic)
add_test(NAME unit.common COMMAND test_common)
set_tests_properties(unit.common PROPERTIES LABELS unit)
