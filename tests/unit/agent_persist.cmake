# [persist] of eq_agent (agent/persist.c): the config keys and their
# refusals, and the copy rules over two temporary slot folders (symlinks in
# either slot, a FIFO, the size cap, a missing path, folders, globs).
eq_add_unit_test(test_persist SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_persist.c LIBS eq_agent)
