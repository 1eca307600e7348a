# The installer over the real Debian release pair, driven by test_install's
# --install mode (tests/unit/agent_install.cmake defines it under the same
# condition; integration fragments are included first, so no TARGET check on
# it here).
if(NOT TARGET eqota-gen)
  eq_add_skipped_test(integration.install_debs integration "needs eqota-gen to publish the releases: configure with -DEQ_HOST_TOOLS=ON")
else()
  add_test(NAME integration.install_debs
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/install_debs.sh $<TARGET_FILE:test_install> $<TARGET_FILE:eqota-gen>
            ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.install_debs PROPERTIES LABELS integration TIMEOUT 1800
    ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR}")
endif()
