# Image mode end to end (issue 31): two real mmdebstrap images published with
# their .debs, a simulated device provisioned with r1 and updated to r2, each
# slot compared with its image by tests/tools/imgcmp.py (0 differences), the
# device's machine id and host key kept (tests/integration/agent_image.sh).
# The first run builds the images (tests/tools/mkimages.sh, a few minutes),
# so the test is costed to start first. Skips visibly without root or when
# the images cannot be built.
if(EQ_SANITIZE)
  # The image code runs under the sanitizers in unit.test_install's image
  # cases; the 480 MB pair would add about a quarter of an hour there.
  eq_add_skipped_test(integration.agent_image integration
    "runs in the build without sanitizers: the image pair is too slow under ${EQ_SANITIZE}; unit.test_install covers image releases here")
else()
  eq_agent_script_test(agent_image 1800 "${_reboots}" ENVIRONMENT "EQ_CACHE_DIR=${EQ_CACHE_DIR}")
  if(TEST integration.agent_image)
    set_tests_properties(integration.agent_image PROPERTIES SKIP_RETURN_CODE 77 COST 10000)
  endif()
endif()
