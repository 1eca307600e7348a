# meta-eqota against upstream BitBake (EQ_BITBAKE_DIR) and, for the parse
# and build tests, OpenEmbedded-Core (EQ_OECORE_DIR); each skips visibly
# without them (docs/yocto.md).
if(TARGET eqota-gen)
  add_test(NAME interop.meta_eqota_class
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/meta_eqota_class.py $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  set_tests_properties(interop.meta_eqota_class PROPERTIES LABELS interop TIMEOUT 900)
  # A real offline OE-Core build of a tiny image, published in image mode.
  add_test(NAME interop.meta_eqota_build
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/meta_eqota_build.sh $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  set_tests_properties(interop.meta_eqota_build PROPERTIES LABELS interop TIMEOUT 1200)
else()
  foreach(t interop.meta_eqota_class interop.meta_eqota_build)
    eq_add_skipped_test(${t} interop "needs eqota-gen: configure with -DEQ_HOST_TOOLS=ON")
  endforeach()
endif()
add_test(NAME interop.meta_eqota_oecore
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/meta_eqota_oecore.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(interop.meta_eqota_oecore PROPERTIES LABELS interop TIMEOUT 900)
