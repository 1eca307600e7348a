# The manual pages and bash completion agree with --help and with the
# configuration parser (tests/integration/manpages.sh).
if(NOT TARGET eqota-gen)
  eq_add_skipped_test(integration.manpages integration "needs eqota-gen: configure with -DEQ_HOST_TOOLS=ON")
else()
  add_test(NAME integration.manpages
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/manpages.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.manpages PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()
