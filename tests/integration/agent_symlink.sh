#!/usr/bin/env bash
# A package that writes through another package's symlink into eqota's own
# records (issue 29, finding 2). A merged-/usr base ships "lib -> usr/lib"
# and "bin -> usr/bin"; a second package ships
# lib/eqota/slot/packages/base.files, which lands on base's record.
#  1. eqota-gen publish refuses it (with --policy strict too), naming the
#     package, the entry, where it lands and whose symlink leads there;
#  2. published anyway (EQ_TEST_PUBLISH_UNCHECKED), the device refuses the
#     update and base's record stays as it was;
#  3. a forged base.files on the running slot (an extra file it does not
#     ship; etc 0777 owned by 1000, usr/bin 1777): eqota verify names it,
#     and the next update does not keep base from it: the new slot's etc
#     is 0755 root's, usr/bin 0755, without the extra file.
# Usage: agent_symlink.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
. "$4/tests/integration/lib/agent-test.sh" agent_symlink "$@"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to build the packages"; exit 77; }

# mk FILE SPEC...: a tarball from specs "f:PATH[:MODE]", "d:PATH", "l:PATH:TARGET".
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
            i.type, i.linkname, i.mode = tarfile.SYMTYPE, parts[1], 0o777
        if kind == "f" and len(parts) > 1:
            i.mode = int(parts[1], 8)
        data = ("%s\n" % parts[0]).encode() if kind == "f" else b""
        i.size = len(data)
        t.addfile(i, io.BytesIO(data))
PY
}
"$gen" keygen --out k >/dev/null
# pkgs DIR APP_VERSION [evil]: base (merged /usr), app, and the hostile one.
pkgs() {
  rm -rf "$1"; mkdir -p "$1"
  mk "$1/base_1.tar" l:bin:usr/bin l:lib:usr/lib l:sbin:usr/sbin d:etc f:etc/os-release d:usr d:usr/bin \
    f:usr/bin/sh:0755 d:usr/lib f:usr/lib/libc.so d:usr/sbin
  tarpkg "$1/app_$2.tar" usr/share/app/version "app $2"
  [ "${3:-}" != evil ] || mk "$1/evil_1.tar" f:lib/eqota/slot/packages/base.files
}
publish() { # DIR RELEASE [OPTIONS]
  local d=$1 r=$2; shift 2
  "$gen" -q publish --repo repo --board b --channel stable --release "$r" --packages "$d" --key k.key \
    --store repo.db --level 1 "$@"
}

# ---- 1. the publisher refuses it
pkgs p0 1 evil
for pol in "" strict; do
  rc=0; out=$(publish p0 r0 ${pol:+--policy "$pol"} 2>&1) || rc=$?
  if [ $rc -ne 0 ] && grep -qF "package evil (evil_1.tar): entry 'lib/eqota/slot/packages/base.files' resolves to 'usr/lib/eqota/slot/packages/base.files' through symlink 'lib' -> 'usr/lib' of package base" <<<"$out" &&
    [ -z "$(find repo -name manifest.json 2>/dev/null)" ]; then
    pass "publish${pol:+ --policy $pol} refuses it: $(grep -m1 -F "resolves to" <<<"$out")"
  else
    fail "publish${pol:+ --policy $pol}: exit $rc: $out"
  fi
done

# ---- 2. published without the check: the device refuses it
pkgs p1 1
publish p1 r1 >/dev/null
mkdir -p logs
httpd_start "$w/repo" "$w/logs"
d=$w/dev
simdevice_make "$d" "$HTTPD_URL" b "$w/k.pub" repository.retries=0
eq() { simdevice_eq "$d" "$eqota" "$@"; }
eq provision --slot A >/dev/null 2>&1
simdevice_boot "$d" "$simboot"
rec=$d/A/usr/lib/eqota/slot/packages/base.files
sum0=$(sha256sum <"$rec")
pkgs p2 2 evil
EQ_TEST_PUBLISH_UNCHECKED=1 publish p2 r2 >/dev/null
rc=0; out=$(eq update 2>&1) || rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 3 ] &&
  grep -qF "entry 'lib/eqota/slot/packages/base.files'" <<<"$out" &&
  grep -qF "resolves into eqota's own folder 'usr/lib/eqota/slot'" <<<"$out"; then
  pass "the device refuses the update (exit $rc): $(grep -m1 -F "resolves into" <<<"$out")"
