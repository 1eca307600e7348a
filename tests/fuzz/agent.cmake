# The slot records (agent/records.c), read to decide what leaves a slot.
eq_add_fuzz_target(records LIBS eq_agent)
# The state file (eq_state_load), rewritten at every phase change; also
# replays the damaged state files of tests/data/bad/state.
eq_add_fuzz_target(state LIBS eq_agent)
# The fetcher's response-header lines and validators file
# (agent/http_header.c): what a server, or anything between it and the
# device, can send before a byte of the body.
eq_add_fuzz_target(http_header LIBS eq_agent)
