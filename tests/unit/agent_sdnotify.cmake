# The service manager's readiness protocol (agent/sdnotify.c), spoken
# without libsystemd: path and abstract sockets, unset and bad names.
eq_add_unit_test(test_sdnotify SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sdnotify.c LIBS eq_agent)
