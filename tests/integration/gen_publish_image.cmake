# eqota-gen publish --image on a small merged-/usr image with tarball
# packages: the manifest's image object, components as packages, deltas in
# the second release, format 1 without --image, refused inputs
# (gen_publish_image.sh). And, when tests/tools/mkimages.sh has built them,
# the Debian 12 images r1 and r2 published in image mode, printing the
# counts and bytes (gen_publish_image_debian.sh; skipped without them).
if(NOT TARGET eqota-gen)
  eq_add_skipped_test(integration.gen_publish_image integration
    "needs eqota-gen: configure with -DEQ_HOST_TOOLS=ON")
  eq_add_skipped_test(integration.gen_publish_image_debian integration
    "needs eqota-gen: configure with -DEQ_HOST_TOOLS=ON")
else()
  add_test(NAME integration.gen_publish_image
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_publish_image.sh $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.gen_publish_image PROPERTIES LABELS integration TIMEOUT 300
    SKIP_RETURN_CODE 77)
  add_test(NAME integration.gen_publish_image_debian
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_publish_image_debian.sh $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.gen_publish_image_debian PROPERTIES LABELS integration TIMEOUT 1800
    ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR}" SKIP_RETURN_CODE 77)
endif()
