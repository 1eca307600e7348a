# Unit tests of the repository walker and equiv import (gen_import.c).
if(TARGET eq_gen)
  eq_add_unit_test(test_gen_import SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gen_import.c LIBS eq_gen)
endif()
