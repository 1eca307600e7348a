# External libraries, all from Debian 12 -dev packages. A missing one stops
# configure with the name of the package to install.
find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: apt-get install pkg-config")
endif()

function(eq_require_pkg target module debpkg)
  pkg_check_modules(${target} QUIET IMPORTED_TARGET GLOBAL ${module})
  if(NOT ${target}_FOUND)
    message(FATAL_ERROR "${module} not found: apt-get install ${debpkg}")
  endif()
endfunction()

# mbedTLS 2.28 ships no pkg-config file. Only libmbedcrypto is linked
# (SHA-256, ECDSA); TLS on the device is libcurl's.
find_path(MBEDTLS_INCLUDE_DIR mbedtls/version.h)
find_library(MBEDCRYPTO_LIB mbedcrypto)
if(NOT MBEDTLS_INCLUDE_DIR OR NOT MBEDCRYPTO_LIB)
  message(FATAL_ERROR "mbedTLS not found: apt-get install libmbedtls-dev")
endif()
include(EqMbedtlsVersion)
eq_check_mbedtls_version("${MBEDTLS_INCLUDE_DIR}")
add_library(eq_ext_mbedcrypto INTERFACE)
target_include_directories(eq_ext_mbedcrypto SYSTEM INTERFACE ${MBEDTLS_INCLUDE_DIR})
target_link_libraries(eq_ext_mbedcrypto INTERFACE ${MBEDCRYPTO_LIB})

eq_require_pkg(ZSTD libzstd libzstd-dev)
eq_require_pkg(CJSON libcjson libcjson-dev)
eq_require_pkg(CURL libcurl libcurl4-openssl-dev)
eq_require_pkg(UBOOTENV libubootenv libubootenv-dev)
if(EQ_HOST_TOOLS)
  eq_require_pkg(SQLITE sqlite3 libsqlite3-dev)
  eq_require_pkg(ARCHIVE libarchive libarchive-dev)
  # Suffix arrays for the bsdiff-class delta method; creation is host-only,
  # devices only apply.
  eq_require_pkg(DIVSUFSORT libdivsufsort libdivsufsort-dev)
endif()
if(EQ_BUILD_TESTS)
  eq_require_pkg(CMOCKA cmocka libcmocka-dev)
  # Tests make gzip streams with every zlib strategy for the deflate-aware
  # deltas; eqota itself does not link zlib.
  eq_require_pkg(ZLIB zlib zlib1g-dev)
endif()
