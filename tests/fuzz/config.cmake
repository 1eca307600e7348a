# Fuzz target for the agent's config parser. Without EQ_FUZZ it links a
# replay main and runs the bad corpus and the seed corpus as a ctest.
if(TARGET eq_agent)
  add_executable(fuzz_config ${CMAKE_CURRENT_LIST_DIR}/fuzz_config.c)
  eq_target_defaults(fuzz_config)
  target_link_libraries(fuzz_config PRIVATE eq_agent eq_base)
  set(EQ_FUZZ_CONFIG_ARGS)
  if(EQ_FUZZ)
    target_compile_definitions(fuzz_config PRIVATE EQ_LIBFUZZER=1)
    target_compile_options(fuzz_config PRIVATE -fsanitize=fuzzer)
    target_link_options(fuzz_config PRIVATE -fsanitize=fuzzer)
    set(EQ_FUZZ_CONFIG_ARGS -runs=0)
  endif()
  add_test(NAME fuzz.config COMMAND fuzz_config ${EQ_FUZZ_CONFIG_ARGS}
    ${CMAKE_CURRENT_LIST_DIR}/../data/bad/config ${CMAKE_CURRENT_LIST_DIR}/corpus/config)
  set_tests_properties(fuzz.config PROPERTIES LABELS fuzz)
endif()
