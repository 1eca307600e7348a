# The payload reader, safe extract and canonical round trip.
eq_add_fuzz_target(payload LIBS eq_delta)
