# The grub bootloader backend (bootloader/bl_grub.c) on real grubenv files,
# cross-checked with grub-editenv where grub-common is installed.
if(NOT TARGET eq_bootloader)
  return()
endif()
eq_add_unit_test(test_bl_grub SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_bl_grub.c LIBS eq_bootloader)
set_tests_properties(unit.test_bl_grub PROPERTIES LABELS "unit;bootloader")
