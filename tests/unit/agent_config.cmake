# Config parser of the agent: defaults, every key, every error class, the
# bad-config corpus (tests/data/bad/config) and, with the test hooks,
# allocation failures (unit.test_config.hooks).
eq_add_unit_test(test_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_config.c LIBS eq_agent
  PARTS hooks test_alloc_failures)
# State file of the agent (agent/state.c): round trip, the bad-state corpus
# (tests/data/bad/state), every truncation, caps of numbers and size.
eq_add_unit_test(test_state SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_state.c LIBS eq_agent)
# Update policy (agent/policy.c): the hold file, the device id, and the
# staged rollout's choice over a simulated fleet of 1,000 device ids.
eq_add_unit_test(test_policy SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_policy.c LIBS eq_agent m)
# Reports (agent/report.c): the JSON line, the derived device id, the
# bounded queue, a flush that cannot reach its server.
eq_add_unit_test(test_report SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report.c LIBS eq_agent)
