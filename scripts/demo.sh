#!/usr/bin/env bash
# The main job: sets up the machine, builds eqota, downloads a real Debian 12
# device package set in two versions (a handful of security updates apart),
# builds a Debian 12 image of each with mmdebstrap, publishes image 1 with
# its packages with eqota-gen (image mode), serves the repository with
# lighttpd on loopback, provisions a simulated device (two dir slots, a file
# bootloader) with it and compares the slot with the image, gives the device
# an identity of its own, publishes image 2, updates the device, reboots it
# (boot script emulator), confirms the new slot, compares it with image 2
# and reports what it cost. Runs as root (the images hold files of several
# owners and device nodes).
# Usage: scripts/demo.sh [OUT_DIR]     (default: out/demo, git-ignored)
# With EQ_HASHSERV=HOST:PORT (or unix://PATH) the equivalence store is that
# bitbake-hashserv instead of the embedded SQLite file out/demo/equiv.db.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/out/demo}

if [ "$(id -u)" -ne 0 ]; then
  echo "demo: run it as root (sudo $0): the images hold files of several owners and device nodes" >&2
  exit 1
fi
t_demo=$SECONDS
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
"$top/scripts/setup.sh" --demo --no-build
"$top/scripts/fetch-debs.sh"
# The images are built (mmdebstrap: dpkg and the disk more than a core)
# while eqota compiles.
"$top/tests/tools/mkimages.sh" "$top/.cache" demo >"$out/mkimages.log" 2>&1 &
mkimages=$!
trap 'kill $mkimages 2>/dev/null || true' EXIT
"$top/scripts/setup.sh" --demo "$top/build"
gen=$top/build/eqota-gen
eqota=$top/build/agent/eqota
simboot=$top/build/tests/eq-simboot
imgs=$top/.cache/images-demo
. "$top/tests/integration/lib/httpd.sh"
# shellcheck source=/dev/null
. "$top/tests/integration/lib/simdevice.sh"

cd "$out"
trap httpd_stop EXIT
step() { printf '\n== %s\n' "$*"; }
if [ -n "${EQ_HASHSERV:-}" ]; then
  EQUIV=(--hashserv "$EQ_HASHSERV")
  echo "equivalence store: the bitbake-hashserv at $EQ_HASHSERV"
else
  EQUIV=(--store equiv.db)
fi

