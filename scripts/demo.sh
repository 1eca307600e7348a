#!/usr/bin/env bash
# The main job: sets up the machine, builds eqota, downloads a real Debian 12
# device package set in two versions (a handful of security updates apart),
# publishes both as signed releases with eqota-gen and shows what a device on
# the first release downloads to reach the second.
# Usage: scripts/demo.sh [OUT_DIR]     (default: out/demo, git-ignored)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/out/demo}

"$top/scripts/setup.sh" "$top/build"
"$top/scripts/fetch-debs.sh"
gen=$top/build/eqota-gen
cache=$top/.cache/debs

rm -rf "$out"
mkdir -p "$out"
cd "$out"
echo
echo "== keys: a demo signing key (never ship it)"
"$gen" keygen --out demo-release
B=(--repo repo --board qemux86-64 --channel stable)
echo
echo "== publish release 1 ($(ls "$cache/release1" | wc -l) packages)"
"$gen" publish "${B[@]}" --release 2026.12-1 --packages "$cache/release1" \
  --build-index "$cache/release1.index" --key demo-release.key --store equiv.db
echo
echo "== publish release 2: every package rebuilt (new taskhashes), a few really changed"
"$gen" publish "${B[@]}" --release 2026.12-2 --packages "$cache/release2" \
  --build-index "$cache/release2.index" --key demo-release.key --store equiv.db
echo
echo "== verify what a device will check"
"$gen" verify "${B[@]}" --key demo-release.pub --deep
echo
echo "== what a device on release 1 downloads for release 2"
"$gen" diff "${B[@]}" --from 2026.12-1 --to 2026.12-2 | grep -v '^equivalent' || true
echo "   (equivalent packages, rebuilt with identical output, are not listed: $("$gen" diff "${B[@]}" --from 2026.12-1 --to 2026.12-2 | grep -c '^equivalent'))"
echo
echo "repository: $out/repo (serve it with any static HTTP server)"
