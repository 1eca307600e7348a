# eq-simboot comes from tests/unit/bootloader.cmake, read after this file.
# Every test here needs eqota-gen (EQ_HOST_TOOLS) to publish; most need a
# test hook of the agent (EQ_TEST_HOOKS): EQ_TEST_NOW moves its clock,
# EQ_TEST_BOOT_ID_FILE simulates reboots.

# eq_agent_script_test(<name> <timeout> <hook reason or "">  [ENVIRONMENT ...]):
# integration.<name> runs tests/integration/<name>.sh EQOTA EQOTA_GEN
# EQ_SIMBOOT SOURCE_DIR, or is a visible skip saying what is missing.
function(eq_agent_script_test name timeout hook)
  cmake_parse_arguments(T "" "" "ENVIRONMENT" ${ARGN})
  if(NOT TARGET eqota-gen)
    eq_add_skipped_test(integration.${name} integration
      "needs eqota-gen to publish its releases: configure with -DEQ_HOST_TOOLS=ON")
    return()
  endif()
  if(hook AND NOT EQ_TEST_HOOKS)
    eq_add_skipped_test(integration.${name} integration "needs the ${hook}: configure with -DEQ_TEST_HOOKS=ON")
    return()
  endif()
  add_test(NAME integration.${name}
    COMMAND ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${name}.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
            $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.${name} PROPERTIES LABELS integration TIMEOUT ${timeout})
  if(T_ENVIRONMENT)
    set_tests_properties(integration.${name} PROPERTIES ENVIRONMENT "${T_ENVIRONMENT}")
  endif()
endfunction()

set(_reboots "EQ_TEST_BOOT_ID_FILE test hook (simulated reboots)")
# Fewer power cuts under the sanitizers, where every update is slower.
# agent_update's cuts are stratified over one update (one per slice), and
# agent_killpoints cuts every phase: agent_update.sh says what each covers.
if(EQ_SANITIZE)
  set(EQ_KILLS 6)
  set(EQ_KILLPOINTS 12)
else()
  set(EQ_KILLS 12)
  set(EQ_KILLPOINTS 60)
endif()
# Root mode: root chain, timestamp, rotation, revocation, rollback, freeze.
eq_agent_script_test(agent_trust 600 "EQ_TEST_NOW test hook (timestamp expiry)")
# Recovery after a leaked timestamp or release key: the procedure of docs/security.md (issue 29).
eq_agent_script_test(agent_trust_recovery 300 "EQ_TEST_NOW test hook (a device without a clock)")
eq_agent_script_test(agent_update 1800 "EQ_TEST_NOW test hook (manifest expiry)"
  ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR};EQ_KILL_COUNT=${EQ_KILLS}")
# eqota-gen promote, and a device taking the promoted release (issue 16).
eq_agent_script_test(gen_promote 900 "${_reboots}" ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR}")
# A device three releases behind, before and after prune (issue 16).
eq_agent_script_test(agent_behind 600 "${_reboots}")
# Pin, hold and a staged rollout over 24 simulated devices.
eq_agent_script_test(agent_policy 600 "${_reboots}")
# Reports through the CGI collector under lighttpd, and eqota-gen fleet.
eq_agent_script_test(agent_report 600 "${_reboots}")
# The fleet flow end to end: publish, promote, 10 %, 100 %, auto-halt,
# prune, resume, and the summary of the collected reports.
eq_agent_script_test(fleet_e2e 900 "${_reboots}")
# One eqota at a time: the lock, its message, the daemon skipping.
eq_agent_script_test(agent_lock 300 "${_reboots}")
# SIGKILL at random instants of every phase: download, install, the
# bootloader write, the health check, the commit and a rollback (issue 17).
# EQ_KILL_SEED=N replays a run's draws.
eq_agent_script_test(agent_killpoints 900 "${_reboots}"
  ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR};EQ_KILL_COUNT=${EQ_KILLPOINTS}")
# A damaged running slot: eqota verify, and an update that does not copy it.
eq_agent_script_test(agent_verify 300 "${_reboots}")
# A package writing through another's symlink into eqota's records: refused
# by the publisher and the device; a forged record is not kept (issue 29).
eq_agent_script_test(agent_symlink 300 "${_reboots}")
# Full disks (data folder, dir and block slots) and a read-only data folder:
# clear errors, the running slot untouched, an update once there is room
# (issue 17). Root, tmpfs and loop devices; a visible skip without them.
eq_agent_script_test(agent_fulldisk 300 "${_reboots}")
# HTTPS with a test CA, and reports to a collector that wants client certificates.
eq_agent_script_test(agent_https 300 "")
# Months of uptime (issue 17): one daemon through 1,000 polls (300 under the
# sanitizers, where every poll is slower) of no change, new releases with
# simulated reboots and errors; its RSS, fds and data folder must not grow.
if(EQ_SANITIZE)
  set(EQ_SOAK_CYCLES 300)
else()
  set(EQ_SOAK_CYCLES 1000)
endif()
eq_agent_script_test(agent_soak 900
  "EQ_TEST_POLL_MS and EQ_TEST_REBOOT_CMD test hooks (a fast daemon through simulated reboots)"
  ENVIRONMENT "EQ_SOAK_CYCLES=${EQ_SOAK_CYCLES}")
# Clock jumps of a year both ways under a running daemon, polling and on trial.
eq_agent_script_test(agent_clock 300
  "EQ_TEST_NOW_FILE, EQ_TEST_POLL_MS and EQ_TEST_REBOOT_CMD test hooks (a running daemon's clock)")
# Networks that drop and lie (issue 17): lib/faultproxy.py between the
# device and lighttpd resets, stalls, truncates, answers 5xx, ignores or
# falsifies Range and loops redirects; every case ends on release 2 within
# a bound of the ideal bytes.
eq_agent_script_test(agent_faults 300 "${_reboots}")
