# The publisher's package reader (.deb, .ipk, .rpm, tarballs). libarchive
# allocates what a cpio header declares (2.8 GB for the 401-byte
# tests/fuzz/findings/gen_package-rpm-cpio-huge-alloc), more than
# libFuzzer's default 2 GB malloc limit; the allocation is virtual and the
# read then fails, so the limit is raised to keep fuzzing past it.
if(TARGET eq_gen)
  eq_add_fuzz_target(gen_package LIBS eq_gen FUZZ_ARGS -malloc_limit_mb=4096)
endif()
