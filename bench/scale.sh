#!/usr/bin/env bash
# Costs as a release grows: synthetic releases of N packages (tarball
# packages of a realistic size mix: most small, some of hundreds of KB, a few
# of megabytes; text and binary), release 2 changing 2 % of them. Per size:
#   - eqota-gen publish time: release 1, release 1 again (nothing new; with
#     its input cache, and with --no-cache),
#     release 2 (changed objects and deltas)
#   - manifest bytes: full, manifest.json.zst, manifest delta 1 -> 2
#   - a root-mode device (lighttpd on loopback, dir slots): provision time,
#     then `check` and `update` to release 2: time, peak RSS and peak
#     anonymous memory (sampled RssAnon of the process)
#   - bytes on the wire (requests and answers with their headers, from
#     lighttpd's access log) of an unchanged check, and of the check that
#     finds a release changing 10 packages in 5,000 (0.2 %; 2 of 1,000, 1
#     of 100): its metadata, root probe, timestamp and manifest delta
# Usage: bench/scale.sh [BUILD_DIR] [N...]     (default: build 100 1000 5000)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100 1000 5000)
gen=$build/eqota-gen eqota=$build/agent/eqota simboot=$build/tests/eq-simboot
for b in "$gen" "$eqota" "$simboot"; do [ -x "$b" ] || { echo "build first: $b missing" >&2; exit 1; }; done
[ -x /usr/bin/time ] || apt-get install -y -qq time >/dev/null
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
. "$src/bench/lib.sh"
w=$(mktemp -d /tmp/eq-bench-scale.XXXXXX)
cleanup() { httpd_stop || true; rm -rf "$w"; }
trap cleanup EXIT

secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}'; }

