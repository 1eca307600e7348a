#!/usr/bin/env bash
# eqota-gen publish refuses packages every device would refuse (issue 12,
# findings 1 and 7), naming the package file and the entry: one case per
# rule, each package built here. setuid/setgid files and device nodes are
# listed in a warning, and refused with --policy strict.
# Usage: gen_refuse.sh EQOTA_GEN
set -euo pipefail
# before any cd: $0 may be a relative path
# shellcheck source=tests/integration/lib/check.sh
. "$(dirname "$0")/lib/check.sh"
gen=$1
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to build the bad packages"; exit 77; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
"$gen" keygen --out rel >/dev/null

# mk FILE SPEC...: a tarball from python tarfile specs "f:PATH[:MODE]",
# "d:PATH", "l:PATH:TARGET", "c:PATH" (a character device).
mk() {
  python3 - "$@" <<'PY'
import io, sys, tarfile
out, specs = sys.argv[1], sys.argv[2:]
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    for s in specs:
        kind, rest = s.split(":", 1)
        parts = rest.split(":")
        i = tarfile.TarInfo(parts[0])
        i.uid = i.gid = 0
        i.mode = 0o755 if kind == "d" else 0o644
        if kind == "d":
            i.type = tarfile.DIRTYPE
        elif kind == "l":
            i.type, i.linkname = tarfile.SYMTYPE, parts[1]
        elif kind == "c":
            i.type, i.devmajor, i.devminor, i.mode = tarfile.CHRTYPE, 1, 3, 0o666
        if kind == "f" and len(parts) > 1:
            i.mode = int(parts[1], 8)
        data = b"data\n" if kind == "f" else b""
        i.size = len(data)
        t.addfile(i, io.BytesIO(data))
PY
}

n=0
# publish_pkg FILE [OPTIONS]: publishes FILE alone into a fresh repository
# (number $n: callers count, as this runs in a subshell).
publish_pkg() {
  local f=$1; shift
  rm -rf "p$n"; mkdir "p$n"; cp "$f" "p$n/"
  "$gen" publish --repo "repo$n" --board tb --channel stable --release r1 --packages "p$n" --key rel.key \
    --store "s$n.db" --level 1 "$@"
}
# publish_refused NAME FILE SUBSTRING... [-- OPTIONS]: publishing must fail and name
# the package file and print every SUBSTRING; nothing may be published.
publish_refused() {
  local name=$1 f=$2; shift 2
  local want=() opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do want+=("$1"); shift; done
  [ $# -gt 0 ] && { shift; opts=("$@"); }
  local out
  n=$((n + 1))
  if out=$(publish_pkg "$f" "${opts[@]}" 2>&1); then fail "$name: published"; echo "$out"; return; fi
  local ok=1
  grep -qF -- "$(basename "$f")" <<<"$out" || ok=0
  for s in "${want[@]}"; do grep -qF -- "$s" <<<"$out" || ok=0; done
  [ -z "$(find "repo$n" -name manifest.json 2>/dev/null)" ] || ok=0
  if [ $ok = 1 ]; then pass "$name: $(grep -m1 -F -- "${want[0]}" <<<"$out")"; else fail "$name: got: $out"; fi
}

# Finding 1: eqota's own folder in a slot.
mk reserved_1.tar d:usr d:usr/lib d:usr/lib/eqota d:usr/lib/eqota/slot d:usr/lib/eqota/slot/packages \
  l:usr/lib/eqota/slot/packages/zeta.files.tmp:/etc/passwd
publish_refused "entry in eqota's reserved folder" reserved_1.tar \
  "entry 'usr/lib/eqota/slot'" "is eqota's own folder, reserved for the agent"
mk reservedfile_1.tar f:usr/lib/eqota/slot/manifest.json
publish_refused "file in eqota's reserved folder (no folder entries)" reservedfile_1.tar \
  "entry 'usr/lib/eqota/slot/manifest.json'" "is eqota's own folder"
mk reservedlink_1.tar d:usr d:usr/lib l:usr/lib/eqota:/tmp
publish_refused "symlink replacing a folder above the reserved one" reservedlink_1.tar \
  "entry 'usr/lib/eqota'" "a non-directory on the way to eqota's reserved folder"
# The same as a .deb, the usual package format.
mkdir -p debsrc/DEBIAN debsrc/usr/lib/eqota/slot/packages
printf 'Package: evil\nVersion: 1\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: t\n' > debsrc/DEBIAN/control
ln -s /etc/shadow debsrc/usr/lib/eqota/slot/packages/x.files.tmp
if command -v dpkg-deb >/dev/null; then
  dpkg-deb --root-owner-group -b debsrc evil_1_all.deb >/dev/null
  publish_refused ".deb with an entry in eqota's reserved folder" evil_1_all.deb "entry 'usr/lib/eqota/slot'" "reserved"
else
  echo "SKIP-CASE: dpkg-deb not installed, the .deb case is not run"
fi

# Finding 7: what every device refuses.
mk throughlink_1.tar d:usr l:usr/etc2:/etc f:usr/etc2/passwd
publish_refused "write through the package's own symlink" throughlink_1.tar \
  "entry 'usr/etc2/passwd'" "path goes through symlink 'usr/etc2' of this payload"
long=$(printf 'n%.0s' $(seq 256))
mk longname_1.tar d:usr "f:usr/$long"
publish_refused "path component longer than 255 bytes" longname_1.tar \
  "entry 'usr/nnnn" "is 256 bytes long, the limit is 255"
mk throughfile_1.tar f:opt f:opt/x
publish_refused "path through the package's own file" throughfile_1.tar "entry 'opt/x'" "path goes through 'opt', a non-directory of this payload"

# setuid/setgid files and device nodes: warned about, refused when strict.
mk special_1.tar d:usr d:usr/bin f:usr/bin/su:4755 f:usr/bin/wall:2755 d:dev c:dev/null
n=$((n + 1))
if out=$(publish_pkg special_1.tar 2>&1) && grep -qF "special_1.tar: 3 setuid/setgid files or device nodes: 'dev/null (character device)', 'usr/bin/su (setuid)', 'usr/bin/wall (setgid)', continuing" <<<"$out"; then
  pass "setuid/setgid files and device nodes are listed in a warning, and published"
else fail "default policy: $out"; fi
n=$((n + 1))
if out=$(publish_pkg special_1.tar --policy default 2>&1) && grep -qF "3 setuid/setgid" <<<"$out"; then
  pass "--policy default is the default"; else fail "--policy default: $out"; fi
publish_refused "--policy strict refuses setuid files and device nodes" special_1.tar \
  "refused by --policy strict: 3 setuid/setgid files or device nodes: 'dev/null (character device)'" -- --policy strict
mk plain_1.tar d:usr d:usr/bin f:usr/bin/tool:755
n=$((n + 1))
if out=$(publish_pkg plain_1.tar --policy strict 2>&1); then pass "--policy strict publishes a plain package";
else fail "--policy strict on a plain package: $out"; fi
n=$((n + 1))
if out=$(publish_pkg plain_1.tar --policy lax 2>&1); then fail "--policy lax accepted";
elif grep -qF -- "--policy 'lax': expected default or strict" <<<"$out"; then pass "unknown --policy value is a usage error";
else fail "--policy lax: $out"; fi

[ "$fails" -eq 0 ] && echo "all gen_refuse checks passed" || { echo "$fails failed"; exit 1; }
