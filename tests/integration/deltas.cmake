# eq_delta: the eq-delta test CLI and the real-package delta test.
add_executable(eq-delta ${PROJECT_SOURCE_DIR}/tests/tools/eq-delta.c)
eq_target_defaults(eq-delta)
target_link_libraries(eq-delta PRIVATE eq_delta eq_base)

add_test(NAME integration.delta_pairs
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/delta_pairs.sh $<TARGET_FILE:eq-delta>)
# Under the sanitizers every delta is several times slower: the small pairs
# only (the release pair is also covered by integration.agent_update).
if(EQ_SANITIZE)
  set(EQ_PAIRS "DELTA_PAIRS_PKGS=libcurl4 libsystemd0 zlib1g libexpat1")
else()
  set(EQ_PAIRS "")
endif()
set_tests_properties(integration.delta_pairs PROPERTIES LABELS integration TIMEOUT 1800
  ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR};EQ_SOURCE_DIR=${PROJECT_SOURCE_DIR};EQ_BUILD_DIR=${PROJECT_BINARY_DIR};${EQ_PAIRS}")
