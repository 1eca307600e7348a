# fuzz_payload: payload reader + safe extract + canonical round trip.
# libFuzzer target with EQ_FUZZ (clang), else a replay binary that runs the
# seed corpus and the bad-payload corpus as a ctest.
add_executable(fuzz_payload ${CMAKE_CURRENT_LIST_DIR}/fuzz_payload.c)
if(NOT EQ_FUZZ)
  target_sources(fuzz_payload PRIVATE ${CMAKE_CURRENT_LIST_DIR}/replay_main.c)
endif()
eq_target_defaults(fuzz_payload)
target_link_libraries(fuzz_payload PRIVATE eq_delta eq_base)
set(EQ_FUZZ_PAYLOAD_ARGS)
if(EQ_FUZZ)
  target_compile_definitions(fuzz_payload PRIVATE EQ_LIBFUZZER=1)
  target_compile_options(fuzz_payload PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_payload PRIVATE -fsanitize=fuzzer)
  set(EQ_FUZZ_PAYLOAD_ARGS -runs=0)
endif()
add_test(NAME fuzz.payload COMMAND fuzz_payload ${EQ_FUZZ_PAYLOAD_ARGS}
  ${CMAKE_CURRENT_LIST_DIR}/corpus/payload ${PROJECT_SOURCE_DIR}/tests/data/bad/payload)
set_tests_properties(fuzz.payload PROPERTIES LABELS fuzz)
