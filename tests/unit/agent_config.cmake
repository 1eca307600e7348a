# Config parser of the agent: defaults, every key, every error class, the
# bad-config corpus (tests/data/bad/config) and allocation failures.
if(TARGET eq_agent)
  eq_add_unit_test(test_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_config.c LIBS eq_agent)
endif()
