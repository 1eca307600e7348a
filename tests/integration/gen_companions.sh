#!/usr/bin/env bash
# manifest.json.zst as eqota-gen publish writes it: several zstd frames that
# decode, with the device's decoder and with zstd, to exactly manifest.json;
# a republish copies the frames of unchanged chunks from the previous file;
# a damaged previous file (a flipped byte, truncated, garbage, empty) and a
# reused frame with other bytes (test hook) still give a correct file.
# Usage: gen_companions.sh EQOTA_GEN EQ_DELTA HOOKS(0|1)
set -euo pipefail
gen=$1
eqdelta=$2
hooks=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
export XDG_CACHE_HOME=$w/cache
command -v zstd >/dev/null || { echo "zstd (the CLI) is needed"; exit 1; }

# 1,500 tiny packages: a manifest of about 1 MB, several chunks of 128 KB+.
# CHANGE=i gives package i a new version with other content.
mkpkgs() {
  python3 - "$1" "${2:--1}" <<'PY'
import io, os, sys, tarfile
out, change = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)
for i in range(1500):
    name, ver = "package-with-a-longer-name-%05d" % i, 2 if i == change else 1
    body = ("%s %d\n" % (name, ver)).encode()
    with tarfile.open(os.path.join(out, "%s_%d.tar" % (name, ver)), "w", format=tarfile.PAX_FORMAT) as t:
        f = tarfile.TarInfo("usr/share/%s/data" % name)
        f.mode, f.size = 0o644, len(body)
        t.addfile(f, io.BytesIO(body))
PY
}
mkpkgs p1
mkpkgs p2 700
"$gen" keygen --out k >/dev/null
ch=repo/boards/tb/stable
pub() { "$gen" -v -v publish --repo repo --board tb --channel stable --key k.key --store s.db --level 3 "$@"; }

# The frames of a .zst file, from the format (RFC 8878) rather than from
# the code under test: prints "<start> <length>" per frame.
frames() {
  python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
p = 0
while p < len(d):
    s = p
    if struct.unpack_from("<I", d, p)[0] != 0xFD2FB528:
        sys.exit("not a zstd frame at byte %d" % p)
    fhd = d[p + 4]
    p += 5
    single = fhd >> 5 & 1
    p += (0 if single else 1) + [0, 1, 2, 4][fhd & 3] + [1 if single else 0, 2, 4, 8][fhd >> 6]
    while True:
        b = d[p] | d[p + 1] << 8 | d[p + 2] << 16
        p += 3 + (1 if (b >> 1 & 3) == 1 else b >> 3)
        if b & 1:
            break
    p += 4 if fhd >> 2 & 1 else 0
    print(s, p - s)
PY
}
# The manifest's bytes, decoded by the device's eq_object_decompress() and by zstd.
decodes() {
  local what=$1
  "$eqdelta" decompress "$ch/manifest.json.zst" dev.out &&
    cmp -s dev.out "$ch/manifest.json" && pass "$what: the device's decoder gives manifest.json" ||
    fail "$what: the device's decoder gives other bytes"
  zstd -q -dc "$ch/manifest.json.zst" | cmp -s - "$ch/manifest.json" &&
    pass "$what: zstd -dc gives manifest.json" || fail "$what: zstd -dc gives other bytes"
}
# How many frames of file $2 are byte for byte frames of file $1.
same_frames() {
  python3 - "$1" "$2" <(frames "$1") <(frames "$2") <<'PY'
import sys
def load(path, idx):
    d = open(path, "rb").read()
    return [d[int(s):int(s) + int(n)] for s, n in (l.split() for l in open(idx))]
old, new = set(load(sys.argv[1], sys.argv[3])), load(sys.argv[2], sys.argv[4])
print(sum(f in old for f in new), len(new))
PY
}

pub --release r1 --packages p1 >/dev/null 2>pub1.err
decodes "first publish"
n=$(frames "$ch/manifest.json.zst" | wc -l)
msize=$(stat -c %s "$ch/manifest.json")
[ "$n" -ge 4 ] && pass "$msize bytes of manifest in $n frames" || fail "$n frames for $msize bytes of manifest"
grep -q "0 of $n frames reused" pub1.err && pass "first publish: nothing to reuse" ||
  fail "first publish: $(grep -h 'frames reused' pub1.err)"

# A republish: only the header frame is new.
cp "$ch/manifest.json.zst" prev.zst
pub --release r1b --packages p1 >/dev/null 2>pub2.err
decodes "republish"
grep -q "$((n - 1)) of $n frames reused" pub2.err && pass "republish: $((n - 1)) of $n frames reused (log)" ||
  fail "republish: $(grep -h 'frames reused' pub2.err)"
read -r same total < <(same_frames prev.zst "$ch/manifest.json.zst")
[ "$same" -eq $((total - 1)) ] && pass "republish: $same of $total frames byte-identical to the previous file" ||
  fail "republish: $same of $total frames identical to the previous file"

# One package changed: its chunk and the header are new, the rest reused.
cp "$ch/manifest.json.zst" prev.zst
pub --release r2 --packages p2 >/dev/null 2>pub3.err
decodes "one package changed"
read -r same total < <(same_frames prev.zst "$ch/manifest.json.zst")
[ "$same" -ge $((total - 3)) ] && [ "$same" -lt "$total" ] &&
  pass "one package changed: $same of $total frames reused" || fail "one package changed: $same of $total reused"

# A damaged previous file: nothing reused, a correct new file.
k=0
for damage in flip truncate garbage empty; do
  k=$((k + 1))
  z=$ch/manifest.json.zst
  read -r s2 n2 < <(frames "$z" | sed -n 2p)
  case $damage in
    flip) python3 -c 'import sys; p, o = sys.argv[1], int(sys.argv[2]); d = bytearray(open(p, "rb").read()); d[o] ^= 0x10; open(p, "wb").write(d)' "$z" $((s2 + n2 / 2)) ;;
    truncate) truncate -s $((s2 + n2 / 2)) "$z" ;;
    garbage) head -c 100000 /dev/urandom > "$z" ;;
    empty) : > "$z" ;;
  esac
  pub --release "d$k" --packages p1 >/dev/null 2>pubd.err
  decodes "previous file $damage"
  grep -q "nothing reused" pubd.err && grep -q "0 of [0-9]* frames reused" pubd.err &&
    pass "previous file $damage: nothing reused" || fail "previous file $damage: $(grep -h 'reused' pubd.err)"
done

# A reused frame whose bytes are not the chunk's is caught before writing.
if [ "$hooks" = 1 ]; then
  EQ_TEST_COMPANIONS_BAD_REUSE=1 pub --release bad --packages p2 >/dev/null 2>pubb.err
  decodes "a wrong frame reused"
  grep -q "compressing all afresh" pubb.err && grep -q " 0 of [0-9]* frames reused" pubb.err &&
    pass "a wrong frame reused: caught, all compressed afresh" || fail "a wrong frame reused: $(grep -h reused pubb.err)"
else
  echo "SKIP: the wrong-frame case needs the test hooks (-DEQ_TEST_HOOKS=ON)"
fi
[ "$fails" -eq 0 ]