else
  fail "device: exit $rc: $out"
fi
simdevice_boot "$d" "$simboot"
[ "$(sha256sum <"$rec")" = "$sum0" ] && [ "$(simdevice_running "$d" "$eqota")" = 1 ] &&
  pass "slot A and base's record are untouched" || fail "slot A or its record changed"

# ---- 3. a forged record on the running slot
forge() { # MODE: extra | dirs
  python3 - "$rec" "$1" <<'PY'
import hashlib, sys
path, how = sys.argv[1], sys.argv[2]
lines = open(path).read().splitlines()
head, body = lines[0], lines[1:]
if how == "extra":
    data = b"backdoor\n"
    body.append("f 0755 0 0 %d %s usr/bin/backdoor" % (len(data), hashlib.sha256(data).hexdigest()))
else:
    body = [l.replace("d 0755 0 0 0 - etc", "d 0777 1000 1000 0 - etc")
             .replace("d 0755 0 0 0 - usr/bin", "d 1777 0 0 0 - usr/bin") for l in body]
body.sort(key=lambda l: l.split(" ")[6].encode())
open(path, "w").write("\n".join([head] + body) + "\n")
PY
}
printf 'backdoor\n' >"$d/A/usr/bin/backdoor"
chmod 0755 "$d/A/usr/bin/backdoor"
forge extra
rc=0; out=$(eq verify 2>&1) || rc=$?
[ $rc -eq 1 ] && grep -qF "package base:" <<<"$out" && grep -qF "the release signed" <<<"$out" &&
  pass "verify: a record listing a file base does not ship is named (exit 1)" || fail "verify extra: exit $rc: $out"
forge dirs
chmod 0777 "$d/A/etc"  # only the record lies about usr/bin; etc's owner too
rc=0; out=$(eq verify 2>&1) || rc=$?
[ $rc -eq 1 ] && grep -qE "(^|[^/])etc: directory mode or owner differ from the record" <<<"$out" &&
  grep -qF "usr/bin: directory mode or owner differ from the record" <<<"$out" &&
  pass "verify: forged directory modes and owners are named (exit 1)" || fail "verify dirs: exit $rc: $out"
chmod 0755 "$d/A/etc"
pkgs p3 3
publish p3 r3 >/dev/null
rc=0; out=$(eq update 2>&1) || rc=$?
echo "$out" | tail -2
st=$(stat -c '%a %u' "$d/B/etc" "$d/B/usr/bin" | tr '\n' ' ')
[ $rc -eq 3 ] && grep -q "1 fell back to full objects" <<<"$out" && [ "$st" = "755 0 755 0 " ] &&
  [ ! -e "$d/B/usr/bin/backdoor" ] && ! grep -q backdoor "$d/B/usr/lib/eqota/slot/packages/base.files" &&
  pass "update: base is downloaded, not kept from the forged record (etc, usr/bin: $st)" ||
  fail "update: exit $rc, etc and usr/bin: $st, backdoor: $(ls "$d/B/usr/bin")"
simdevice_boot "$d" "$simboot"
eq mark-good >/dev/null 2>&1
out=$(eq verify) && grep -q "every file matches its record" <<<"$out" && grep -q "slot B" <<<"$out" &&
  pass "the new slot verifies clean" || fail "new slot: $out"

# The honest record is kept again: base is copied, not downloaded.
pkgs p4 4
publish p4 r4 >/dev/null
rc=0; out=$(eq update 2>&1) || rc=$?
[ $rc -eq 3 ] && grep -qE "installed release 'r4' .*: 1 packages? kept, 0 from deltas, 1 full, 0 fell back" <<<"$out" &&
  pass "with its honest record base is kept again" || fail "r4: exit $rc: $out"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "no package writes eqota's records through another's symlink, and a forged record is not kept"
