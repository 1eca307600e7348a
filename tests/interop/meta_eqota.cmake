# meta-eqota against upstream BitBake (EQ_BITBAKE_DIR) and, for the parse
# test, OpenEmbedded-Core (EQ_OECORE_DIR); each skips visibly without them
# (docs/yocto.md).
if(TARGET eqota-gen)
  add_test(NAME interop.meta_eqota_class
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/meta_eqota_class.py $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  set_tests_properties(interop.meta_eqota_class PROPERTIES LABELS interop TIMEOUT 900)
else()
  eq_add_skipped_test(interop.meta_eqota_class interop "needs eqota-gen: configure with -DEQ_HOST_TOOLS=ON")
endif()
add_test(NAME interop.meta_eqota_oecore
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/meta_eqota_oecore.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(interop.meta_eqota_oecore PROPERTIES LABELS interop TIMEOUT 900)
