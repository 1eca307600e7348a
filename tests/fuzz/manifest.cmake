# The manifest, signature-file and trust-file parsers.
eq_add_fuzz_target(manifest LIBS eq_manifest)
# The root and timestamp documents of root mode.
eq_add_fuzz_target(trust LIBS eq_manifest)
