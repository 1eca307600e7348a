# Unit tests of eq_gen (equivalence store, package reader, build index,
# signing for a role and the timestamp step, the release history summary,
# the fleet summary).
if(TARGET eq_gen)
  eq_add_unit_test(test_gen_store SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gen_store.c LIBS eq_gen PkgConfig::SQLITE)
  eq_add_unit_test(test_gen_package SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gen_package.c
    LIBS eq_gen PkgConfig::ARCHIVE)
  eq_add_unit_test(test_gen_bad SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gen_bad.c LIBS eq_gen)
  eq_add_unit_test(test_gen_sign SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gen_sign.c LIBS eq_gen)
  eq_add_unit_test(test_gen_history SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gen_history.c LIBS eq_gen)
  # The fleet summary: device reports summed per release, bad lines, escaping.
  eq_add_unit_test(test_gen_fleet SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gen_fleet.c LIBS eq_gen)
endif()
