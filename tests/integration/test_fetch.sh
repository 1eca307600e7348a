#!/usr/bin/env bash
# Runs the fetch integration test: starts lighttpd (lib/httpd.sh) and one
# badhttp.py per fault mode on 127.0.0.1, hands their ports to the cmocka
# driver test_fetch, and stops every server it started by PID.
# Usage: test_fetch.sh PATH/TO/test_fetch
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
driver=$1
# shellcheck source=lib/httpd.sh
. "$here/lib/httpd.sh"

work=$(mktemp -d /tmp/eqfetch-XXXXXX)
bad_pids=()
cleanup() {
	local rc=$?
	for p in "${bad_pids[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	httpd_stop
	if [ "$rc" -eq 0 ]; then
		rm -rf "$work"
	else
		echo "test_fetch.sh: failed, kept $work" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
mkdir -p "$work/www" "$work/log"
httpd_start "$work/www" "$work/log"

# start_bad MODE: starts badhttp.py in MODE and exports EQ_BAD_<MODE>_PORT.
start_bad() {
	local mode=$1 var port pid
	var="EQ_BAD_$(echo "$mode" | tr 'a-z-' 'A-Z_')_PORT"
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		port=$(httpd_free_port)
		python3 "$here/lib/badhttp.py" "$mode" "$port" "$work/www" --lifetime 110 --max-requests 200 \
			--log "$work/log/bad-$mode.log" &
		pid=$!
		if httpd_wait_port_ "$port" "$pid"; then
			bad_pids+=("$pid")
			export "$var=$port"
			return 0
		fi
		wait "$pid" 2>/dev/null || true
	done
	echo "test_fetch.sh: badhttp.py $mode did not start" >&2
	return 1
}
for m in truncate more slow flaky ignore-range; do
	start_bad "$m"
done

export EQ_WWW="$work/www" EQ_WORK="$work" EQ_LOG_DIR="$work/log"
"$driver"
