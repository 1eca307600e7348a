# eqota-gen image-check on a root filesystem unpacked from the cached
# release1 .debs and changed as an image builder changes it (merged /usr,
# /etc/passwd, an edited file, a device node): counts computed by the script
# must match, as a folder and as a tar; sockets, proc/ content, symlink loops
# and a truncated tar are refused.
if(NOT TARGET eqota-gen)
  eq_add_skipped_test(integration.gen_image integration
    "needs eqota-gen: configure with -DEQ_HOST_TOOLS=ON")
else()
  add_test(NAME integration.gen_image
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_image.sh $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.gen_image PROPERTIES LABELS integration TIMEOUT 600
    ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR}" SKIP_RETURN_CODE 77)
endif()
