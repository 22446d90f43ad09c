# Cross-building ember for aarch64 (arm64) on an x86-64 Debian host with
# Debian's cross toolchain and the arm64 development packages
# (scripts/install-deps.sh arm64; docs/arm64.md).  `make cross-arm64` uses it:
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# Tests run under qemu-user through CMAKE_CROSSCOMPILING_EMULATOR, called
# explicitly, so no binfmt_misc registration is needed.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(EMBER_CROSS_TRIPLE aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${EMBER_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${EMBER_CROSS_TRIPLE}-g++)
# CMake finds the target's binutils (aarch64-linux-gnu-objcopy, -strip) by
# the compiler's prefix, and the multiarch library directory
# (CMAKE_LIBRARY_ARCHITECTURE) from the compiler.  pkg-config reads the arm64
# .pc files only; programs (clang for the BPF object, python3) are the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${EMBER_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# Target programs run under qemu-user with the arm64 loader and libraries
# of the multiarch tree (libc6:arm64, which libunwind-dev:arm64 and the
# others bring): -L / resolves the loader's path, /lib/ld-linux-aarch64.so.1,
# on this machine's root.  Not the cross toolchain's /usr/aarch64-linux-gnu:
# a program would then run with that loader and libc but the multiarch
# libraries, and under qemu 7.2 a fork()ed child of it hangs.
find_program(EMBER_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${EMBER_QEMU_AARCH64} -L /)
