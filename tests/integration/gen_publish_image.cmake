# eqota-gen publish --image on a small merged-/usr image with tarball
# packages: the manifest's image object, components as packages, deltas in
# the second release, format 1 without --image, refused inputs
# (gen_publish_image.sh). The Debian 12 image pair is published in image
# mode by integration.agent_image, which prints the counts and bytes.
if(NOT TARGET eqota-gen)
  eq_add_skipped_test(integration.gen_publish_image integration
    "needs eqota-gen: configure with -DEQ_HOST_TOOLS=ON")
else()
  add_test(NAME integration.gen_publish_image
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_publish_image.sh $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.gen_publish_image PROPERTIES LABELS integration TIMEOUT 300
    SKIP_RETURN_CODE 77)
endif()
