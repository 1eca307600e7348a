# The slot records (agent/records.c), read to decide what leaves a slot.
eq_add_fuzz_target(records LIBS eq_agent)
# The state file (eq_state_load), rewritten at every phase change; also
# replays the damaged state files of tests/data/bad/state.
eq_add_fuzz_target(state LIBS eq_agent)
# The fetcher's response-header lines and validators file
# (agent/http_header.c): what a server, or anything between it and the
# device, can send before a byte of the body.
eq_add_fuzz_target(http_header LIBS eq_agent)
# The report queue (agent/report.c): hostile names and files in the queue
# folder (symlinks out, FIFOs, folders, numbers past 2^62) never read
# outside it, never block, keep it bounded.
eq_add_fuzz_target(report_queue LIBS eq_agent)
# The manifest-delta glue (agent/manifest_unpack.c): a cached manifest, a
# delta or compressed manifest and the hash the timestamp names; a result
# is accepted only when it hashes to that.
eq_add_fuzz_target(manifest_delta LIBS eq_agent)
