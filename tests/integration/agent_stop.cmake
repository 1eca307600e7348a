# SIGTERM stops eqota cleanly at any step (issue 14): a download, the
# install between two packages, a one-shot update; the next start resumes.
if(NOT TARGET eqota-gen)
  eq_add_skipped_test(integration.agent_stop integration
    "needs eqota-gen to publish its releases: configure with -DEQ_HOST_TOOLS=ON")
elseif(NOT EQ_TEST_HOOKS)
  eq_add_skipped_test(integration.agent_stop integration
    "needs the EQ_TEST_TERM_PARENT_AT and EQ_TEST_BOOT_ID_FILE test hooks: configure with -DEQ_TEST_HOOKS=ON")
else()
  add_test(NAME integration.agent_stop
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_stop.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
            $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.agent_stop PROPERTIES LABELS integration TIMEOUT 300)
endif()
