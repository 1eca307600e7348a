# Allocation-failure loops for payload, delta, slot records and state
# (test_alloc_fail.c); they need the allocation-failure hook.
eq_add_unit_test(test_alloc_fail SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_alloc_fail.c LIBS eq_agent HOOKS)
