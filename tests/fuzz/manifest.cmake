# Fuzz target for the manifest, signature-file and trust-file parsers.
# Without EQ_FUZZ it links a replay main and runs the corpora as a ctest.
add_executable(fuzz_manifest ${CMAKE_CURRENT_LIST_DIR}/fuzz_manifest.c)
if(NOT EQ_FUZZ)
  target_sources(fuzz_manifest PRIVATE ${CMAKE_CURRENT_LIST_DIR}/replay_main.c)
endif()
eq_target_defaults(fuzz_manifest)
target_link_libraries(fuzz_manifest PRIVATE eq_manifest eq_base)
set(EQ_FUZZ_MANIFEST_ARGS)
if(EQ_FUZZ)
  target_compile_definitions(fuzz_manifest PRIVATE EQ_LIBFUZZER=1)
  target_compile_options(fuzz_manifest PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_manifest PRIVATE -fsanitize=fuzzer)
  set(EQ_FUZZ_MANIFEST_ARGS -runs=0)
endif()
add_test(NAME fuzz.manifest COMMAND fuzz_manifest ${EQ_FUZZ_MANIFEST_ARGS}
  ${PROJECT_SOURCE_DIR}/tests/data/bad/manifest ${CMAKE_CURRENT_LIST_DIR}/corpus/manifest)
set_tests_properties(fuzz.manifest PROPERTIES LABELS fuzz)
