# The extraction and rebuild paths without openat2 need the test hooks
# (unit.test_payload.hooks).
eq_add_unit_test(test_payload SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_payload.c LIBS eq_delta
  PARTS hooks test_extract_existing_symlink,test_extract_fallback_roundtrip,test_add_paths_fallback_symlink)
