# Installer, plan, slot records and dir slots of eq_agent, over releases
# published with the real eqota-gen (so only with EQ_HOST_TOOLS=ON).
if(TARGET eqota-gen)
  set(EQ_INSTALL_TEST_ENV "EQOTA_GEN=$<TARGET_FILE:eqota-gen>")
  eq_add_unit_test(test_install SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_install.c LIBS eq_agent
    ENVIRONMENT ${EQ_INSTALL_TEST_ENV} PARTS root test_no_space)
  # The same cases on the path for kernels without openat2 (before 5.6),
  # chosen through the EQ_TEST_NO_OPENAT2 test hook.
  if(EQ_TEST_HOOKS)
    add_test(NAME unit.test_install_no_openat2 COMMAND test_install --except test_no_space)
    add_test(NAME unit.test_install_no_openat2.root COMMAND test_install --only test_no_space)
    set_tests_properties(unit.test_install_no_openat2 unit.test_install_no_openat2.root PROPERTIES LABELS unit
      ENVIRONMENT "${EQ_INSTALL_TEST_ENV};EQ_TEST_DATA=${CMAKE_CURRENT_LIST_DIR}/../data;EQ_SOURCE_DIR=${PROJECT_SOURCE_DIR};EQ_TEST_NO_OPENAT2=1")
  else()
    eq_add_skipped_test(unit.test_install_no_openat2 unit "needs the EQ_TEST_NO_OPENAT2 test hook: configure with -DEQ_TEST_HOOKS=ON")
  endif()
else()
  foreach(t unit.test_install unit.test_install.root unit.test_install_no_openat2)
    eq_add_skipped_test(${t} unit "needs eqota-gen to publish its releases: configure with -DEQ_HOST_TOOLS=ON")
  endforeach()
endif()
