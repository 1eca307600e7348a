if(TARGET eqota-gen)
  add_test(NAME integration.gen_publish
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_publish.sh $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  # Every command refuses every option it does not take (issue 30: publish --dry-run published).
  add_test(NAME integration.gen_options
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_options.sh $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.gen_options PROPERTIES LABELS integration TIMEOUT 900 SKIP_RETURN_CODE 77)
  add_test(NAME integration.gen_qa
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_qa.sh $<TARGET_FILE:eqota-gen>)
  set_tests_properties(integration.gen_publish integration.gen_qa PROPERTIES LABELS integration TIMEOUT 900
    ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR}")
  # publish -j and the input cache (issue 15).
  add_test(NAME integration.gen_cache
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_cache.sh $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.gen_cache PROPERTIES LABELS integration TIMEOUT 600
    ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR}")
  # Packages every device would refuse, built at test time (issue 12).
  add_test(NAME integration.gen_refuse
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_refuse.sh $<TARGET_FILE:eqota-gen>)
  set_tests_properties(integration.gen_refuse PROPERTIES LABELS integration TIMEOUT 300)
  # A board or channel that is not a name makes no path (repository layout, issue 30).
  add_test(NAME integration.gen_layout_names
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_layout_names.sh $<TARGET_FILE:eqota-gen>)
  set_tests_properties(integration.gen_layout_names PROPERTIES LABELS integration TIMEOUT 120)
  # manifest.json.zst: frames, their reuse by a republish, a damaged previous file.
  if(EQ_TEST_HOOKS)
    set(companion_hooks 1)
  else()
    set(companion_hooks 0)
  endif()
  add_test(NAME integration.gen_companions
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_companions.sh $<TARGET_FILE:eqota-gen> $<TARGET_FILE:eq-delta>
      ${companion_hooks})
  set_tests_properties(integration.gen_companions PROPERTIES LABELS integration TIMEOUT 600)
  # eqota-gen prune (issue 16).
  add_test(NAME integration.gen_prune COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_prune.sh $<TARGET_FILE:eqota-gen>)
  set_tests_properties(integration.gen_prune PROPERTIES LABELS integration TIMEOUT 300)
  # No writer follows a symbolic link out of the repository (issue 29).
  add_test(NAME integration.gen_repo_symlinks
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_repo_symlinks.sh $<TARGET_FILE:eqota-gen>)
  set_tests_properties(integration.gen_repo_symlinks PROPERTIES LABELS integration TIMEOUT 300)
  # Nothing found in the repository is signed unchecked (issue 29).
  add_test(NAME integration.gen_repo_planted
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_repo_planted.sh $<TARGET_FILE:eqota-gen> $<TARGET_FILE:eq-delta>)
  set_tests_properties(integration.gen_repo_planted PROPERTIES LABELS integration TIMEOUT 300)
  # The fleet page in a real headless browser (Debian's chromium).
  add_test(NAME integration.fleet_html COMMAND ${CMAKE_CURRENT_LIST_DIR}/fleet_html.sh $<TARGET_FILE:eqota-gen>
    ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.fleet_html PROPERTIES LABELS integration TIMEOUT 300 SKIP_RETURN_CODE 77)
  # Forged fleet reports against the real collector behind TLS with client
  # certificates (issue 29, finding 4).
  add_test(NAME integration.fleet_forgery COMMAND ${CMAKE_CURRENT_LIST_DIR}/fleet_forgery.sh $<TARGET_FILE:eqota-gen>
    $<TARGET_FILE:eqota-report> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.fleet_forgery PROPERTIES LABELS integration TIMEOUT 300)
  # The image components' part of the download in the fleet summary, over
  # reports with and without "component_bytes" (issue 31).
  add_test(NAME integration.fleet_components COMMAND ${CMAKE_CURRENT_LIST_DIR}/fleet_components.sh
    $<TARGET_FILE:eqota-gen> $<TARGET_FILE:eqota-report> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.fleet_components PROPERTIES LABELS integration TIMEOUT 300 SKIP_RETURN_CODE 77)
  # Root of trust, rotation, revocation and timestamps on the publisher's side.
  add_test(NAME integration.gen_trust
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_trust.sh $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.gen_trust PROPERTIES LABELS integration TIMEOUT 300)
  # A root planted in the repository: signing starts from the pinned root (issue 29, finding 3).
  add_test(NAME integration.gen_planted_root
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen_planted_root.sh $<TARGET_FILE:eqota-gen> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.gen_planted_root PROPERTIES LABELS integration TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
