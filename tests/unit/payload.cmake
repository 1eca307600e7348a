eq_add_unit_test(test_payload SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_payload.c LIBS eq_delta)
