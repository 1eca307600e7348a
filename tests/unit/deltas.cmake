# Creating method-1 (bsdiff-class) deltas is host-only (EQ_HOST_TOOLS):
# those cases run as unit.test_deltas.bsd and skip without it. The in-memory
# fallback of the reference images needs the test hooks (.hooks).
eq_add_unit_test(test_deltas SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_deltas.c LIBS eq_delta PkgConfig::ZLIB PkgConfig::ZSTD
  PARTS bsd test_bsd_failures,test_bsd_round_trip,test_bsd_limits hooks test_delta_no_scratch)
