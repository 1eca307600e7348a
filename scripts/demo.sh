#!/usr/bin/env bash
# The main job: sets up the machine, builds eqota, downloads a real Debian 12
# device package set in two versions (a handful of security updates apart),
# publishes release 1 with eqota-gen, serves the repository with lighttpd on
# loopback, provisions a simulated device (two dir slots, a file bootloader)
# with release 1, publishes release 2, updates the device, reboots it (boot
# script emulator), confirms the new slot and reports what it cost.
# Usage: scripts/demo.sh [OUT_DIR]     (default: out/demo, git-ignored)
# With EQ_HASHSERV=HOST:PORT (or unix://PATH) the equivalence store is that
# bitbake-hashserv instead of the embedded SQLite file out/demo/equiv.db.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/out/demo}

"$top/scripts/setup.sh" "$top/build"
"$top/scripts/fetch-debs.sh"
gen=$top/build/eqota-gen
eqota=$top/build/agent/eqota
simboot=$top/build/tests/eq-simboot
cache=$top/.cache/debs
. "$top/tests/integration/lib/httpd.sh"
# shellcheck source=/dev/null
. "$top/tests/integration/lib/simdevice.sh"

rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$out"
trap httpd_stop EXIT
step() { printf '\n== %s\n' "$*"; }
if [ -n "${EQ_HASHSERV:-}" ]; then
  EQUIV=(--hashserv "$EQ_HASHSERV")
  echo "equivalence store: the bitbake-hashserv at $EQ_HASHSERV"
else
  EQUIV=(--store equiv.db)
fi

step "demo keys (never ship them): an offline root key, a release key, a timestamp key"
for k in demo-root demo-release demo-timestamp; do "$gen" keygen --out "$k"; done
B=(--repo repo --board qemux86-64 --channel stable)
"$gen" root init --repo repo --key demo-root.key --root-pub demo-root.pub --release-pub demo-release.pub \
  --timestamp-pub demo-timestamp.pub
# The publisher pins the root it just made, outside the repository: every
# signing command checks the repository's root against this copy.
cp repo/root/1.root.json demo-pinned.root.json
step "publish release 1 ($(ls "$cache/release1" | wc -l) packages)"
"$gen" publish "${B[@]}" --release 2026.12-1 --packages "$cache/release1" \
  --build-index "$cache/release1.index" --key demo-release.key --timestamp-key demo-timestamp.key \
  --trusted-root demo-pinned.root.json "${EQUIV[@]}"

step "serve the repository with lighttpd on loopback"
httpd_start "$out/repo" "$out/httpd"
echo "$HTTPD_URL (access log: $HTTPD_ACCESS_LOG)"

step "a simulated device: slots A and B, a file bootloader, root 1 in its image, provisioned with release 1"
dev=$out/device
mkdir -p "$out/image"
cp repo/root/1.root.json repo/root/1.root.json.sig "$out/image/"
simdevice_make "$dev" "$HTTPD_URL" qemux86-64 "$out/image/1.root.json" health.check=/bin/true health.timeout=60
# A simulated reboot needs a new kernel boot id, or the agent (rightly) says
# "not rebooted yet" and confirms nothing: the build setup.sh makes reads it
# from this file (EQ_TEST_BOOT_ID_FILE, a test hook; a real reboot has one).
export EQ_TEST_BOOT_ID_FILE=$dev/boot_id
boot() { cat /proc/sys/kernel/random/uuid > "$dev/boot_id"; "$simboot" --env "$dev/bootenv" --cmdline "$dev/cmdline"; }
"$eqota" --config "$dev/eqota.conf" provision --slot A
echo "boot: slot $(boot)"

step "publish release 2: every package rebuilt (new taskhashes), a few really changed"
"$gen" publish "${B[@]}" --release 2026.12-2 --packages "$cache/release2" \
  --build-index "$cache/release2.index" --key demo-release.key --timestamp-key demo-timestamp.key \
  --trusted-root demo-pinned.root.json "${EQUIV[@]}"
"$gen" verify "${B[@]}" --root "$out/image/1.root.json" --deep

step "the device checks, updates, reboots into slot B and confirms it"
"$eqota" --config "$dev/eqota.conf" check
httpd_log_flush
: > "$HTTPD_ACCESS_LOG"
t0=$(date +%s.%N)
rc=0
"$eqota" --config "$dev/eqota.conf" update || rc=$?
t1=$(date +%s.%N)
[ $rc -eq 3 ] || { echo "demo: update ended with exit status $rc" >&2; exit 1; }
echo "boot: slot $(boot)"
"$eqota" --config "$dev/eqota.conf" mark-good
"$eqota" --config "$dev/eqota.conf" status

step "report"
httpd_log_flush
fetched=$(awk '$2 ~ /^\/(objects|deltas)\// {s += $4} END {print s + 0}' "$HTTPD_ACCESS_LOG")
requests=$(awk '$2 ~ /^\/(objects|deltas)\// {n++} END {print n + 0}' "$HTTPD_ACCESS_LOG")
"$gen" diff "${B[@]}" --from 2026.12-1 --to 2026.12-2 --json > diff.json
python3 - diff.json "$fetched" "$requests" "$t0" "$t1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["totals"]
fetched, requests = int(sys.argv[2]), int(sys.argv[3])
secs = float(sys.argv[5]) - float(sys.argv[4])
print(f"packages: {t['kept']} kept, {t['equivalent']} equivalent (rebuilt, identical output), "
      f"{t['changed']} changed, {t['added']} added, {t['removed']} removed")
for p in d["packages"]:
    if p["state"] in ("changed", "added"):
        how = "delta" if p["delta"] else "full object"
        print(f"  {p['name']:<14} {p.get('old_version', '-')} -> {p['new_version']}: {p['bytes']} bytes ({how})")
print(f"downloaded: {fetched} bytes in {requests} requests, predicted {t['download_bytes']}; "
      f"the full release is {t['full_bytes']} bytes: {100.0 * fetched / t['full_bytes']:.2f} %")
print(f"update time (check, download, build slot B, switch): {secs:.1f} s")
PY
echo
echo "repository: $out/repo   device: $dev"
