# What `cmake --install` installs: the ember command.
include(GNUInstallDirs)
install(TARGETS ember RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
