# integration.imgcmp_selftest: tests/tools/imgcmp.py, the comparer that checks
# a slot against its image without eqota's code (issue 31), reports a planted
# difference of every kind, naming the path. Needs root (a device node,
# owners); otherwise a skip.
add_test(NAME integration.imgcmp_selftest
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/imgcmp_selftest.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(integration.imgcmp_selftest PROPERTIES LABELS integration TIMEOUT 600
  SKIP_RETURN_CODE 77)
