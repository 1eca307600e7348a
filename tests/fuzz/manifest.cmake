# The manifest, signature-file and trust-file parsers.
eq_add_fuzz_target(manifest LIBS eq_manifest)
