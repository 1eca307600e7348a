# [persist] on a simulated device: the device's machine id, host keys and
# hostname survive r1 -> r2 -> r3, with the same rollout choice and report
# id; verify and the next update's keep still pass; the size cap stops an
# update before the switch (tests/integration/agent_persist.sh).
eq_agent_script_test(agent_persist 300 "${_reboots}")
