# A health check that hangs is killed with the daemon's step that ran it:
# the daemon stopped by SIGTERM, and a step past [daemon] cycle-timeout
# (issue 12; eq_health_kill_running in agent/health.c).
if(NOT TARGET eqota-gen)
  eq_add_skipped_test(integration.agent_health_kill integration
    "needs eqota-gen to publish its releases: configure with -DEQ_HOST_TOOLS=ON")
elseif(NOT EQ_TEST_HOOKS)
  eq_add_skipped_test(integration.agent_health_kill integration
    "needs the EQ_TEST_BOOT_ID_FILE test hook (simulated reboots): configure with -DEQ_TEST_HOOKS=ON")
else()
  add_test(NAME integration.agent_health_kill
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_health_kill.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
            $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.agent_health_kill PROPERTIES LABELS integration TIMEOUT 300)
endif()
