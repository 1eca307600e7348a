# eq_base; the allocation-failure hook itself in unit.test_common.hooks.
eq_add_unit_test(test_common SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_common.c PARTS hooks test_alloc_hook)
