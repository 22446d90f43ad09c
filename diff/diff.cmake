# diff/: `ember diff`, the comparison of two profiles (diff.h): canonical
# copies of both runs, matching keys, normalisation, noise, the delta table.
# Included by the root CMakeLists.txt right after the exporters library.
add_library(ember_diff STATIC diff/compare.c diff/canon.c diff/delta_table.c diff/rename.c)
target_include_directories(ember_diff PUBLIC diff)
target_link_libraries(ember_diff PUBLIC ember_profile m)
