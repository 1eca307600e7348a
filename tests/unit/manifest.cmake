# cJSON is linked only so that main() can route cJSON's allocations through
# eq_malloc for the allocation-failure loop.
# The allocation-failure loop needs the test hooks (unit.test_manifest.hooks).
eq_add_unit_test(test_manifest SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_manifest.c LIBS eq_manifest PkgConfig::CJSON
  PARTS hooks test_alloc_failures)
# Root of trust, rotation, timestamp, the device's trust store: each TUF
# threat is a CTest test of its own (docs/security.md has the table).
set(_threats)
foreach(t arbitrary_package extraneous_dependencies rollback indefinite_freeze endless_data mix_and_match
    slow_retrieval wrong_board_channel release_key_compromise root_rotation threshold_not_met
    timestamp_key_compromise timestamp_from_the_future)
  list(APPEND _threats threat_${t} test_threat_${t})
endforeach()
eq_add_unit_test(trust SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_trust.c LIBS eq_manifest PkgConfig::CJSON
  PARTS ${_threats})
# The repository layout device and publisher share; hostile names refused.
eq_add_unit_test(test_repo_layout SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_repo_layout.c LIBS eq_manifest)
