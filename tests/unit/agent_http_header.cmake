# The fetcher's header parsing (agent/http_header.c): response header lines
# and the validators file, with hostile lines (NULs, no CRLF, overflowing
# numbers, oversize values, redirect chains).
eq_add_unit_test(test_http_header SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_http_header.c LIBS eq_agent)
