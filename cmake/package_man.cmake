# Run by cpack (CPACK_PRE_BUILD_SCRIPTS) on the staged files before the
# Debian package is made of them: the man pages compressed with gzip -9n,
# as Debian's policy asks (man reads ember.1.gz as it reads ember.1; -n
# keeps the file's name and time out of it, so the package's bytes do not
# depend on when it was built).
file(GLOB_RECURSE ember_man_pages "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/share/man/man[1-9]/*.[1-9]")
foreach(page ${ember_man_pages})
  execute_process(COMMAND gzip -9nf "${page}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip -9n ${page} failed")
  endif()
endforeach()
