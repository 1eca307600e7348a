# The bitbake-hashserv client against scripted servers (the real server:
# tests/interop/).
if(TARGET eq_gen)
  eq_add_unit_test(test_hashserv SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_hashserv.c LIBS eq_gen)
endif()
