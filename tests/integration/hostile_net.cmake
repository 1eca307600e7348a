# The agent against hostile servers on loopback (issue 12, findings 4-6):
# endless error bodies, trickling transfers, a daemon cycle past its
# deadline, SIGTERM during a cycle, https redirected to http.
if(NOT TARGET eqota-gen)
  eq_add_skipped_test(integration.agent_hostile_net integration
    "needs eqota-gen to publish its release: configure with -DEQ_HOST_TOOLS=ON")
else()
  add_test(NAME integration.agent_hostile_net
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_hostile_net.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
            $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.agent_hostile_net PROPERTIES LABELS integration TIMEOUT 600)
endif()
