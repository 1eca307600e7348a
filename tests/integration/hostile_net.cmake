# The agent against hostile servers on loopback (issue 12, findings 4-6):
# endless error bodies, trickling transfers, a daemon cycle past its
# deadline, SIGTERM during a cycle, https redirected to http.
eq_add_device_test(integration.agent_hostile_net ${CMAKE_CURRENT_LIST_DIR}/agent_hostile_net.sh TIMEOUT 600)
