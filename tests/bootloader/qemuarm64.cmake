# bootloader.qemuarm64.boot: boards/qemuarm64's boot.scr under QEMU (Debian's
# qemu_arm64 U-Boot): the slot each boot picks and the boot-control
# environment it leaves, over 15 boots of about 2 s each. Needs
# qemu-system-aarch64 and u-boot-qemu (scripts/setup.sh); the arm64 kernel
# is downloaded into the cache on first use (scripts/fetch-board-debs.sh).
# eq-blctl (tests/unit/bootloader.cmake, read after this file, hence the
# generator expression) seeds and reads the environment through eqota's
# uboot backend.
find_program(EQ_QEMU_AARCH64 qemu-system-aarch64)
if(NOT EQ_QEMU_AARCH64 OR NOT EXISTS /usr/lib/u-boot/qemu_arm64/u-boot.bin)
  eq_add_skipped_test(bootloader.qemuarm64.boot bootloader
    "qemu-system-aarch64 (qemu-system-arm) or /usr/lib/u-boot/qemu_arm64/u-boot.bin (u-boot-qemu) is missing when configured: run scripts/setup.sh, then configure again")
else()
  add_test(NAME bootloader.qemuarm64.boot
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/boot-qemuarm64.sh ${PROJECT_SOURCE_DIR}
            ${CMAKE_BINARY_DIR}/tests/bootloader-qemuarm64)
  set_tests_properties(bootloader.qemuarm64.boot PROPERTIES LABELS "bootloader" TIMEOUT 900
    ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR};EQ_BLCTL=$<TARGET_FILE:eq-blctl>")
endif()
