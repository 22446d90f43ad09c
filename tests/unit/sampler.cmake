# unwind/ and sampler/'s ring reader: the process model and the unwinder, with the ELF view of the
# modules, exercised in process on the test binary itself (no perf_event needed).
add_executable(test_sampler ${PROJECT_SOURCE_DIR}/tests/unit/test_sampler.c)
target_link_libraries(test_sampler PRIVATE ember_sampler)
target_include_directories(test_sampler PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit ${PROJECT_SOURCE_DIR}/sampler ${PROJECT_SOURCE_DIR}/unwind)
# -rdynamic: dladdr must name the test's own functions.
target_link_options(test_sampler PRIVATE -rdynamic)
target_compile_options(test_sampler PRIVATE -fomit-frame-pointer)
add_test(NAME unit.sampler COMMAND test_sampler)
set_tests_properties(unit.sampler PROPERTIES LABELS unit)
# The unwinder, on stacks copied in process (tests/unit/stack_snapshot.h).
add_executable(test_unwind ${PROJECT_SOURCE_DIR}/tests/unit/test_unwind.c)
target_link_libraries(test_unwind PRIVATE ember_unwind)
target_include_directories(test_unwind PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit ${PROJECT_SOURCE_DIR}/unwind)
# -rdynamic: dladdr must name the test's own functions.
target_link_options(test_unwind PRIVATE -rdynamic)
target_compile_options(test_unwind PRIVATE -fomit-frame-pointer)
add_test(NAME unit.unwind COMMAND test_unwind)
set_tests_properties(unit.unwind PROPERTIES LABELS unit)
