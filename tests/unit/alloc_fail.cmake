# Allocation-failure loops for payload, delta, slot records and state
# (test_alloc_fail.c); they need the allocation-failure hook.
# The publisher's package reader joins in where eqota-gen is built (part
# "gen", skipped elsewhere).
eq_add_unit_test(test_alloc_fail SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_alloc_fail.c LIBS eq_agent HOOKS
  PARTS gen test_package_reader)
if(TARGET eq_gen AND TARGET test_alloc_fail)
  target_link_libraries(test_alloc_fail PRIVATE eq_gen)
  target_compile_definitions(test_alloc_fail PRIVATE EQ_HAVE_GEN=1)
endif()
