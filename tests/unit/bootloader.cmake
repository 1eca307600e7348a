# eq_bootloader: unit tests, the bad-input corpus (tests/data/bad/bootloader)
# and eq-simboot, the boot script of simulated devices, which other tests
# reach as $<TARGET_FILE:eq-simboot>. Allocation failures need the test hooks
# (unit.test_bootloader.hooks).
eq_add_unit_test(test_bootloader SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_bootloader.c LIBS eq_bootloader
  LABELS unit bootloader PARTS hooks test_alloc_failures)

add_executable(eq-simboot ${PROJECT_SOURCE_DIR}/tests/tools/eq-simboot.c)
eq_target_defaults(eq-simboot)
target_link_libraries(eq-simboot PRIVATE eq_bootloader)

add_test(NAME unit.simboot COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/simboot.sh $<TARGET_FILE:eq-simboot>)
set_tests_properties(unit.simboot PROPERTIES LABELS "unit;bootloader")

# eq-blctl: any backend from shell tests (the board tests seed and check
# boot environments with it).
add_executable(eq-blctl ${PROJECT_SOURCE_DIR}/tests/tools/eq-blctl.c)
eq_target_defaults(eq-blctl)
target_link_libraries(eq-blctl PRIVATE eq_bootloader)
add_test(NAME unit.blctl COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/blctl.sh $<TARGET_FILE:eq-blctl>)
set_tests_properties(unit.blctl PROPERTIES LABELS "unit;bootloader")
