# The configure-time mbedTLS version check (cmake/EqMbedtlsVersion.cmake)
# against fake headers: 3.x and 2.15 are refused with the supported range,
# 2.16 and 2.28 accepted, and the installed headers pass.
add_test(NAME unit.mbedtls_version
  COMMAND bash ${PROJECT_SOURCE_DIR}/tests/tools/check_mbedtls_version.sh ${CMAKE_COMMAND}
          ${PROJECT_SOURCE_DIR}/cmake/EqMbedtlsVersion.cmake ${MBEDTLS_INCLUDE_DIR})
set_tests_properties(unit.mbedtls_version PROPERTIES LABELS unit)