# gen_release DIR N SEED EVERY: N tarball packages; with EVERY > 0 the
# packages whose index is a multiple of EVERY get a new version with changed
# content (50: 2 %), the rest are byte-identical to SEED's release 1.
gen_release() {
  python3 - "$@" <<'PY'
import io, os, random, sys, tarfile
out, n, seed, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
os.makedirs(out, exist_ok=True)
words = [b"update", b"device", b"package", b"release", b"kernel", b"library", b"config", b"service", b"daemon", b"socket"]
for i in range(n):
    rng = random.Random(seed * 1000003 + i)
    r = rng.random()
    size = rng.randint(1000, 20000) if r < 0.70 else rng.randint(20000, 500000) if r < 0.97 else rng.randint(500000, 4000000)
    text = rng.random() < 0.5
    if text:
        body = b" ".join(rng.choice(words) for _ in range(size // 7))[:size]
    else:
        body = rng.randbytes(size // 2) + bytes(size - size // 2)
    ver = 1
    if every and i % every == 0:
        ver = 2
        b = bytearray(body)
        for k in range(0, len(b), max(1, len(b) // 8)):
            b[k] ^= 0x55
        body = bytes(b)
    name = "pkg%05d" % i
    with tarfile.open(os.path.join(out, "%s_%d.tar" % (name, ver)), "w", format=tarfile.PAX_FORMAT) as t:
        for d in ("usr", "usr/share", "usr/share/" + name):
            ti = tarfile.TarInfo(d); ti.type, ti.mode = tarfile.DIRTYPE, 0o755; t.addfile(ti)
        ti = tarfile.TarInfo("usr/share/%s/data" % name); ti.mode, ti.size = 0o644, len(body)
        t.addfile(ti, io.BytesIO(body))
PY
}

wire() { httpd_log_flush; awk '{ s += $6 + $7 } END { print s + 0 }' "$HTTPD_ACCESS_LOG"; }
printf '%6s %8s %8s %8s %8s %10s %9s %8s %8s %7s %9s %9s %7s %9s %9s %9s %9s\n' \
  packages pub1_s repub_s repub_nc pub2_s manifest zst delta prov_s check_s chk_anon upd_s upd_anon upd_rss changed \
  same_wire meta_wire
for n in "${sizes[@]}"; do
  d=$w/n$n
  mkdir -p "$d"
  cd "$d"
  gen_release r1 "$n" 1 0
  gen_release r2 "$n" 1 50
  gen_release r3 "$n" 1 500
  for k in R K T; do "$gen" keygen --out "$k" >/dev/null; done
  "$gen" root init --repo repo --key R.key --root-pub R.pub --release-pub K.pub --timestamp-pub T.pub >/dev/null
  cp repo/root/1.root.json pinned.root.json # the publisher's pin, outside the repository
  P=(--repo repo --board sb --channel stable --key K.key --timestamp-key T.key --store s.db --level 3
     --cache "$d/inputs.db" --trusted-root pinned.root.json)
  # The input cache skips files changed in the last 2 s (their timestamps
  # may not show a later change yet); a build's packages are older than
  # that by the time they are published.
  sleep 3
  t1=$(secs "$gen" -q publish "${P[@]}" --release r1 --packages r1)
  t1b=$(secs "$gen" -q publish "${P[@]}" --release r1b --packages r1)
  t1n=$(secs "$gen" -q publish "${P[@]}" --release r1n --packages r1 --no-cache)
  mkdir -p image
  cp repo/root/1.root.json repo/root/1.root.json.sig image/
  httpd_start "$d/repo" "$d/logs"
  simdevice_make "$d/dev" "$HTTPD_URL" sb "$d/image/1.root.json" repository.retries=0
  read -r tp _ _ < <(measure env EQ_TEST_BOOT_ID_FILE="$d/dev/boot_id" "$eqota" --config dev/eqota.conf provision --slot A)
  cat /proc/sys/kernel/random/uuid > dev/boot_id
  "$simboot" --env dev/bootenv --cmdline dev/cmdline >/dev/null
  # an unchanged check, then one that finds a release changing 0.2 %
  EQ_TEST_BOOT_ID_FILE="$d/dev/boot_id" "$eqota" --config dev/eqota.conf check >/dev/null
  httpd_log_flush; : > "$HTTPD_ACCESS_LOG"
  EQ_TEST_BOOT_ID_FILE="$d/dev/boot_id" "$eqota" --config dev/eqota.conf check >/dev/null
  same_wire=$(wire)
  "$gen" -q publish "${P[@]}" --release r3 --packages r3 >/dev/null
  : > "$HTTPD_ACCESS_LOG"
  EQ_TEST_BOOT_ID_FILE="$d/dev/boot_id" "$eqota" --config dev/eqota.conf check >/dev/null
  meta_wire=$(wire)
  t2=$(secs "$gen" -q publish "${P[@]}" --release r2 --packages r2)
  m=repo/boards/sb/stable/manifest.json
  msize=$(stat -c %s "$m") zsize=$(stat -c %s "$m.zst")
  # the delta the device fetches: from r3's manifest (number 4), its last check
  from=$(sha256sum repo/boards/sb/stable/releases/4/manifest.json | cut -c1-64)
  to=$(sha256sum "$m" | cut -c1-64)
  dsize=$(stat -c %s "repo/boards/sb/stable/manifest-deltas/$from-$to.delta")
  read -r tc _ ac < <(measure env EQ_TEST_BOOT_ID_FILE="$d/dev/boot_id" "$eqota" --config dev/eqota.conf check)
  read -r tu mu au < <(measure env EQ_TEST_BOOT_ID_FILE="$d/dev/boot_id" "$eqota" --config dev/eqota.conf update)
  httpd_stop
  printf '%6d %8s %8s %8s %8s %10d %9d %8d %8s %7s %9s %9s %7s %9s %9d %9d %9d\n' \
    "$n" "$t1" "$t1b" "$t1n" "$t2" "$msize" "$zsize" "$dsize" "$tp" "$tc" "$ac" "$tu" "$au" "$mu" $(( (n + 49) / 50 )) \
    "$same_wire" "$meta_wire"
  cd "$w"
  rm -rf "$d"
done
echo "(seconds; repub: release 1 again with its input cache, repub_nc: without (--no-cache); manifest, zst and delta in bytes: the release-2 manifest, compressed, and its delta from the device's;"
echo " anon/rss in KiB: peak anonymous memory sampled from /proc and peak RSS;"
echo " same_wire: an unchanged check, meta_wire: the check finding 0.2 % changed, in bytes on the wire with headers)"
echo "targets: same_wire <= 1024, meta_wire <= 65536 at 5,000 packages, anonymous memory <= 16 MiB"
