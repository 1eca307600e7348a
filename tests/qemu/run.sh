#!/usr/bin/env bash
# tests/qemu/run.sh: eqota end to end on a QEMU board. Builds what is
# missing (device packages, the two releases, the repository, the factory
# image), boots the factory image and runs one scenario, printing PASS/FAIL
# lines and keeping every boot's serial console log.
#
# Usage: tests/qemu/run.sh --board qemux86-64|qemuarm64 --scenario NAME [--work DIR]
#                          [--release1 DIR --release2 DIR]
#                          [--cuts N] [--seed S] [--try-attempts N]
#                          [--systemd]
#        tests/qemu/run.sh --board B --prepare-only [--systemd] [...]
#   scenarios: happy, unhealthy, hang, powercut, powercut-random, tampered,
#              daemon (the systemd image as it ships),
#              accel (docs/testing-in-ci.md)
#   --cuts, --seed, --try-attempts
#              powercut-random: the number of power cuts (default 10), the
#              seed of their instants (default: chosen and printed), and
#              the trial attempts of the device (default 2)
#   --systemd  also prepare the systemd images (lib/sdimage.sh); a scenario
#              with a version for them (unhealthy) runs that version. The
#              daemon scenario always boots them and prepares them itself
#   --work     where images, repository and logs go (default build-qemu/work)
#   --release1, --release2
#              your own release pair: folders of .deb files added to the
#              test device's release 1 and 2 (same name: yours replaces it)
# Environment:
#   EQ_GEN, EQ_AGENT   host eqota-gen and eqota (default: built into build-qemu/)
#   EQ_QEMU_ACCEL      kvm or tcg, skipping the probe (a boot that fails under
#                      KVM still falls back to TCG)
#   EQ_QEMU_KVM_ARGS   accelerator and CPU arguments for KVM instead of
#                      board.conf's EQ_BOARD_ACCEL_KVM
#   EQ_CACHE_DIR       downloads (default .cache)
#   EQ_QEMU_RELEASE1, EQ_QEMU_RELEASE2   as --release1, --release2
#   EQ_QEMU_CUTS, EQ_QEMU_SEED, EQ_QEMU_TRY_ATTEMPTS   as --cuts, --seed, --try-attempts
# Exit status: 0 passed, 1 a check failed, 2 usage, anything else a broken setup.
set -Eeuo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
board='' scenario='' work='' prepare_only=0 prepare_sd=0
usage() { sed -n '/^# Usage:/,/^# Exit/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--board) board=${2:-}; shift 2 ;;
	--scenario) scenario=${2:-}; shift 2 ;;
	--work) work=${2:-}; shift 2 ;;
	--prepare-only) prepare_only=1; shift ;;
	--systemd) prepare_sd=1; shift ;;
	--release1) EQ_QEMU_RELEASE1=${2:-}; shift 2 ;;
	--release2) EQ_QEMU_RELEASE2=${2:-}; shift 2 ;;
	--cuts) EQ_QEMU_CUTS=${2:-}; shift 2 ;;
	--seed) EQ_QEMU_SEED=${2:-}; shift 2 ;;
	--try-attempts) EQ_QEMU_TRY_ATTEMPTS=${2:-}; shift 2 ;;
	*) usage ;;
	esac
done
[ -n "$board" ] || usage
[ -f "$top/boards/$board/board.conf" ] || { echo "run.sh: no board '$board'" >&2; exit 2; }
[ $prepare_only = 1 ] || [ -n "$scenario" ] || usage
pc_ncuts=${EQ_QEMU_CUTS:-10} pc_seed=${EQ_QEMU_SEED:-$((RANDOM * 32768 + RANDOM))} pc_tries=${EQ_QEMU_TRY_ATTEMPTS:-2}
for v in "cuts:$pc_ncuts" "seed:$pc_seed" "try-attempts:$pc_tries"; do
	case "${v#*:}" in '' | *[!0-9]*) echo "run.sh: --${v%%:*} takes a number, not '${v#*:}'" >&2; exit 2 ;; esac
done
[ "$pc_tries" -ge 1 ] && [ "$pc_tries" -le 9 ] || { echo "run.sh: --try-attempts is 1..9" >&2; exit 2; }
user_rel1=${EQ_QEMU_RELEASE1:-} user_rel2=${EQ_QEMU_RELEASE2:-}
if [ -n "$user_rel1$user_rel2" ]; then
	for d in "$user_rel1" "$user_rel2"; do
		[ -n "$d" ] || { echo "run.sh: --release1 and --release2 go together" >&2; exit 2; }
		[ -d "$d" ] || { echo "run.sh: release folder '$d' does not exist" >&2; exit 2; }
	done
	user_rel1=$(cd "$user_rel1" && pwd) user_rel2=$(cd "$user_rel2" && pwd)
