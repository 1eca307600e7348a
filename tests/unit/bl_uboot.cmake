# The uboot bootloader backend against a real libubootenv on environment
# files. Parts: tools, the cross-checks with U-Boot's tools (mkenvimage from
# u-boot-tools, fw_printenv and fw_setenv from libubootenv-tool); mountns,
# the lock test in a private mount namespace (root); hooks, the
# allocation-failure loop (EQ_TEST_HOOKS).
eq_add_unit_test(test_bl_uboot SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_bl_uboot.c LIBS eq_bootloader
  LABELS unit bootloader
  PARTS tools test_blank,test_mkenvimage,test_fw_tools
        mountns test_lock
        hooks test_alloc_failures)
