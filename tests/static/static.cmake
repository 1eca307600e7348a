# Static analysis (label static; docs/testing-in-ci.md, "Static analysis"):
# cppcheck and clang-tidy over every translation unit of this build, and
# clang-format over every C file, shellcheck over every shell script. Each must be clean; each first proves it
# can fail on a planted bug. Not in sanitizer or fuzzing builds: the
# analysis of the -Werror build is enough.
if(EQ_SANITIZE OR EQ_FUZZ)
  foreach(t cppcheck clang_tidy clang_format shellcheck)
    eq_add_skipped_test(static.${t} static "runs in the build without sanitizers or fuzzing")
  endforeach()
else()
  add_test(NAME static.cppcheck COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cppcheck.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  add_test(NAME static.clang_tidy COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/clang_tidy.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  add_test(NAME static.clang_format COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/clang_format.sh ${PROJECT_SOURCE_DIR})
  add_test(NAME static.shellcheck COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/shellcheck.sh ${PROJECT_SOURCE_DIR})
  set_tests_properties(static.cppcheck static.clang_tidy static.clang_format static.shellcheck PROPERTIES
    LABELS static TIMEOUT 900 SKIP_RETURN_CODE 77)
endif()
