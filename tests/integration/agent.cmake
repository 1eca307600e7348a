# eq-simboot comes from tests/unit/bootloader.cmake, read after this file.
# Both need eqota-gen (EQ_HOST_TOOLS) to publish; agent_update moves the
# agent's clock with the EQ_TEST_NOW test hook (EQ_TEST_HOOKS).
if(NOT TARGET eqota-gen)
  foreach(t integration.agent_update integration.agent_https integration.agent_trust integration.gen_promote
      integration.agent_behind integration.agent_policy integration.agent_report integration.fleet_e2e integration.agent_lock)
    eq_add_skipped_test(${t} integration "needs eqota-gen to publish its releases: configure with -DEQ_HOST_TOOLS=ON")
  endforeach()
else()
  # Fewer power cuts under the sanitizers, where every update is slower.
  if(EQ_SANITIZE)
    set(EQ_KILLS 10)
  else()
    set(EQ_KILLS 50)
  endif()
  if(NOT EQ_TEST_HOOKS)
    eq_add_skipped_test(integration.agent_update integration
      "needs the EQ_TEST_NOW test hook (manifest expiry): configure with -DEQ_TEST_HOOKS=ON")
    eq_add_skipped_test(integration.agent_trust integration
      "needs the EQ_TEST_NOW test hook (timestamp expiry): configure with -DEQ_TEST_HOOKS=ON")
    eq_add_skipped_test(integration.gen_promote integration
      "needs the EQ_TEST_BOOT_ID_FILE test hook (simulated reboots): configure with -DEQ_TEST_HOOKS=ON")
    eq_add_skipped_test(integration.agent_behind integration
      "needs the EQ_TEST_BOOT_ID_FILE test hook (simulated reboots): configure with -DEQ_TEST_HOOKS=ON")
    eq_add_skipped_test(integration.agent_policy integration
      "needs the EQ_TEST_BOOT_ID_FILE test hook (simulated reboots): configure with -DEQ_TEST_HOOKS=ON")
    eq_add_skipped_test(integration.agent_report integration
      "needs the EQ_TEST_BOOT_ID_FILE test hook (simulated reboots): configure with -DEQ_TEST_HOOKS=ON")
    eq_add_skipped_test(integration.fleet_e2e integration
      "needs the EQ_TEST_BOOT_ID_FILE test hook (simulated reboots): configure with -DEQ_TEST_HOOKS=ON")
    eq_add_skipped_test(integration.agent_lock integration
      "needs the EQ_TEST_BOOT_ID_FILE test hook (simulated reboots): configure with -DEQ_TEST_HOOKS=ON")
  else()
    # Root mode: root chain, timestamp, rotation, revocation, rollback, freeze.
    add_test(NAME integration.agent_trust
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_trust.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
              $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
    set_tests_properties(integration.agent_trust PROPERTIES LABELS integration TIMEOUT 600)
    add_test(NAME integration.agent_update
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_update.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
              $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
    set_tests_properties(integration.agent_update PROPERTIES LABELS integration TIMEOUT 1800
      ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR};EQ_KILL_COUNT=${EQ_KILLS}")
    # eqota-gen promote, and a device taking the promoted release (issue 16).
    add_test(NAME integration.gen_promote
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_promote.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
              $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
    set_tests_properties(integration.gen_promote PROPERTIES LABELS integration TIMEOUT 900
      ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR}")
    # A device three releases behind, before and after prune (issue 16).
    add_test(NAME integration.agent_behind
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_behind.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
              $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
    set_tests_properties(integration.agent_behind PROPERTIES LABELS integration TIMEOUT 600)
    # Pin, hold and a staged rollout over 24 simulated devices.
    add_test(NAME integration.agent_policy
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_policy.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
              $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
    set_tests_properties(integration.agent_policy PROPERTIES LABELS integration TIMEOUT 600)
    # Reports through the CGI collector under lighttpd, and eqota-gen fleet.
    add_test(NAME integration.agent_report
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_report.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
              $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
    set_tests_properties(integration.agent_report PROPERTIES LABELS integration TIMEOUT 600)
    # The fleet flow end to end: publish, promote, 10 %, 100 %, auto-halt,
    # prune, resume, and the summary of the collected reports.
    add_test(NAME integration.fleet_e2e
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/fleet_e2e.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
              $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
    set_tests_properties(integration.fleet_e2e PROPERTIES LABELS integration TIMEOUT 900)
    # One eqota at a time: the lock, its message, the daemon skipping.
    add_test(NAME integration.agent_lock
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_lock.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
              $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
    set_tests_properties(integration.agent_lock PROPERTIES LABELS integration TIMEOUT 300)
  endif()
  add_test(NAME integration.agent_https
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_https.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
            $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.agent_https PROPERTIES LABELS integration TIMEOUT 300)
endif()
