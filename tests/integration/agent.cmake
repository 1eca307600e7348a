# eq-simboot comes from tests/unit/bootloader.cmake, read after this file.
if(TARGET eqota AND TARGET eqota-gen AND TARGET eq_bootloader)
  # Fewer power cuts under the sanitizers, where every update is slower.
  if(EQ_SANITIZE)
    set(EQ_KILLS 10)
  else()
    set(EQ_KILLS 50)
  endif()
  add_test(NAME integration.agent_update
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_update.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
            $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.agent_update PROPERTIES LABELS integration TIMEOUT 1800
    ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR};EQ_KILL_COUNT=${EQ_KILLS}")
  add_test(NAME integration.agent_https
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_https.sh $<TARGET_FILE:eqota> $<TARGET_FILE:eqota-gen>
            $<TARGET_FILE:eq-simboot> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.agent_https PROPERTIES LABELS integration TIMEOUT 300)
endif()
