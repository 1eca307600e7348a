# integration.check_lib: the shell tests' PASS/FAIL scaffolding (lib/check.sh).
add_test(NAME integration.check_lib COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_lib.sh)
set_tests_properties(integration.check_lib PROPERTIES LABELS integration TIMEOUT 60)
