eq_add_unit_test(test_deltas SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_deltas.c LIBS eq_delta)
