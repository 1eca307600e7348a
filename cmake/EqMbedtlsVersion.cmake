# eq_check_mbedtls_version(<include dir>): stops configure unless the mbedTLS
# headers there are 2.16 to 2.28. eq_base and eq_manifest use the 2.x API
# (mbedtls_sha256_*_ret, mbedtls_pk_* with 2.x signatures), removed in 3.0;
# Debian 12 (bookworm) ships 2.28 as libmbedtls-dev. 2.x keeps the version in
# mbedtls/version.h, 3.x in mbedtls/build_info.h: both are read.
# Script mode, for the test unit.mbedtls_version:
#   cmake -DEQ_MBEDTLS_INCLUDE_DIR=<dir> -P EqMbedtlsVersion.cmake
function(eq_check_mbedtls_version dir)
  set(lines)
  foreach(h version.h build_info.h)
    if(EXISTS "${dir}/mbedtls/${h}")
      file(STRINGS "${dir}/mbedtls/${h}" l REGEX "^#[ \t]*define[ \t]+MBEDTLS_VERSION_(NUMBER|STRING)[ \t]")
      list(APPEND lines ${l})
    endif()
  endforeach()
  string(REGEX MATCH "MBEDTLS_VERSION_NUMBER[ \t]+(0[xX][0-9a-fA-F]+)" m "${lines}")
  set(num "${CMAKE_MATCH_1}")
  string(REGEX MATCH "MBEDTLS_VERSION_STRING[ \t]+\"([^\"]*)\"" m "${lines}")
  set(str "${CMAKE_MATCH_1}")
  set(supported "eqota needs mbedTLS 2.16 to 2.28 (the 2.x API; Debian 12 bookworm's libmbedtls-dev is 2.28)")
  if(NOT num)
    message(FATAL_ERROR "mbedTLS: no MBEDTLS_VERSION_NUMBER in ${dir}/mbedtls/version.h or build_info.h; ${supported}")
  endif()
  math(EXPR v "${num}" OUTPUT_FORMAT DECIMAL)
  math(EXPR major "(${v} >> 24) & 255")
  math(EXPR minor "(${v} >> 16) & 255")
  if(NOT major EQUAL 2 OR minor LESS 16 OR minor GREATER 28)
    message(FATAL_ERROR "mbedTLS ${str} (${num}) in ${dir} is not supported: ${supported}. "
      "Point MBEDTLS_INCLUDE_DIR and MBEDCRYPTO_LIB at a supported one.")
  endif()
  message(STATUS "mbedTLS ${str} in ${dir}")
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND EQ_MBEDTLS_INCLUDE_DIR)
  eq_check_mbedtls_version("${EQ_MBEDTLS_INCLUDE_DIR}")
endif()
