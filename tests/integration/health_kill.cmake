# A health check that hangs is killed with the daemon's step that ran it:
# the daemon stopped by SIGTERM, and a step past [daemon] cycle-timeout
# (issue 12; eq_health_kill_running in agent/health.c).
eq_add_device_test(integration.agent_health_kill ${CMAKE_CURRENT_LIST_DIR}/agent_health_kill.sh TIMEOUT 300
  HOOKS "the EQ_TEST_BOOT_ID_FILE test hook (simulated reboots)")
