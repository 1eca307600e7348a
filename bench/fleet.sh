#!/usr/bin/env bash
# What following a fleet costs: report files of N simulated devices (each
# reports an install and a commit, or a rollback for 4 %, over a two-day
# rollout, as the agent formats them) summed up by `eqota-gen fleet` as
# text, JSON and HTML, and read by `rollout --auto-halt` (which halts
# nothing at a 0.5 ratio); prints the file
# size, the wall time and the peak RSS of each, and the HTML page's size.
# The reports carry "auth" as eqota-report.cgi stores them for devices with
# a client certificate.
# Then the hostile rows (issue 29, finding 6): N lines without "auth", each
# with its own board, channel, release and device id, read with
# --unauthenticated (else they are not even looked at): the names a sender
# chooses must cost linear time and capped memory.
# Usage: bench/fleet.sh [BUILD_DIR] [N ...]   (default: build 10000 100000 500000)
#        EQ_BENCH_HOSTILE="40000 1000000" (the default) sets the hostile rows' N.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 500000)
gen=$build/eqota-gen
[ -x "$gen" ] || { echo "build first: $gen missing" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
w=$(mktemp -d /tmp/eq-bench-fleet.XXXXXX)
trap 'rm -rf "$w"' EXIT
cd "$w"

# A repository whose stable channel's current release is number 5, as the
# reports say, for `rollout --auto-halt` (ratio 0.5: it reads and decides,
# and changes nothing at a 4 % share).
. "$src/tests/integration/lib/tarpkg.sh"
for k in R K T; do "$gen" keygen --out "$k" >/dev/null; done
"$gen" root init --repo repo --key R.key --root-pub R.pub --release-pub K.pub --timestamp-pub T.pub >/dev/null
cp repo/root/1.root.json pinned.root.json # the publisher's pin, outside the repository
for r in 1 2 3 4 5; do
  mkdir -p "p$r" && tarpkg "p$r/app_$r.tar" usr/share/app "app $r"
  "$gen" -q publish --repo repo --board qemuarm64 --channel stable --release "2026.12.$r" --packages "p$r" \
    --key K.key --timestamp-key T.key --store s.db --level 1 --trusted-root pinned.root.json >/dev/null
done

# run LABEL CMD...: wall seconds and peak RSS (MiB) of CMD; LABEL only
# names the call for the reader
run() {
  shift
  /usr/bin/time -f "%e %M" -o "$w/time" "$@" >"$w/out" 2>/dev/null
  read -r secs kb <"$w/time"
  printf ' %8s %8.1f' "$secs" "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')"
}

printf '%9s %10s %9s %8s %8s %8s %8s %8s %8s %8s %8s %10s\n' devices reports file_MB text_s text_MB \
  json_s json_MB html_s html_MB halt_s halt_MB html_KB
for n in "${sizes[@]}"; do
  python3 - "$w/r.jsonl" "$n" <<'PY'
import hashlib, json, random, sys
path, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(n)
t0 = 1796515200
with open(path, "w") as f:
    for i in range(n):
        dev = hashlib.sha256(b"device-%d" % i).hexdigest()[:32]
        t = t0 + int(rnd.random() ** 2 * 172800)
        base = {"schema": "eqota-report/1", "device": dev, "board": "qemuarm64", "channel": "stable",
                "from": {"release": "2026.11.1", "number": 4}, "to": {"release": "2026.12.1", "number": 5},
                "seconds": 41.0, "agent": "0.1.0", "auth": "device-%d" % i}
        f.write(json.dumps(dict(base, time=t, event="installed", reason=None,
                                bytes=rnd.randint(200000, 900000)), separators=(",", ":")) + "\n")
        if i % 25 == 3:
            f.write(json.dumps(dict(base, time=t + 300, event="rolled_back", bytes=0,
                                    reason="health check failed: /usr/bin/app-check exited %d" % (i % 3 + 1)),
                               separators=(",", ":")) + "\n")
        else:
            f.write(json.dumps(dict(base, time=t + 240, event="committed", reason=None, bytes=0),
                               separators=(",", ":")) + "\n")
PY
  lines=$(wc -l <r.jsonl)
  printf '%9d %10d %9.1f' "$n" "$lines" "$(awk -v b="$(stat -c %s r.jsonl)" 'BEGIN { print b / 1048576 }')"
  run text "$gen" fleet --reports r.jsonl
  run json "$gen" fleet --reports r.jsonl --json
  run html "$gen" fleet --reports r.jsonl --html --out "$w/f.html"
  run halt "$gen" rollout --repo repo --board qemuarm64 --channel stable --auto-halt 0.5 --reports r.jsonl \
    --key T.key --trusted-root pinned.root.json
  printf ' %10d\n' "$(($(stat -c %s f.html) / 1024))"
done

printf '\n%9s %10s %9s %8s %8s %8s %8s %8s %8s %8s %8s %10s\n' hostile/shape lines file_MB text_s text_MB \
  json_s json_MB html_s html_MB halt_s halt_MB html_KB
# Shape "all": every line its own board, channel, release, reason and id
# (past the caps: bad lines). Shape "rel": one board and channel, every line
# its own release (up to the cap of 65536), reason and id.
for n in ${EQ_BENCH_HOSTILE:-40000 1000000}; do for shape in all rel; do
  python3 - "$w/h.jsonl" "$n" "$shape" <<'PY'
import sys
path, n, shape = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, "w") as f:
    for i in range(n):
        b, c = ("b%d" % i, "c%d" % i) if shape == "all" else ("qemuarm64", "stable")
        f.write('{"schema":"eqota-report/1","time":%d,"device":"%032x","board":"%s","channel":"%s",'
                '"event":"rolled_back","from":null,"to":{"release":"r%d","number":%d},"reason":"why %d",'
                '"bytes":%d,"seconds":1.0,"agent":"x"}\n' % (1796515200 + i, i, b, c, i, i + 1, i, i))
PY
  printf '%9s %10d %9.1f' "$n/$shape" "$(wc -l <h.jsonl)" "$(awk -v b="$(stat -c %s h.jsonl)" 'BEGIN { print b / 1048576 }')"
  run text "$gen" fleet --unauthenticated --reports h.jsonl
  run json "$gen" fleet --unauthenticated --reports h.jsonl --json
  run html "$gen" fleet --unauthenticated --reports h.jsonl --html --out "$w/f.html"
  run halt "$gen" rollout --repo repo --board qemuarm64 --channel stable --auto-halt 0.5 --unauthenticated \
    --reports h.jsonl --key T.key
  printf ' %10d\n' "$(($(stat -c %s f.html) / 1024))"
done; done
