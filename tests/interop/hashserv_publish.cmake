# eqota-gen with the real bitbake-hashserv as its equivalence store. Needs an
# openembedded/bitbake tree in EQ_BITBAKE_DIR (docs/yocto.md); without it the
# test reports itself skipped.
if(NOT TARGET eqota-gen)
  foreach(t interop.hashserv_publish interop.hashserv_client)
    eq_add_skipped_test(${t} interop "needs eqota-gen: configure with -DEQ_HOST_TOOLS=ON")
  endforeach()
  return()
endif()
add_test(NAME interop.hashserv_publish
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/hashserv_publish.sh $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
set_tests_properties(interop.hashserv_publish PROPERTIES LABELS interop TIMEOUT 300)
add_test(NAME interop.hashserv_client
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/hashserv_client.sh $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
set_tests_properties(interop.hashserv_client PROPERTIES LABELS interop TIMEOUT 300)
