#!/usr/bin/env bash
# Publish time with the embedded store against a real bitbake-hashserv, on
# loopback and behind a proxy that adds latency, for the demo's 135-package
# Debian release and for a synthetic release of N tiny packages (where round
# trips, not compression, dominate). Prints a table.
# Usage: EQ_BITBAKE_DIR=/path/to/bitbake bench/hashserv-publish.sh [N] [DELAY_MS]
#   N         packages of the synthetic release (default 2000)
#   DELAY_MS  latency the proxy adds in each direction (default 5)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-2000}
delay=${2:-5}
gen=${EQOTA_GEN:-$top/build/eqota-gen}
cache=$top/.cache/debs
# shellcheck source=tests/interop/lib/hashserv.sh
. "$top/tests/interop/lib/hashserv.sh"
need_bitbake
[ -x "$gen" ] || { echo "build eqota first (scripts/setup.sh)" >&2; exit 1; }
[ -d "$cache/release1" ] || "$top/scripts/fetch-debs.sh" >/dev/null
w=$(mktemp -d)
proxy_pid=
trap '[ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null; hashserv_cleanup; rm -rf "$w"' EXIT
cd "$w"
"$gen" keygen --out k >/dev/null

# The synthetic release: N packages of one small file each.
/usr/bin/python3 - "$n" syn <<'PY'
import io, os, sys, tarfile
n, out = int(sys.argv[1]), sys.argv[2]
os.makedirs(out)
for i in range(n):
    name = "pkg%05d" % i
    body = ("%s\n" % name).encode() * 8
    with tarfile.open("%s/%s_1.0.tar" % (out, name), "w", format=tarfile.PAX_FORMAT) as t:
        f = tarfile.TarInfo("usr/share/%s/data" % name)
        f.mode, f.size = 0o644, len(body)
        t.addfile(f, io.BytesIO(body))
PY
# Two builds of each set: the second has new taskhashes and the same output
# (a rebuild), as in the demo.
for b in 1 2; do
  for f in syn/*.tar; do p=$(basename "$f" _1.0.tar); echo "$p $(printf 'b%s-%s' "$b" "$p" | sha256sum | cut -c1-64)"; done > "syn$b.index"
done

# One server per mode, so both start empty.
hashserv_start "$w/server-direct.db"
direct=$HS_ADDR
hashserv_start "$w/server-delayed.db"
/usr/bin/python3 "$top/tests/tools/latency_proxy.py" --listen 127.0.0.1:0 --to "$HS_ADDR" --delay-ms "$delay" \
  --port-file "$w/proxy.port" --max-seconds 3600 &
proxy_pid=$!
for _ in $(seq 1 100); do [ -s "$w/proxy.port" ] && break; sleep 0.05; done
delayed=127.0.0.1:$(cat "$w/proxy.port")

# run NAME RELEASE PACKAGES INDEX STORE-ARGS...: prints the seconds of one publish.
run() {
  local repo=$1 rel=$2 pk=$3 idx=$4; shift 4
  local t0 t1
  t0=$(date +%s.%N)
  "$gen" -q publish --repo "$repo" --board b --channel c --key k.key --level 3 --release "$rel" \
    --packages "$pk" --build-index "$idx" "$@" >/dev/null 2>>"$w/publish.log" ||
    { cat "$w/publish.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{printf "%.2f", $2 - $1}'
}

printf '%-34s %12s %12s %12s\n' "publish (seconds)" "local store" "hashserv" "+${delay} ms each way"
for set in demo syn; do
  if [ "$set" = demo ]; then
    p1=$cache/release1 i1=$cache/release1.index p2=$cache/release2 i2=$cache/release2.index
    label="demo, $(ls "$p1" | wc -l) .debs"
  else
    p1=syn i1=syn1.index p2=syn i2=syn2.index
    label="synthetic, $n packages"
  fi
  declare -A t=()
  for mode in local direct delayed; do
    case $mode in
      local) S=(--store "$w/$set.db") ;;
      direct) S=(--hashserv "$direct") ;;
      delayed) S=(--hashserv "$delayed") ;;
    esac
    # Each mode publishes into its own repository and store or server, so
    # every run does the same work.
    t[$mode-1]=$(run "repo-$set-$mode" r1 "$p1" "$i1" "${S[@]}")
    t[$mode-2]=$(run "repo-$set-$mode" r2 "$p2" "$i2" "${S[@]}")
  done
  printf '%-34s %12s %12s %12s\n' "$label: first build" "${t[local-1]}" "${t[direct-1]}" "${t[delayed-1]}"
  printf '%-34s %12s %12s %12s\n' "$label: rebuild" "${t[local-2]}" "${t[direct-2]}" "${t[delayed-2]}"
  unset t
done
