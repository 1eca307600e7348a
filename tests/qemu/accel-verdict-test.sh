#!/usr/bin/env bash
# qemu.harness.accel_verdict: the accel scenario's KVM step (kvm_verdict in
# scenarios.sh) fails when KVM was claimed usable and the board's boot then
# fell back to TCG, or when the probe denied a KVM that ran the boot; it
# only informs when there is no KVM. Boots nothing.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/integration/lib/check.sh
. "$top/tests/integration/lib/check.sh"
# shellcheck source=tests/qemu/scenarios.sh
. "$top/tests/qemu/scenarios.sh"
checks=0
verdict() { # WANT(pass|fail|info) PICKED FORCED FELL_BACK
	local want=$1 got o f0=$fails
	shift
	o=$(fails=0; kvm_verdict "$1" "$2" "$3" "QEMU said no" "-accel kvm"; echo "fails=$fails")
	case $o in
	FAIL:*) got=fail ;;
	PASS:*) got=pass ;;
	info:*) got=info ;;
	*) got="?" ;;
	esac
	fails=$f0
	checks=$((checks + 1))
	if [ "$got" = "$want" ]; then pass "picked=$1 forced=${2:-0} fell_back=$3: $want"; else fail "picked=$1 forced=${2:-0} fell_back=$3: $got, expected $want ($o)"; fi
}
verdict fail kvm "" 1  # the probe said KVM works; the boot under it failed
verdict fail kvm 1 1   # EQ_QEMU_ACCEL=kvm, and the boot under KVM failed
verdict pass kvm "" 0  # the probe said KVM works and it did
verdict info tcg "" 1  # no KVM here, and the boot under KVM failed
verdict info tcg 1 0   # EQ_QEMU_ACCEL=tcg on a host whose KVM works
verdict fail tcg "" 0  # the probe denied a KVM that ran the boot
echo "$checks verdicts checked"
[ "$fails" -eq 0 ]
