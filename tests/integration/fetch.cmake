# integration.fetch: eq_fetcher against a real lighttpd on 127.0.0.1 and
# the fault-injecting tests/integration/lib/badhttp.py (truncated bodies,
# oversize bodies, a slow link, 503, servers that ignore Range).
add_executable(test_fetch ${CMAKE_CURRENT_LIST_DIR}/test_fetch.c)
eq_target_defaults(test_fetch)
target_link_libraries(test_fetch PRIVATE eq_agent eq_base PkgConfig::CMOCKA)
add_test(NAME integration.fetch
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/test_fetch.sh $<TARGET_FILE:test_fetch>)
set_tests_properties(integration.fetch PROPERTIES LABELS integration TIMEOUT 120)
