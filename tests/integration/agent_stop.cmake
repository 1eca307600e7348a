# SIGTERM stops eqota cleanly at any step (issue 14): a download, the
# install between two packages, a one-shot update; the next start resumes.
eq_add_device_test(integration.agent_stop ${CMAKE_CURRENT_LIST_DIR}/agent_stop.sh TIMEOUT 300
  HOOKS "the EQ_TEST_TERM_PARENT_AT and EQ_TEST_BOOT_ID_FILE test hooks")