fi
work=${work:-$top/build-qemu/work}
mkdir -p "$work"
work=$(cd "$work" && pwd)
bwork=$work/$board

if [ -z "${EQ_GEN:-}" ] || [ -z "${EQ_AGENT:-}" ]; then
	cmake -S "$top" -B "$top/build-qemu" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEQ_BUILD_TESTS=OFF >/dev/null
	cmake --build "$top/build-qemu" -j"$(nproc)" --target eqota eqota-gen >/dev/null
	EQ_GEN=$top/build-qemu/eqota-gen EQ_AGENT=$top/build-qemu/agent/eqota
fi
gen=$EQ_GEN agent=$EQ_AGENT

# shellcheck source=lib/harness.sh
. "$top/tests/qemu/lib/harness.sh"
# shellcheck source=lib/sdimage.sh
. "$top/tests/qemu/lib/sdimage.sh"
# shellcheck source=scenarios.sh
. "$top/tests/qemu/scenarios.sh"

trap 'httpd_stop >/dev/null 2>&1 || true' EXIT
check_user_releases
prepare
# The daemon scenario always boots the systemd images; a scenario with a
# version for them runs that one with --systemd (scenario_NAME_sd).
fn=scenario_${scenario//-/_} on_sd=0
case " $sd_scenarios " in *" ${scenario:-none} "*) prepare_sd=1 on_sd=1 ;; esac
if [ $prepare_sd = 1 ] && declare -F "${fn}_sd" >/dev/null; then fn=${fn}_sd on_sd=1; fi
[ $prepare_sd = 0 ] || prepare_sd
[ $prepare_only = 0 ] || exit 0
declare -F "$fn" >/dev/null || { echo "run.sh: no scenario '$scenario'" >&2; exit 2; }

accel=$(accel_pick)
if [ -n "${EQ_QEMU_ACCEL:-}" ]; then
	hlog "accelerator: $accel (EQ_QEMU_ACCEL)"
elif [ "$accel" = tcg ]; then
	hlog "accelerator: tcg (no usable KVM)"
else
	hlog "accelerator: kvm ($(accel_args kvm))"
fi
sdir=$bwork/$scenario
rm -rf "$sdir"
mkdir -p "$sdir/logs"
disk=$sdir/disk.img
# The scenarios of the board as it ships boot its systemd image.
factory_img=$bwork/factory.img
[ $on_sd = 0 ] || factory_img=$sd/factory.img
cp --sparse=always "$factory_img" "$disk"
fails=0 checks=0
pass() { checks=$((checks + 1)); echo "PASS: $*"; }
# A failed check shows the end of the last boot's serial log, so a CI log
# says where the guest stood without the log files.
fail() {
	checks=$((checks + 1)) fails=$((fails + 1))
	echo "FAIL: $*"
	if [ -f "${qlast:-}" ]; then
		tr -d '\r' < "$qlast" | grep -a '^EQTEST \|^\[ *[0-9.]*\]' | tail -8 | cut -c1-160 | sed 's/^/    | /' || true
		# The first kernel errors: where a broken disk or driver began.
		tr -d '\r' < "$qlast" | grep -a '^\[ *[0-9.]*\]' | grep -a -m4 -i 'timeout\|I/O error\|EXT4-fs error\|Call Trace\|Out of memory\|segfault' |
			cut -c1-160 | sed 's/^/    first kernel errors | /' || true
	fi
}
t0=$SECONDS
"$fn"
rm -f "$disk"
echo "serial logs: $sdir"
[ "$qkvmfalls" = 0 ] || echo "boots that failed under KVM and ran again under TCG: $qkvmfalls (logs: $sdir/*.kvm.log)"
[ "$qresets" = 0 ] || echo "watchdog resets before eqota ran, booted again: $qresets (logs: $sdir/*.reset.log)"
if [ $fails -gt 0 ]; then
	echo "qemu.$board.$scenario: FAILED ($fails of $checks checks, $((SECONDS - t0)) s)"
	exit 1
fi
echo "qemu.$board.$scenario: passed ($checks checks, $((SECONDS - t0)) s)"
