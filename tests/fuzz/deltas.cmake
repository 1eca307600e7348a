# fuzz_delta: libFuzzer target with EQ_FUZZ (clang), else a replay binary
# that runs the seed corpus and the bad-input corpus as a ctest.
add_executable(fuzz_delta ${CMAKE_CURRENT_LIST_DIR}/fuzz_delta.c)
if(NOT EQ_FUZZ)
  target_sources(fuzz_delta PRIVATE ${CMAKE_CURRENT_LIST_DIR}/replay_main.c)
endif()
eq_target_defaults(fuzz_delta)
target_link_libraries(fuzz_delta PRIVATE eq_delta eq_base)
if(EQ_FUZZ)
  target_compile_definitions(fuzz_delta PRIVATE EQ_LIBFUZZER=1)
  target_compile_options(fuzz_delta PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_delta PRIVATE -fsanitize=fuzzer)
else()
  add_test(NAME fuzz.delta COMMAND fuzz_delta
    ${CMAKE_CURRENT_LIST_DIR}/corpus/delta ${PROJECT_SOURCE_DIR}/tests/data/bad/delta)
  set_tests_properties(fuzz.delta PROPERTIES LABELS fuzz)
endif()
