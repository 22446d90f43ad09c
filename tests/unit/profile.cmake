# Unit tests of the profile model, the top-N reports and the folded exporter.
add_executable(test_profile ${CMAKE_CURRENT_LIST_DIR}/test_profile.c)
target_link_libraries(test_profile PRIVATE ember_profile)
add_test(NAME unit.profile COMMAND test_profile)
set_tests_properties(unit.profile PROPERTIES LABELS unit)

add_executable(test_folded ${CMAKE_CURRENT_LIST_DIR}/test_folded.c)
target_link_libraries(test_folded PRIVATE ember_exporters ember_profile)
add_test(NAME unit.folded COMMAND test_folded)
set_tests_properties(unit.folded PROPERTIES LABELS unit)

# .ember files (round trips, corruption) and the folded reader.
add_executable(test_profile_files ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_profile_files.c)
target_link_libraries(test_profile_files PRIVATE ember_exporters ember_profile)
target_include_directories(test_profile_files PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/unit)
add_test(NAME unit.profile_files COMMAND test_profile_files)
set_tests_properties(unit.profile_files PROPERTIES LABELS unit)

# Inputs read once (pipes, a FIFO, standard input), gzip bombs, /dev/zero,
# damaged gzip layers, NUL bytes and counts near 2^64 (docs/cli.md).
add_executable(test_profile_input ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_profile_input.c)
target_link_libraries(test_profile_input PRIVATE ember_exporters ember_profile)
add_test(NAME unit.profile_input COMMAND test_profile_input)
set_tests_properties(unit.profile_input PROPERTIES LABELS unit TIMEOUT 120)

# The live table of `ember top`: own and total per function over an interval
# and since the start, sorting, the thread filter and the views.
add_executable(test_top ${CMAKE_CURRENT_LIST_DIR}/test_top.c)
target_link_libraries(test_top PRIVATE ember_profile)
add_test(NAME unit.top COMMAND test_top)
set_tests_properties(unit.top PROPERTIES LABELS unit)
