# Paths shipped by two packages of one release (busybox and busybox-static
# from Debian 12): publish refuses them, owner rules settle them, and a
# simulated device then downloads exactly its plan. eq-simboot comes from
# tests/unit/bootloader.cmake and eq-payload from payload_debs.cmake; the
# simulated reboots use the EQ_TEST_BOOT_ID_FILE test hook (EQ_TEST_HOOKS).
if(NOT TARGET eqota-gen)
  eq_add_skipped_test(integration.gen_conflict integration
    "needs eqota-gen to publish its releases: configure with -DEQ_HOST_TOOLS=ON")
elseif(NOT EQ_TEST_HOOKS)
  eq_add_skipped_test(integration.gen_conflict integration
    "needs the EQ_TEST_BOOT_ID_FILE test hook (simulated reboots): configure with -DEQ_TEST_HOOKS=ON")
else()
  add_test(NAME integration.gen_conflict
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_conflict.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
            $<TARGET_FILE:eq-simboot> $<TARGET_FILE:eq-payload> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.gen_conflict PROPERTIES LABELS integration TIMEOUT 600
    ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR}" SKIP_RETURN_CODE 77)
endif()
