# Per-target compile settings. Target-based only: nothing here touches
# CMAKE_C_FLAGS, so every library and test gets the same flags by name.

option(EQ_WERROR "Treat warnings as errors (ON in CI)" OFF)
set(EQ_SANITIZE "" CACHE STRING "Sanitizers, e.g. address,undefined")
# UBSan without its runtime: undefined behaviour executes a trap
# instruction, which AddressSanitizer reports with a stack naming the line
# (ASAN_OPTIONS=handle_sigill=1) but not the kind of behaviour. The CI's
# sanitizer pass uses it for time: every process then skips libubsan, whose
# 6 MB of zeroed globals LeakSanitizer scans at each exit (docs/testing-in-ci.md).
option(EQ_UBSAN_TRAP "With EQ_SANITIZE including undefined: trap instead of linking libubsan" OFF)
option(EQ_BUILD_TESTS "Build cmocka unit tests, integration tests and fuzz replays" ON)
option(EQ_FUZZ "Build fuzz targets for libFuzzer (clang)" OFF)
# libFuzzer steers by the coverage of the code it runs: every target (the
# libraries under test above all, not only the harness) is compiled with
# -fsanitize=fuzzer-no-link, and with ASan+UBSan so that a memory error
# stops the run where it happens. Only the harnesses link the libFuzzer
# main (-fsanitize=fuzzer, in eq_add_fuzz_target).
if(EQ_FUZZ AND NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "EQ_FUZZ=ON needs clang (libFuzzer): configure with CC=clang")
endif()
# Test hooks: the allocation-failure hook (eq_alloc_fail_at), the grub
# backend's power-cut and inspection hooks, and the agent's EQ_TEST_NOW clock
# and EQ_TEST_NO_OPENAT2 switches. Without this option they do not exist in
# any binary: EQ_TEST_NOW in a device's eqota would let anyone who sets it
# bypass manifest expiry. The tests that need them are registered as skipped
# without it; scripts/test.sh turns it on. A build with hooks is never
# installed (see the install check in the top CMakeLists.txt).
option(EQ_TEST_HOOKS "Compile the test hooks into every target (tests only, never for devices)" OFF)
if(EQ_TEST_HOOKS AND NOT EQ_BUILD_TESTS)
  message(FATAL_ERROR "EQ_TEST_HOOKS=ON needs EQ_BUILD_TESTS=ON: the hooks exist only for the tests")
endif()

set(EQ_WARNINGS
  -Wall -Wextra -Wformat=2 -Wshadow -Wstrict-prototypes -Wmissing-prototypes
  -Wcast-qual -Wundef -Wvla -Wswitch-enum -Wno-switch-default)

function(eq_target_defaults tgt)
  set_target_properties(${tgt} PROPERTIES
    C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF
    C_VISIBILITY_PRESET hidden POSITION_INDEPENDENT_CODE ON)
  target_compile_definitions(${tgt} PRIVATE _GNU_SOURCE)
  target_compile_options(${tgt} PRIVATE ${EQ_WARNINGS})
  # One section per function, and executables drop what nothing calls:
  # the device links eq_delta for applying, not for the publisher's helpers
  # beside it (measured: stripped eqota 315 -> 280 KiB).
  target_compile_options(${tgt} PRIVATE -ffunction-sections -fdata-sections)
  target_link_options(${tgt} PRIVATE -Wl,--gc-sections)
  if(EQ_WERROR)
    target_compile_options(${tgt} PRIVATE -Werror)
  endif()
  if(EQ_TEST_HOOKS)
    target_compile_definitions(${tgt} PRIVATE EQ_TEST_HOOKS=1)
  endif()
  if(EQ_SANITIZE)
    target_compile_options(${tgt} PRIVATE -fsanitize=${EQ_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
    target_link_options(${tgt} PRIVATE -fsanitize=${EQ_SANITIZE})
    if(EQ_UBSAN_TRAP)
      target_compile_options(${tgt} PRIVATE -fsanitize-undefined-trap-on-error)
      target_link_options(${tgt} PRIVATE -fsanitize-undefined-trap-on-error)
    endif()
  endif()
  if(EQ_FUZZ)
    target_compile_options(${tgt} PRIVATE -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
      -fno-sanitize-recover=all)
    target_link_options(${tgt} PRIVATE -fsanitize=fuzzer-no-link,address,undefined)
  endif()
endfunction()

# -Wconversion for the modules that parse untrusted bytes (STYLE 37).
function(eq_target_strict tgt)
  target_compile_options(${tgt} PRIVATE -Wconversion -Wno-sign-conversion)
endfunction()
