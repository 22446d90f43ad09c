# A cross build (cmake/aarch64-linux-gnu.cmake) runs its tests under qemu-user
# (CMAKE_CROSSCOMPILING_EMULATOR).  The unit tests that can run there get
# the label qemu: `make test-arm64` runs `ctest -L qemu` in build-arm64.
# qemu-user emulates the instructions and passes system calls through, so
# what needs the kernel's view of an arm64 process cannot run there:
# perf_event_open (the kernel would sample qemu, an x86 process), ptrace and
# process_vm_readv of a live target of the same architecture, BPF programs
# attached to such events.  Every unit test not listed here runs; each
# exclusion names its reason, and configuring prints them.
set(EMBER_QEMU_EXCLUDED
  # The frame reader against live interpreters, which are the host's x86-64
  # Pythons (process_vm_readv of an x86 process by an arm64 reader); the
  # cold-part scan reads x86 code; the offsets tables' checks run no arm64
  # code.  (unit.python.linetable.* run: the arm64 decoder checks the line
  # tables the host's interpreters dump, against their own co_lines().)
  "^unit\\.python\\.(stacks|churn|notpython|cold_scan|offsets_table)"
  "no live arm64 interpreter: the tests read the host's x86-64 Pythons"
  # The locals reader reads its own memory through process_vm_readv, whose
  # remote addresses qemu-user passes to the kernel untranslated.
  "^unit\\.python\\.locals$"
  "process_vm_readv of its own memory: qemu-user does not translate the remote addresses"
  # It runs test_formats from node, not through the emulator, and binfmt_misc
  # is not relied upon.
  "^unit\\.formats\\.speedscope_schema$"
  "node would run the arm64 test_formats without the emulator"
  # BPF programs attached to perf events of its own thread: the kernel would
  # sample qemu, an x86 process.
  "^unit\\.copier_variants$"
  "BPF on perf events of its own thread: the kernel samples qemu, an x86 process")
get_property(EMBER_ALL_TESTS DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY TESTS)
foreach(t IN LISTS EMBER_ALL_TESTS)
  get_test_property(${t} LABELS labels)
  if(NOT "unit" IN_LIST labels)
    continue()
  endif()
  set(reason "")
  set(rules ${EMBER_QEMU_EXCLUDED})
  while(rules)
    list(POP_FRONT rules pattern why)
    if(t MATCHES "${pattern}")
      set(reason "${why}")
      break()
    endif()
  endwhile()
  if(reason)
    message(STATUS "qemu-user: ${t} not run (${reason})")
  else()
    set_property(TEST ${t} APPEND PROPERTY LABELS qemu)
  endif()
endforeach()