step "two Debian 12 images (mmdebstrap): the package set of each release plus what Debian needs to install it"
wait $mkimages || { cat mkimages.log; echo "demo: building the images failed (tests/tools/mkimages.sh)" >&2; exit 1; }
sed -n '/^r1.tar/,$p' mkimages.log
# Every package is rebuilt for release 2 (a new taskhash each, as after a
# toolchain update); the build index says so. The equivalence store finds
# which came out identical.
for n in 1 2; do
  for deb in "$imgs/r$n-debs"/*.deb; do
    id=$(dpkg-deb --show --showformat='${Package}/${Version}' "$deb")
    echo "${id%%/*} $(printf 'demo-build-%s/%s' "$n" "$id" | sha256sum | cut -d' ' -f1)"
  done >"r$n.index"
done

step "demo keys (never ship them): an offline root key, a release key, a timestamp key"
for k in demo-root demo-release demo-timestamp; do "$gen" keygen --out "$k"; done
B=(--repo repo --board qemux86-64 --channel stable)
"$gen" root init --repo repo --key demo-root.key --root-pub demo-root.pub --release-pub demo-release.pub \
  --timestamp-pub demo-timestamp.pub
# The publisher pins the root it just made, outside the repository: every
# signing command checks the repository's root against this copy.
cp repo/root/1.root.json demo-pinned.root.json
step "publish release 1: image 1 with its $(ls "$imgs/r1-debs" | wc -l) packages (image mode)"
"$gen" publish "${B[@]}" --release 2026.12-1 --packages "$imgs/r1-debs" --image "$imgs/r1.tar" --image-devices \
  --build-index r1.index --key demo-release.key --timestamp-key demo-timestamp.key \
  --trusted-root demo-pinned.root.json "${EQUIV[@]}"

step "serve the repository with lighttpd on loopback"
httpd_start "$out/repo" "$out/httpd"
echo "$HTTPD_URL (access log: $HTTPD_ACCESS_LOG)"

step "a simulated device: slots A and B, a file bootloader, root 1 in its image, provisioned with release 1"
dev=$out/device
mkdir -p "$out/image"
cp repo/root/1.root.json repo/root/1.root.json.sig "$out/image/"
# The device's own identity survives updates: [persist] in its configuration
# (an image with an ssh server adds its host keys: docs/configuration.md).
persist="/etc/machine-id"
simdevice_make "$dev" "$HTTPD_URL" qemux86-64 "$out/image/1.root.json" health.check=/bin/true health.timeout=60 \
  "persist.paths=$persist"
# A simulated reboot needs a new kernel boot id, or the agent (rightly) says
# "not rebooted yet" and confirms nothing: the build setup.sh makes reads it
# from this file (EQ_TEST_BOOT_ID_FILE, a test hook; a real reboot has one).
export EQ_TEST_BOOT_ID_FILE=$dev/boot_id
boot() { cat /proc/sys/kernel/random/uuid > "$dev/boot_id"; "$simboot" --env "$dev/bootenv" --cmdline "$dev/cmdline"; }
"$eqota" --config "$dev/eqota.conf" provision --slot A
# compare IMAGE SLOT [--persist PATH]: tests/tools/imgcmp.py shares no code with eqota
compare() {
  local img=$1 slot=$2
  shift 2
  python3 "$top/tests/tools/imgcmp.py" "$img" "$slot" "$@" >compare.txt ||
    { cat compare.txt; echo "demo: $slot differs from $img" >&2; exit 1; }
  echo "$slot against $img: $(tail -1 compare.txt)"
}
compare "$imgs/r1.tar" "$dev/A"
echo "boot: slot $(boot)"
# First boot: the device makes its own machine id, as systemd does.
tr -d - </proc/sys/kernel/random/uuid >"$dev/A/etc/machine-id"
echo "the device's own machine id: $(cat "$dev/A/etc/machine-id")"

step "publish release 2: image 2, every package rebuilt (new taskhashes), a few really changed"
"$gen" publish "${B[@]}" --release 2026.12-2 --packages "$imgs/r2-debs" --image "$imgs/r2.tar" --image-devices \
  --build-index r2.index --key demo-release.key --timestamp-key demo-timestamp.key \
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
compare "$imgs/r2.tar" "$dev/B" --persist etc/machine-id
[ "$(cat "$dev/B/etc/machine-id")" = "$(cat "$dev/A/etc/machine-id")" ] ||
  { echo "demo: slot B lost the device's machine id" >&2; exit 1; }
echo "slot B keeps the device's own machine id: $(cat "$dev/B/etc/machine-id")"

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
    if p["state"] in ("changed", "added") and not p["component"]:
        how = "delta" if p["delta"] else "full object"
        print(f"  {p['name']:<14} {p.get('old_version', '-')} -> {p['new_version']}: {p['bytes']} bytes ({how})")
c = t["components"]
print(f"image components (what no package ships: accounts, enabled services, edited files, dpkg's "
      f"database, ...): {c['kept']} kept, {c['changed']} changed, {c['added']} added, {c['removed']} removed")
for p in d["packages"]:
    if p["state"] in ("changed", "added") and p["component"]:
        how = "delta" if p["delta"] else "full object"
        print(f"  {p['name']:<22} {p['bytes']} bytes ({how})")
share = 100.0 * t["component_bytes"] / t["package_bytes"] if t["package_bytes"] else 0.0
print(f"downloaded: {fetched} bytes in {requests} requests, predicted {t['download_bytes']}: "
      f"packages {t['package_bytes']}, image components {t['component_bytes']} (they add {share:.1f} % "
      f"to the packages' bytes); the full release is {t['full_bytes']} bytes: {100.0 * fetched / t['full_bytes']:.2f} %")
print(f"update time (check, download, build slot B, switch): {secs:.1f} s")
PY
echo
echo "repository: $out/repo   device: $dev   demo took $((SECONDS - t_demo)) s"
