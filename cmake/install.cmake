# What `cmake --install` (and `make install`) puts on the system: the ember
# binary, its man pages and its bash and zsh completions; nothing else (no
# libraries, tests, examples or benchmarks).  The BPF objects are embedded
# in the binary, which reads nothing from the source or build tree.
# Included from the root CMakeLists.txt after cmake/help.cmake.
include(GNUInstallDirs)
install(TARGETS ember RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${EMBER_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${EMBER_BASH_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
  RENAME ember)
# Debian's directory for the completions of packaged programs (on zsh's
# $fpath there).
install(FILES ${EMBER_ZSH_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions
  RENAME _ember)
