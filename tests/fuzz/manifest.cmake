# The manifest, signature-file and trust-file parsers.
eq_add_fuzz_target(manifest LIBS eq_manifest)
# The root and timestamp documents of root mode.
eq_add_fuzz_target(trust LIBS eq_manifest)
# The trust store's decisions (issue 29): planted and damaged store files
# against a genuine repository, and sequences of roots and timestamps.
# Their inputs are lists of records or steps: longer than libFuzzer's
# first lengths, which grow slowly at a few executions per second: the
# harnesses cap the records and steps they read.
eq_add_fuzz_target(trust_store LIBS eq_manifest FUZZ_ARGS -max_len=512 -len_control=0)
eq_add_fuzz_target(trust_sequence LIBS eq_manifest FUZZ_ARGS -max_len=256 -len_control=0)
