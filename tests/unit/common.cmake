eq_add_unit_test(test_common SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_common.c)
