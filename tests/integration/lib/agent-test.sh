# shellcheck shell=bash
# The opening the agent's script tests share. A test starts with
#   set -Eeuo pipefail
#   . "$4/tests/integration/lib/agent-test.sh" NAME "$@"
# where its arguments are EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR. This sets
# $eqota $gen $simboot $src, loads the test libraries, makes the work
# folder $w and moves into it, and at exit stops the PIDs the test put in
# bg[], the web server, and removes $w. A failing command is named with
# its line.
agent_test_name=$1
# gen and simboot are for the scripts that source this file
# shellcheck disable=SC2034
eqota=$2 gen=$3 simboot=$4 src=$5
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
. "$src/tests/integration/lib/tarpkg.sh"
. "$src/tests/integration/lib/check.sh"
w=$(mktemp -d "/tmp/eq-$agent_test_name.XXXXXX")
bg=()
agent_test_cleanup() {
	local p
	for p in "${bg[@]}"; do kill "$p" 2>/dev/null || true; done
	httpd_stop || true
	rm -rf "$w"
}
trap agent_test_cleanup EXIT
trap 'echo "$agent_test_name.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$w" || exit 1
