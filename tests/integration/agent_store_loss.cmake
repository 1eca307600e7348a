# The no-download guarantee after the publisher lost its equivalence store.
# eq-simboot comes from tests/unit/bootloader.cmake; the simulated reboots
# use the EQ_TEST_BOOT_ID_FILE test hook (EQ_TEST_HOOKS).
eq_add_device_test(integration.agent_store_loss ${CMAKE_CURRENT_LIST_DIR}/agent_store_loss.sh TIMEOUT 300
  HOOKS "the EQ_TEST_BOOT_ID_FILE test hook (simulated reboots)")
