# The publisher's path owners file (eqota-gen publish --path-owners), its
# rules applied to a payload and checked (gen_conflict.c).
if(TARGET eq_gen)
  eq_add_fuzz_target(path_owners LIBS eq_gen)
endif()
