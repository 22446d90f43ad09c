# Help texts, man pages and shell completions, all from cli/help (one text
# per command, what `ember CMD --help` prints): cmake/help_render.cmake makes
# the C file of the --help strings, build/man/*.1 and build/completion/, with
# nothing but cmake (a cross build runs it on the build machine as it is).
# Sets EMBER_MAN_PAGES, EMBER_BASH_COMPLETION and EMBER_ZSH_COMPLETION for
# cmake/install.cmake.
set(EMBER_HELP_DIR ${PROJECT_SOURCE_DIR}/cli/help)
set(EMBER_HELP_RENDER ${PROJECT_SOURCE_DIR}/cmake/help_render.cmake)
set(EMBER_HELP_PAGES ember ember-record ember-convert ember-report ember-diff ember-top ember-dump)
list(JOIN EMBER_HELP_PAGES " " EMBER_HELP_PAGES_ARG)   # for the renderer's -DPAGES
set(EMBER_HELP_SOURCES)
foreach(page ${EMBER_HELP_PAGES})
  list(APPEND EMBER_HELP_SOURCES ${EMBER_HELP_DIR}/${page}.txt)
endforeach()

set(EMBER_HELP_C ${CMAKE_BINARY_DIR}/generated/help_text.c)
add_custom_command(OUTPUT ${EMBER_HELP_C}
  COMMAND ${CMAKE_COMMAND} -DMODE=c -DHELP_DIR=${EMBER_HELP_DIR} "-DPAGES=${EMBER_HELP_PAGES_ARG}" -DOUT=${EMBER_HELP_C} -P ${EMBER_HELP_RENDER}
  DEPENDS ${EMBER_HELP_SOURCES} ${EMBER_HELP_RENDER}
  COMMENT "Help texts")

set(EMBER_MAN_PAGES)
foreach(page ${EMBER_HELP_PAGES})
  set(out ${CMAKE_BINARY_DIR}/man/${page}.1)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DMODE=man -DHELP_DIR=${EMBER_HELP_DIR} "-DPAGES=${EMBER_HELP_PAGES_ARG}" -DPAGE=${page}
            -DVERSION=${PROJECT_VERSION} -DOUT=${out} -P ${EMBER_HELP_RENDER}
    DEPENDS ${EMBER_HELP_DIR}/${page}.txt ${EMBER_HELP_DIR}/ember.txt ${EMBER_HELP_RENDER}
    COMMENT "Man page ${page}(1)")
  list(APPEND EMBER_MAN_PAGES ${out})
endforeach()

set(EMBER_BASH_COMPLETION ${CMAKE_BINARY_DIR}/completion/ember.bash)
set(EMBER_ZSH_COMPLETION ${CMAKE_BINARY_DIR}/completion/_ember)
foreach(shell bash zsh)
  string(TOUPPER ${shell} upper)
  add_custom_command(OUTPUT ${EMBER_${upper}_COMPLETION}
    COMMAND ${CMAKE_COMMAND} -DMODE=${shell} -DHELP_DIR=${EMBER_HELP_DIR} "-DPAGES=${EMBER_HELP_PAGES_ARG}"
            -DOUT=${EMBER_${upper}_COMPLETION} -P ${EMBER_HELP_RENDER}
    DEPENDS ${EMBER_HELP_SOURCES} ${EMBER_HELP_RENDER} ${PROJECT_SOURCE_DIR}/cmake/completion.${shell}.in
    COMMENT "${shell} completion")
endforeach()
add_custom_target(ember_docs ALL DEPENDS ${EMBER_MAN_PAGES} ${EMBER_BASH_COMPLETION} ${EMBER_ZSH_COMPLETION})
