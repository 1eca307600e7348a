#!/usr/bin/env bash
# Publish time as a channel's history grows: one release of N unchanged
# tarball packages (1-5 KB each) republished R times under new names, as an
# operator does before each expiry. At a few release counts it prints the
# time of the next republish with the release history summary
# (boards/<b>/<c>/publisher-history), and with the summary removed, which
# makes publish read every old manifest as it did before the summary
# existed (each of those runs writes the summary again).
# Usage: bench/history.sh [BUILD_DIR] [N] [R]   (default: build 1000 40)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
n=${2:-1000} rounds=${3:-40}
gen=$build/eqota-gen
[ -x "$gen" ] || { echo "build first: $gen missing" >&2; exit 1; }
w=$(mktemp -d /tmp/eq-bench-history.XXXXXX)
trap 'rm -rf "$w"' EXIT
cd "$w"
python3 - pkgs "$n" <<'PY'
import io, os, random, sys, tarfile
out, n = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)
for i in range(n):
    rng = random.Random(1000003 + i)
    body = rng.randbytes(rng.randint(1000, 5000))
    name = "pkg%05d" % i
    with tarfile.open(os.path.join(out, "%s_1.tar" % name), "w", format=tarfile.PAX_FORMAT) as t:
        ti = tarfile.TarInfo("usr/share/%s/data" % name); ti.mode, ti.size = 0o644, len(body)
        t.addfile(ti, io.BytesIO(body))
PY
for k in R K T; do "$gen" keygen --out "$k" >/dev/null; done
"$gen" root init --repo repo --key R.key --root-pub R.pub --release-pub K.pub --timestamp-pub T.pub >/dev/null
cp repo/root/1.root.json pinned.root.json # the publisher's pin, outside the repository
P=(--repo repo --board sb --channel stable --key K.key --timestamp-key T.key --store s.db --level 3
   --cache "$w/inputs.db" --trusted-root pinned.root.json)
# The input cache skips files changed in the last 2 s.
sleep 3
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
printf '%9s %14s %16s\n' releases "summary (ms)" "no summary (ms)"
count=0
for i in $(seq 1 "$rounds"); do
	"$gen" -q publish "${P[@]}" --release "r$i" --packages pkgs >/dev/null
	count=$((count + 1))
	case $i in 1 | 5 | 10 | 20 | 40 | 80 | 160)
		a=$(ms "$gen" -q publish "${P[@]}" --release "r$i-a" --packages pkgs)
		rm repo/boards/sb/stable/publisher-history
		b=$(ms "$gen" -q publish "${P[@]}" --release "r$i-b" --packages pkgs)
		printf '%9d %14d %16d\n' "$count" "$a" "$((b))"
		count=$((count + 2))
		;;
	esac
done
echo "(releases: published before the timed one; $n packages, unchanged; one run each)"
