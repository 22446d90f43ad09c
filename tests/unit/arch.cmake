# The architecture-specific decoders and numbering (unwind/arch_insn.h,
# probe_regs.h, unwind_arch.h): plain functions, checked on every host for
# both architectures where they take bytes.
add_executable(test_arch ${PROJECT_SOURCE_DIR}/tests/unit/test_arch.c)
target_link_libraries(test_arch PRIVATE ember_unwind)
target_include_directories(test_arch PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit ${PROJECT_SOURCE_DIR}/unwind)
add_test(NAME unit.arch COMMAND test_arch)
set_tests_properties(unit.arch PROPERTIES LABELS unit)

# The copier's records paired with their samples at the lags different
# kernels give them (python-stacks/copier/copier_intake.c), over a fake ring.
add_executable(test_copier_intake ${PROJECT_SOURCE_DIR}/tests/unit/test_copier_intake.c)
target_link_libraries(test_copier_intake PRIVATE ember_python)
target_include_directories(test_copier_intake PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit ${PY_LAYER_DIRS})
add_test(NAME unit.copier_intake COMMAND test_copier_intake)
set_tests_properties(unit.copier_intake PROPERTIES LABELS unit)

# The copier's two variants (the walks in bpf_loop(), or unrolled) loaded
# side by side on a frame chain built in the test's memory: the same
# records byte for byte (root; exits 77 without).
add_executable(test_copier_variants ${PROJECT_SOURCE_DIR}/tests/unit/test_copier_variants.c)
target_link_libraries(test_copier_variants PRIVATE ember_python PkgConfig::LIBBPF)
target_include_directories(test_copier_variants PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit ${PY_LAYER_DIRS})
add_test(NAME unit.copier_variants COMMAND test_copier_variants)
set_tests_properties(unit.copier_variants PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
