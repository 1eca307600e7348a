# The grub bootloader backend (bootloader/bl_grub.c) on real grubenv files,
# through its test hooks (power cuts, copy inspection). The cases that
# cross-check with grub-editenv (grub-common) run as unit.test_bl_grub.editenv.
eq_add_unit_test(test_bl_grub SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_bl_grub.c LIBS eq_bootloader
  LABELS unit bootloader HOOKS
  PARTS editenv test_other_vars,test_editenv_cross,test_power_cuts)
