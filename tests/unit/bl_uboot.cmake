# The uboot bootloader backend against a real libubootenv on environment
# files, with U-Boot's tools (mkenvimage, fw_printenv, fw_setenv) where
# installed. Skipped while the top level does not add bootloader/.
if(NOT TARGET eq_bootloader)
  return()
endif()
eq_add_unit_test(test_bl_uboot SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_bl_uboot.c LIBS eq_bootloader)
set_tests_properties(unit.test_bl_uboot PROPERTIES LABELS "unit;bootloader")
