# bootloader.qemux86-64.boot: boards/qemux86-64's grub.cfg under QEMU (OVMF
# and GRUB EFI): the slot each boot picks and the two grubenv copies it
# leaves, over about 20 boots of 6 s each under TCG. Needs
# qemu-system-x86_64, OVMF and GRUB's EFI modules (scripts/setup.sh); the
# kernel is downloaded into the cache on first use
# (scripts/fetch-board-debs.sh). eq-blctl (tests/unit/bootloader.cmake,
# read after this file, hence the generator expression) seeds and reads the
# environment through eqota's grub backend.
find_program(EQ_QEMU_X86_64 qemu-system-x86_64)
if(NOT EQ_QEMU_X86_64 OR NOT EXISTS /usr/share/OVMF/OVMF_CODE_4M.fd OR NOT EXISTS /usr/lib/grub/x86_64-efi)
  eq_add_skipped_test(bootloader.qemux86-64.boot bootloader
    "qemu-system-x86_64 (qemu-system-x86), OVMF (ovmf) or GRUB's EFI modules (grub-efi-amd64-bin) are missing when configured: run scripts/setup.sh, then configure again")
else()
  add_test(NAME bootloader.qemux86-64.boot
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/boot-qemux86-64.sh ${PROJECT_SOURCE_DIR}
            ${CMAKE_BINARY_DIR}/tests/bootloader-qemux86-64)
  set_tests_properties(bootloader.qemux86-64.boot PROPERTIES LABELS "bootloader" TIMEOUT 900
    ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR};EQ_BLCTL=$<TARGET_FILE:eq-blctl>")
endif()
