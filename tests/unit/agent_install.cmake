# Installer, plan, slot records and dir slots of eq_agent, over releases
# published with the real eqota-gen (so only where both targets exist).
if(TARGET eq_agent AND TARGET eqota-gen)
  eq_add_unit_test(test_install SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_install.c LIBS eq_agent)
  set_tests_properties(unit.test_install PROPERTIES
    ENVIRONMENT "EQOTA_GEN=$<TARGET_FILE:eqota-gen>;EQ_TEST_DATA=${CMAKE_CURRENT_LIST_DIR}/../data;EQ_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endif()
