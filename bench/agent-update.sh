#!/usr/bin/env bash
# The device agent on the demo release pair (scripts/fetch-debs.sh), served by
# lighttpd on loopback to a simulated device (dir slots, file bootloader):
#   - full install (provision: every package downloaded as a full object) and
#     the delta update 1 -> 2: wall time and peak RSS (/usr/bin/time)
#   - baseline: `zstd -d | tar -x` of the same objects (no verification)
#   - stripped size of eqota, idle RSS of `eqota daemon`
# Usage: bench/agent-update.sh [BUILD_DIR]     (default: build)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
gen=$build/eqota-gen eqota=$build/agent/eqota simboot=$build/tests/eq-simboot
for b in "$gen" "$eqota" "$simboot"; do [ -x "$b" ] || { echo "build first: $b missing" >&2; exit 1; }; done
[ -x /usr/bin/time ] || apt-get install -y -qq time >/dev/null
cache=$src/.cache/debs
[ -d "$cache/release2" ] || "$src/scripts/fetch-debs.sh" >/dev/null
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
. "$src/bench/lib.sh"
w=$(mktemp -d /tmp/eq-bench-agent.XXXXXX)
dpid=
cleanup() { if [ -n "$dpid" ]; then kill "$dpid" 2>/dev/null || true; fi; httpd_stop; rm -rf "$w"; }
trap cleanup EXIT
cd "$w"
"$gen" keygen --out k >/dev/null
P=(--board qemux86-64 --channel stable --key k.key --store store.db --level 19)
"$gen" -q publish --repo repo "${P[@]}" --release r1 --packages "$cache/release1" --build-index "$cache/release1.index" >/dev/null
httpd_start "$w/repo" "$w/logs"
mkdevice() {
  simdevice_make "$w/$1" "$HTTPD_URL" qemux86-64 "$w/k.pub" health.check=/bin/true daemon.interval=3600 daemon.jitter=0
}
mkdevice dev
read -r t_prov m_prov a_prov < <(measure "$eqota" --config dev/eqota.conf provision --slot A)
"$simboot" --env dev/bootenv --cmdline dev/cmdline >/dev/null
"$gen" -q publish --repo repo "${P[@]}" --release r2 --packages "$cache/release2" --build-index "$cache/release2.index" >/dev/null
: > "$HTTPD_ACCESS_LOG"
read -r t_upd m_upd a_upd < <(measure "$eqota" --config dev/eqota.conf update)
httpd_log_flush
dl=$(awk '$2 ~ /^\/(objects|deltas)\// {s+=$4} END {print s+0}' "$HTTPD_ACCESS_LOG")
mkdevice full2
read -r t_full m_full a_full < <(measure "$eqota" --config full2/eqota.conf provision --slot A)

# Baseline: decompress and unpack the same full objects with the standard tools.
python3 - repo/boards/qemux86-64/stable/manifest.json > objects.txt <<'PY'
import json, sys
for p in json.load(open(sys.argv[1]))["packages"]:
    print(p["object"]["path"])
PY
mkdir base
t0=$(date +%s.%N)
while read -r o; do zstd -q -d -c "repo/$o" | tar -x -C base; done < objects.txt
t1=$(date +%s.%N)
sync
t2=$(date +%s.%N)
t_base=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')
t_sync=$(awk -v a="$t1" -v b="$t2" 'BEGIN{printf "%.2f", b-a}')
t_fair=$(awk -v a="$t0" -v b="$t2" 'BEGIN{printf "%.2f", b-a}')
size=$(du -sb "$w/dev/B" | cut -f1)
full=$(while read -r o; do stat -c %s "repo/$o"; done < objects.txt | awk '{s+=$1} END {print s}')

cp "$eqota" stripped
strip stripped
bin=$(stat -c %s stripped)
mkdevice idle
"$eqota" --config idle/eqota.conf provision --slot A >/dev/null 2>&1
"$simboot" --env idle/bootenv --cmdline idle/cmdline >/dev/null
"$eqota" -q --config idle/eqota.conf daemon >/dev/null 2>&1 &
dpid=$!
sleep 3
rss=$(awk '/VmRSS/ {print $2}' "/proc/$dpid/status")
kill "$dpid"
wait "$dpid" 2>/dev/null || true
dpid=

printf '%-56s %9s %13s %13s\n' "what" "seconds" "peak RSS KiB" "peak anon KiB"
printf '%-56s %9s %13s %13s\n' "eqota provision of release 1 (all objects)" "$t_prov" "$m_prov" "$a_prov"
printf '%-56s %9s %13s %13s\n' "eqota provision of release 2 (all objects)" "$t_full" "$m_full" "$a_full"
printf '%-56s %9s %13s %13s\n' "eqota update 1 -> 2 (kept packages + deltas)" "$t_upd" "$m_upd" "$a_upd"
printf '%-56s %9s %13s %13s\n' "baseline: zstd -d | tar -x of release 2's objects" "$t_base" "-" "-"
printf '%-56s %9s %13s %13s\n' "  then sync (eqota syncs what it installs)" "$t_sync" "-" "-"
echo
awk -v f="$t_full" -v b="$t_base" -v s="$t_fair" 'BEGIN { printf "full install speed vs baseline: %.0f %% without its sync, %.0f %% with it (target >= 80 %% of the fair baseline)\n", 100 * b / f, 100 * s / f }'
echo "release 2: $(wc -l < objects.txt) packages, $size bytes installed, objects $full bytes; the update fetched $dl bytes"
echo "stripped eqota: $bin bytes ($((bin / 1024)) KiB; target < 300 KiB)"
echo "idle eqota daemon: VmRSS $rss KiB (target < 4096 KiB)"
echo "update peak anonymous memory: $a_upd KiB (target <= 16 MiB whatever the package size; the peak RSS $m_upd KiB" \
  "also counts the mapped reference files, page cache; libc6's 13 MB payload is the largest reference here)"
