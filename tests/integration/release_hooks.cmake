# What a distribution ships: integration.release_build builds a release
# configuration (no hooks, no tests) and its Debian packages with CPack
# (tests/integration/release_build.sh); then
#  - integration.release_hooks: finding 8 of issue 12, the release binaries
#    carry no test hook (release_hooks.sh);
#  - integration.packages: the packages eqota and eqota-gen hold what a
#    device and a build host need, with correct dependencies, and install,
#    run and purge on this Debian system (packages.sh).
# Only in builds without sanitizers or fuzzing: the release configuration
# is built anyway, once per CI run is enough.
if(EQ_SANITIZE OR EQ_FUZZ)
  foreach(t release_build release_hooks packages)
    eq_add_skipped_test(integration.${t} integration
      "runs in the build without sanitizers (it builds its own release configuration)")
  endforeach()
else()
  set(EQ_RELEASE_BUILD ${CMAKE_BINARY_DIR}/tests/release-build)
  add_test(NAME integration.release_build
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/release_build.sh ${PROJECT_SOURCE_DIR} ${CMAKE_C_COMPILER} ${EQ_RELEASE_BUILD})
  set_tests_properties(integration.release_build PROPERTIES LABELS integration TIMEOUT 900
    FIXTURES_SETUP release_build)
  add_test(NAME integration.release_hooks
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/release_hooks.sh ${PROJECT_SOURCE_DIR} ${CMAKE_C_COMPILER} ${EQ_RELEASE_BUILD})
  set_tests_properties(integration.release_hooks PROPERTIES LABELS integration TIMEOUT 300
    FIXTURES_REQUIRED release_build)
  # dpkg -i and --purge take dpkg's lock, as the QEMU tests' apt-get may.
  add_test(NAME integration.packages
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/packages.sh ${PROJECT_SOURCE_DIR} ${EQ_RELEASE_BUILD})
  set_tests_properties(integration.packages PROPERTIES LABELS integration TIMEOUT 600
    FIXTURES_REQUIRED release_build RESOURCE_LOCK dpkg SKIP_RETURN_CODE 77)
endif()
