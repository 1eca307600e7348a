# The --json documents of eqota and eqota-gen against the JSON Schemas in
# docs/schemas (tests/integration/json_schema.sh, docs/json-output.md).
eq_add_device_test(integration.json_schema ${CMAKE_CURRENT_LIST_DIR}/json_schema.sh TIMEOUT 300
  HOOKS "the EQ_TEST_BOOT_ID_FILE test hook (simulated reboots)")
