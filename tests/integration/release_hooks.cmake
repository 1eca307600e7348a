# Finding 8 of issue 12: a release build of eqota and eqota-gen carries no
# test hook (tests/integration/release_hooks.sh builds one in a temporary
# folder). Only in builds without sanitizers or fuzzing: the check builds
# its own release configuration anyway, once per CI run is enough.
if(EQ_SANITIZE OR EQ_FUZZ)
  eq_add_skipped_test(integration.release_hooks integration
    "runs in the build without sanitizers (it builds its own release configuration)")
else()
  add_test(NAME integration.release_hooks
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/release_hooks.sh ${PROJECT_SOURCE_DIR} ${CMAKE_C_COMPILER})
  set_tests_properties(integration.release_hooks PROPERTIES LABELS integration TIMEOUT 900)
endif()
