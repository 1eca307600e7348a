add_test(NAME unit.module_graph COMMAND ${CMAKE_CURRENT_LIST_DIR}/../tools/check_deps.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(unit.module_graph PROPERTIES LABELS unit)
