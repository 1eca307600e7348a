# equiv import --repo: rebuilding a lost equivalence store from the
# repository's signed manifests.
if(TARGET eqota-gen)
  add_test(NAME integration.gen_import
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_import.sh $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.gen_import PROPERTIES LABELS integration TIMEOUT 300)
endif()
