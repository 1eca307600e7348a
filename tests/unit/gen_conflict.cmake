# Unit tests of the release-wide path table and owner rules (gen_conflict.c)
# and eq_payload_builder_remove(). The allocation-failure loop needs the
# test hooks and runs as its own part.
if(TARGET eq_gen)
  eq_add_unit_test(test_gen_conflict SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gen_conflict.c LIBS eq_gen
    PARTS hooks test_alloc_fail)
endif()
