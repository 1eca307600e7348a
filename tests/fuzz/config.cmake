# The agent's config parser.
eq_add_fuzz_target(config LIBS eq_agent)
