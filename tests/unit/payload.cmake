# The extraction path without openat2 needs the test hooks
# (unit.test_payload.hooks).
eq_add_unit_test(test_payload SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_payload.c LIBS eq_delta
  PARTS hooks test_extract_existing_symlink,test_extract_fallback_roundtrip)
