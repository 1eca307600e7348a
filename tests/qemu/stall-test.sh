#!/usr/bin/env bash
# qemu.harness.stall: a boot whose guest kernel reports a hung task is
# stopped at once and fails with a message naming the stall (qstalled in
# lib/harness.sh); a clean console is left running. Boots nothing: a
# sleeping process stands in for QEMU.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
# harness.sh reads these when it is sourced.
board=qemux86-64 bwork=$w gen=true agent=true
# shellcheck source=tests/qemu/lib/harness.sh
. "$top/tests/qemu/lib/harness.sh"
bad=0 said=''
fail() { said="$*"; }
log=$w/boot.log name=boot
# A clean console: the stand-in keeps running and nothing fails.
echo '[    1.0] systemd[1]: Started eqota.service' >"$log"
sleep 60 &
pid=$!
if qstalled "$pid" || ! kill -0 "$pid" 2>/dev/null || [ -n "$said" ]; then
	echo "FAIL: a clean console counted as a stall (${said:-the process was stopped})"; bad=1
else
	echo "PASS: a clean console is left running"
fi
# The kernel's hung-task report: stopped, failed, and the message says why.
echo '[  242.8] INFO: task kworker/u2:1:24 blocked for more than 120 seconds.' >>"$log"
if qstalled "$pid" && [ "$qstall" = 1 ]; then
	wait "$pid" 2>/dev/null || true
	if kill -0 "$pid" 2>/dev/null; then
		echo "FAIL: the stalled boot's process still runs"; bad=1
	elif [[ "$said" == *"the guest's I/O stalled"*"blocked for more than 120 seconds"* ]]; then
		echo "PASS: a hung-task report stops the boot and fails it: $said"
	else
		echo "FAIL: the stall's message was '$said'"; bad=1
	fi
else
	echo "FAIL: a hung-task report was not taken for a stall"; bad=1
	kill "$pid" 2>/dev/null || true
fi
exit $bad
