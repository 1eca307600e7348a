# Installer, plan, slot records and dir slots of eq_agent, over releases
# published with the real eqota-gen (so only where both targets exist).
if(TARGET eq_agent AND TARGET eqota-gen)
  eq_add_unit_test(test_install SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_install.c LIBS eq_agent)
  set(EQ_INSTALL_TEST_ENV
    "EQOTA_GEN=$<TARGET_FILE:eqota-gen>;EQ_TEST_DATA=${CMAKE_CURRENT_LIST_DIR}/../data;EQ_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  set_tests_properties(unit.test_install PROPERTIES ENVIRONMENT "${EQ_INSTALL_TEST_ENV}")
  # The same cases on the path for kernels without openat2 (before 5.6).
  add_test(NAME unit.test_install_no_openat2 COMMAND test_install)
  set_tests_properties(unit.test_install_no_openat2 PROPERTIES LABELS unit
    ENVIRONMENT "${EQ_INSTALL_TEST_ENV};EQ_TEST_NO_OPENAT2=1")
endif()
