# The Debian package: `cpack` in a build directory (`make package`) writes
# ember_<version>_<arch>.deb there, holding exactly what the install rules
# (cmake/install.cmake) install, under /usr, the man pages gzip'ed.  Its Depends line is computed by
# dpkg-shlibdeps (package dpkg-dev) from the libraries the installed files
# link against, so it names the runtime libraries only, never what the
# tests or the build use.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ember)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "ember")
# The project has no public address yet: the maintainer's address and the
# homepage are settings (-DEMBER_DEB_MAINTAINER=..., -DEMBER_DEB_HOMEPAGE=...);
# without a homepage the field is left out.
set(EMBER_DEB_MAINTAINER "ember developers <ember@example.invalid>" CACHE STRING
  "Maintainer field of the Debian package")
set(EMBER_DEB_HOMEPAGE "" CACHE STRING "Homepage field of the Debian package (empty: none)")
set(CPACK_PACKAGE_CONTACT "${EMBER_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "sampling profiler for native and Python programs")
set(CPACK_PACKAGE_DESCRIPTION
  "ember records a running program's stacks with perf events, unwinds them\n\
with DWARF call frame information and merges CPython's own frames into the\n\
native ones.  It writes folded stacks, pstats, SVG flame graphs, speedscope,\n\
pprof and Chrome trace files, compares two profiles, shows a live top view\n\
and dumps every thread's stack of a running process once.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Nothing but what the install rules name: no other component, no build
# tree files.
set(CPACK_DEB_COMPONENT_INSTALL OFF)
set(CPACK_SOURCE_GENERATOR "")

set(CPACK_DEBIAN_PACKAGE_NAME ember)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
if(EMBER_DEB_HOMEPAGE)
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${EMBER_DEB_HOMEPAGE}")
endif()
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The binary stripped of its debug information (2.3 MB of it), as Debian's
# packages are; CMAKE_STRIP is the target's strip in a cross build.
set(CPACK_STRIP_FILES ON)
# The man pages gzip'ed in the package (Debian's policy), not in a plain
# `cmake --install`.
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/package_man.cmake)
# Files owned by root, whatever user builds the package.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# The Debian architecture of the target, not of the build machine: a cross
# build (cmake/aarch64-linux-gnu.cmake) packages arm64.  dpkg-architecture
# maps the multiarch triple (aarch64-linux-gnu -> arm64); without it, the
# few machines ember runs on are named here.
if(CMAKE_LIBRARY_ARCHITECTURE)
  execute_process(COMMAND dpkg-architecture -qDEB_HOST_ARCH -t ${CMAKE_LIBRARY_ARCHITECTURE}
    OUTPUT_VARIABLE ember_deb_arch OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET RESULT_VARIABLE ember_deb_arch_rc)
endif()
if(NOT ember_deb_arch OR NOT ember_deb_arch_rc EQUAL 0)
  if(CMAKE_SYSTEM_PROCESSOR STREQUAL "x86_64")
    set(ember_deb_arch amd64)
  elseif(CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
    set(ember_deb_arch arm64)
  else()
    set(ember_deb_arch ${CMAKE_SYSTEM_PROCESSOR})
  endif()
endif()
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${ember_deb_arch})
set(CPACK_DEBIAN_FILE_NAME "ember_${PROJECT_VERSION}_${ember_deb_arch}.deb")

include(CPack)
