# eq_base; the allocation-failure hook itself in unit.test_common.hooks.
# mbedTLS: the reference the SHA-256 implementations are compared with.
eq_add_unit_test(test_common SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_common.c LIBS eq_ext_mbedcrypto
  PARTS hooks test_alloc_hook)
# eq_open_beneath on openat2 and on the walker (the walker cases need the
# EQ_TEST_NO_OPENAT2 hook and skip visibly without it).
eq_add_unit_test(test_beneath SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_beneath.c PARTS walker walker)
# The ARMv8 path of common/sha256.c, built for arm64 and run under
# qemu-aarch64 (a visible skip without the cross compiler or qemu-user).
add_test(NAME unit.sha256_arm64 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cross/sha256-arm64.sh ${PROJECT_SOURCE_DIR}
  ${CMAKE_CURRENT_BINARY_DIR}/sha256-arm64)
set_tests_properties(unit.sha256_arm64 PROPERTIES LABELS unit TIMEOUT 120 SKIP_RETURN_CODE 77)
