# Config parser of the agent: defaults, every key, every error class, the
# bad-config corpus (tests/data/bad/config) and, with the test hooks,
# allocation failures (unit.test_config.hooks).
eq_add_unit_test(test_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_config.c LIBS eq_agent
  PARTS hooks test_alloc_failures)
