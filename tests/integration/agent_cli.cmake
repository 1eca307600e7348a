# Every command of eqota against every option it does not take, from the
# binary's own table (tests/integration/agent_cli.sh). Needs nothing but
# the program: no repository, no root.
add_test(NAME integration.agent_cli
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_cli.sh $<TARGET_FILE:eqota> ${PROJECT_SOURCE_DIR})
set_tests_properties(integration.agent_cli PROPERTIES LABELS integration TIMEOUT 120)
