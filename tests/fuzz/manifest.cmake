# The manifest, signature-file and trust-file parsers.
eq_add_fuzz_target(manifest LIBS eq_manifest)
# The root and timestamp documents of root mode.
eq_add_fuzz_target(trust LIBS eq_manifest)
# The trust store's decisions (issue 29): planted and damaged store files
# against a genuine repository, and sequences of roots and timestamps.
eq_add_fuzz_target(trust_store LIBS eq_manifest)
eq_add_fuzz_target(trust_sequence LIBS eq_manifest)
