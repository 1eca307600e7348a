# Payload round trip over real Debian packages, with the test-only eq-payload
# CLI (never installed).
add_executable(eq-payload ${PROJECT_SOURCE_DIR}/tests/tools/eq-payload.c)
eq_target_defaults(eq-payload)
target_link_libraries(eq-payload PRIVATE eq_delta eq_base)

add_test(NAME integration.payload_debs
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/payload_debs.sh $<TARGET_FILE:eq-payload>)
set_tests_properties(integration.payload_debs PROPERTIES LABELS integration TIMEOUT 1800
  ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR}")
