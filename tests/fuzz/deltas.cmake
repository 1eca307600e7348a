# The delta decoders (both methods) and the executable filter.
eq_add_fuzz_target(delta LIBS eq_delta)
# The delta decoders past the header: the harness writes a valid header for
# its own reference, so mutated bodies reach zstd and bsdiff-class decoding.
# Also replays the whole deltas of tests/data/bad/delta.
eq_add_fuzz_target(delta_body LIBS eq_delta CORPORA ${CMAKE_CURRENT_SOURCE_DIR}/data/bad/delta)
# Puffing and huffing gzip members, and payload expansion (deflate-aware
# deltas): round trips must be exact, untrusted puffed data must fail cleanly.
eq_add_fuzz_target(gz_puff LIBS eq_delta)
