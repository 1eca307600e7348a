# The delta decoders (both methods) and the executable filter.
eq_add_fuzz_target(delta LIBS eq_delta)
