# The no-download guarantee after the publisher lost its equivalence store.
# eq-simboot comes from tests/unit/bootloader.cmake; the simulated reboots
# use the EQ_TEST_BOOT_ID_FILE test hook (EQ_TEST_HOOKS).
if(NOT TARGET eqota-gen)
  eq_add_skipped_test(integration.agent_store_loss integration
    "needs eqota-gen to publish its releases: configure with -DEQ_HOST_TOOLS=ON")
elseif(NOT EQ_TEST_HOOKS)
  eq_add_skipped_test(integration.agent_store_loss integration
    "needs the EQ_TEST_BOOT_ID_FILE test hook (simulated reboots): configure with -DEQ_TEST_HOOKS=ON")
else()
  add_test(NAME integration.agent_store_loss
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_store_loss.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
            $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.agent_store_loss PROPERTIES LABELS integration TIMEOUT 300)
endif()
