# cJSON is linked only so that main() can route cJSON's allocations through
# eq_malloc for the allocation-failure loop.
# The allocation-failure loop needs the test hooks (unit.test_manifest.hooks).
eq_add_unit_test(test_manifest SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_manifest.c LIBS eq_manifest PkgConfig::CJSON
  PARTS hooks test_alloc_failures)
