# shellcheck shell=bash
# hashserv.sh: the real bitbake-hashserv for interop tests.
#
# Source it, then:
#   need_bitbake             exits 77 (CTest's skip) unless EQ_BITBAKE_DIR
#                            holds an openembedded/bitbake tree
#   hashserv_start DB [ARG...]   starts bitbake-hashserv on 127.0.0.1 with a
#                            port the kernel picks, database DB and extra
#                            arguments; sets HS_ADDR (HOST:PORT) and HS_PID
#   hashserv_stop            stops the server started last (by its PID)
# Servers still running when the shell exits are stopped by hashserv_cleanup,
# which the sourcing script calls from its EXIT trap.

HS_PIDS=()

need_bitbake() {
	if [ -z "${EQ_BITBAKE_DIR:-}" ] || [ ! -x "$EQ_BITBAKE_DIR/bin/bitbake-hashserv" ]; then
		echo "SKIP: set EQ_BITBAKE_DIR to an openembedded/bitbake tree (see docs/yocto.md)"
		exit 77
	fi
	HS_PY=${EQ_PYTHON:-/usr/bin/python3}
}

hashserv_start() {
	local db=$1 log
	shift
	log=$(mktemp "${TMPDIR:-/tmp}/hashserv.XXXXXX")
	PYTHONUNBUFFERED=1 "$HS_PY" "$EQ_BITBAKE_DIR/bin/bitbake-hashserv" --bind 127.0.0.1:0 --database "$db" \
		--log DEBUG "$@" >"$log" 2>&1 &
	HS_PID=$!
	HS_PIDS+=("$HS_PID")
	local port=
	for _ in $(seq 1 200); do
		port=$(sed -n "s/^Listening on ('127.0.0.1', \([0-9]*\)).*/\1/p" "$log")
		[ -n "$port" ] && break
		kill -0 "$HS_PID" 2>/dev/null || break
		sleep 0.05
	done
	if [ -z "$port" ]; then
		echo "FAIL: bitbake-hashserv did not start:" >&2
		cat "$log" >&2
		rm -f "$log"
		return 1
	fi
	# The server keeps logging (at debug level, the only one that names the
	# port) into the unlinked file.
	rm -f "$log"
	# shellcheck disable=SC2034 # read by the scripts that source this file
	HS_ADDR=127.0.0.1:$port
}

hashserv_stop() {
	kill "$HS_PID" 2>/dev/null || true
	wait "$HS_PID" 2>/dev/null || true
}

hashserv_cleanup() {
	local p
	for p in "${HS_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}
