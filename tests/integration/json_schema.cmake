# The --json documents of eqota and eqota-gen against the JSON Schemas in
# docs/schemas (tests/integration/json_schema.sh, docs/json-output.md).
if(NOT TARGET eqota-gen)
  eq_add_skipped_test(integration.json_schema integration "needs eqota-gen: configure with -DEQ_HOST_TOOLS=ON")
elseif(NOT EQ_TEST_HOOKS)
  eq_add_skipped_test(integration.json_schema integration
    "needs the EQ_TEST_BOOT_ID_FILE test hook (simulated reboots): configure with -DEQ_TEST_HOOKS=ON")
else()
  add_test(NAME integration.json_schema
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/json_schema.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
            $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.json_schema PROPERTIES LABELS integration TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
