# The U-Boot environment through libubootenv and the boot variables' parsing.
eq_add_fuzz_target(uboot_env LIBS eq_bootloader
  LSAN_SUPPRESSIONS ${CMAKE_CURRENT_LIST_DIR}/libubootenv.supp)
# The grub backend's two GRUB environment blocks.
eq_add_fuzz_target(grubenv LIBS eq_bootloader)
