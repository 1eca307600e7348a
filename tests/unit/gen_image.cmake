# Unit tests of the image analysis (gen_image.c): merged-/usr resolution,
# attribution and classes on small trees, refused sockets, proc/ content and
# symlink loops. The device node needs root (mknod) and runs as its own part.
if(TARGET eq_gen)
  eq_add_unit_test(test_gen_image SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gen_image.c
    ${CMAKE_CURRENT_LIST_DIR}/gen_image_fixture.c LIBS eq_gen
    PARTS device test_device_node)
endif()
# The image components (gen_image_compose.c); the device nodes need root.
# Both share the fixture gen_image_fixture.c (a scratch folder, trees, images).
if(TARGET eq_gen)
  eq_add_unit_test(test_gen_image_compose SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gen_image_compose.c
    ${CMAKE_CURRENT_LIST_DIR}/gen_image_fixture.c LIBS eq_gen
    PARTS device test_devices)
endif()
