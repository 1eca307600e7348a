# unit.sanitizers.*: the sanitizer build stops a run on each kind of bug it
# exists for (tests/unit/sanitizer_probe.c), so a pass that no longer
# checks (a flag lost, EQ_UBSAN_TRAP without effect) fails here instead of
# passing quietly. Only where EQ_SANITIZE names address and undefined.
if(EQ_SANITIZE MATCHES "address" AND EQ_SANITIZE MATCHES "undefined")
  add_executable(sanitizer_probe ${CMAKE_CURRENT_LIST_DIR}/sanitizer_probe.c)
  eq_target_defaults(sanitizer_probe)
  add_test(NAME unit.sanitizers.none COMMAND sanitizer_probe none)
  # The run must fail and say why: the line of the overflow (a trap under
  # EQ_UBSAN_TRAP, UBSan's message otherwise), ASan's and LSan's reports.
  foreach(c "overflow;sanitizer_probe.c:[0-9]" "heap;heap-buffer-overflow" "leak;detected memory leaks")
    list(GET c 0 mode)
    list(GET c 1 want)
    add_test(NAME unit.sanitizers.${mode} COMMAND sh -c "out=$(\"$1\" ${mode} 2>&1) && { echo \"$out\"; echo 'FAIL: the planted bug ran to the end'; exit 1; }; echo \"$out\" | tail -20; echo \"$out\" | grep -q '${want}' || { echo 'FAIL: no \"${want}\" in the report'; exit 1; }" sh $<TARGET_FILE:sanitizer_probe>)
  endforeach()
  # The options of scripts/test.sh's sanitizer pass, so that the probe
  # reports as the pass's tests do, also when ctest runs without them.
  set_tests_properties(unit.sanitizers.none unit.sanitizers.overflow unit.sanitizers.heap unit.sanitizers.leak
    PROPERTIES LABELS unit TIMEOUT 60 ENVIRONMENT "ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:handle_sigill=1")
endif()
