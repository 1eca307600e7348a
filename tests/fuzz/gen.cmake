# The publisher's package reader (.deb, .ipk, .rpm, tarballs). libarchive
# allocates what a cpio header declares (2.8 GB for the 401-byte
# tests/fuzz/corpus/gen_package/rpm-cpio-huge-alloc); the harness makes
# ASan fail allocations over 1 GiB (see fuzz_gen_package.c), and libFuzzer's
# malloc limit stays above that so such an input is not reported as a leak
# of memory but read to its error.
if(TARGET eq_gen)
  eq_add_fuzz_target(gen_package LIBS eq_gen FUZZ_ARGS -malloc_limit_mb=4096)
endif()
# The bitbake-hashserv client (gen_hashserv.c): everything a server, or
# whatever answers at its address, sends on one connection.
eq_add_fuzz_target(hashserv LIBS eq_gen)
# The fleet summary's report reader (gen_fleet.c): a report file as a
# collector stored it, whatever devices sent.
eq_add_fuzz_target(fleet LIBS eq_gen)
# The collector's check of a POST body (eq_fleet_collect, what
# eqota-report.cgi runs): what it stores must read back as one report,
# counted under the verified identity only.
eq_add_fuzz_target(fleet_collect LIBS eq_gen)
