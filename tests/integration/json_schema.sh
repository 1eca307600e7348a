#!/usr/bin/env bash
# The --json documents of eqota and eqota-gen against their published JSON
# Schemas (docs/schemas/, docs/json-output.md), taken from the real programs
# in every state a script meets: a device on its first release, with an
# update on trial, after a failed trial (whose reason holds bytes that are
# not UTF-8), with an install error; in root mode and in legacy mode; the
# plan of `check`; `eqota-gen diff`, `show`, `equiv import`, `fleet` and `image-check`. Each
# document must be strict UTF-8 JSON and valid against its schema; each
# schema must itself be valid and strict (an undeclared field or a missing
# required one is refused).
# Usage: json_schema.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
eqota=$1 gen=$2 simboot=$3 src=$4
py=/usr/bin/python3
if ! "$py" -c 'import jsonschema' 2>/dev/null; then
  echo "SKIP: Debian's python3-jsonschema is not installed (scripts/setup.sh installs it)"
  exit 77
fi
. "$src/tests/integration/lib/httpd.sh"
. "$src/tests/integration/lib/simdevice.sh"
. "$src/tests/integration/lib/tarpkg.sh"
w=$(mktemp -d /tmp/eq-json.XXXXXX)
cleanup() { httpd_stop || true; rm -rf "$w"; }
trap cleanup EXIT
trap 'echo "json_schema.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$w"
. "$src/tests/integration/lib/check.sh"
schemas=$src/docs/schemas

# validate NAME SCHEMA FILE: FILE holds one document that is strict UTF-8
# JSON and valid against SCHEMA.
validate() {
  local out
  if out=$("$py" - "$schemas/$2" "$3" 2>&1 <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
raw = open(sys.argv[2], "rb").read()
doc = json.loads(raw.decode("utf-8", errors="strict"))
jsonschema.Draft202012Validator(schema).validate(doc)
PY
  ); then pass "$1: valid $2"; else fail "$1: $(tail -3 <<<"$out")"; cat "$3"; fi
}
# doc NAME SCHEMA CMD...: runs CMD (exit status 0, 1 or 3 allowed) and
# validates what it printed.
doc() {
  local name=$1 schema=$2 rc=0; shift 2
  "$@" > "$w/doc.json" 2>"$w/doc.err" || rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 3 ] && [ $rc -ne 4 ]; then fail "$name: exit $rc: $(cat "$w/doc.err")"; return; fi
  validate "$name" "$schema" "$w/doc.json"
  cp "$w/doc.json" "$w/last-$schema"
}

# ---- the schemas themselves: valid, and strict
for s in "$schemas"/*.schema.json; do
  out=$("$py" -c 'import json,sys,jsonschema; jsonschema.Draft202012Validator.check_schema(json.load(open(sys.argv[1])))' "$s" 2>&1) &&
    pass "$(basename "$s") is a valid draft 2020-12 schema" || fail "$(basename "$s"): $out"
done

# ---- a repository in root mode, two releases, and a device on release 1
for k in R1 K1 T1 L1; do "$gen" keygen --out "$k" >/dev/null; done
pkgs() { # DIR VERSION
  mkdir -p "$1"
  tarpkg "$1/base_1.tar" usr/share/base "base 1"
  tarpkg "$1/tool_$2.tar" usr/share/tool "tool $2"
}
pub() { # REPO RELEASE KEY [OPTIONS]
  local repo=$1 rel=$2 key=$3; shift 3
  pkgs "p-$rel" "${rel#r}"
  "$gen" -q publish --repo "$repo" --board tb --channel stable --release "$rel" --packages "p-$rel" --key "$key" \
    --store "$repo.db" --level 1 "$@" >/dev/null
}
"$gen" root init --repo repo --key R1.key --root-pub R1.pub --release-pub K1.pub --timestamp-pub T1.pub >/dev/null
cp repo/root/1.root.json pinned.root.json # the publisher's pin, outside the repository
pub repo r1 K1.key --timestamp-key T1.key --trusted-root pinned.root.json
pub legacy r1 L1.key
mkdir -p logs image
cp repo/root/1.root.json repo/root/1.root.json.sig image/
ln -s "$w/legacy" repo/legacy
httpd_start "$w/repo" "$w/logs"
# A health check whose path is not UTF-8: its failure reason quotes it.
bad=$(printf 'check-\xff\xfe')
printf '#!/bin/sh\nexit 1\n' > "$w/$bad"
chmod +x "$w/$bad"
d=$w/d
simdevice_make "$d" "$HTTPD_URL" tb "$w/image/1.root.json" repository.retries=0 "health.check=$w/$bad"
eq() { EQ_TEST_BOOT_ID_FILE=$d/boot_id "$eqota" --config "$d/eqota.conf" "$@"; }
boot() { cat /proc/sys/kernel/random/uuid > "$d/boot_id"; "$simboot" --env "$d/bootenv" --cmdline "$d/cmdline" >/dev/null; }
eq provision --slot A >/dev/null 2>&1 || { fail "provision"; exit 1; }
boot
doc "status, idle on release 1, root mode" eqota-status-1.schema.json eq status --json
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["trust"]["root_version"] == 1 and d["state"]["phase"] == "idle", d' \
  "$w/doc.json" && pass "status: root mode shows the trust object" || fail "status root mode: $(cat "$w/doc.json")"
doc "check, up to date" eqota-check-1.schema.json eq check --json
doc "verify, a clean slot" eqota-verify-1.schema.json eq verify --json

pub repo r2 K1.key --timestamp-key T1.key --trusted-root pinned.root.json
sleep 1
doc "check, release 2 available" eqota-check-1.schema.json eq check --json
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not d["up_to_date"] and {p["action"] for p in d["plan"]} >= {"keep"}, d' \
  "$w/doc.json" && pass "check: the plan lists the packages" || fail "check plan: $(cat "$w/doc.json")"
eq update >/dev/null 2>&1 || [ $? -eq 3 ] || fail "update"
doc "status, release 2 on trial" eqota-status-1.schema.json eq status --json
boot
setup_step "mark-good of release 2, its health check failing: rolled back" 4 eq mark-good
boot
doc "status, after a failed trial (reason not UTF-8)" eqota-status-1.schema.json eq status --json
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "\ufffd" in d["failed"]["reason"], d' "$w/doc.json" &&
  pass "status: the bytes that are not UTF-8 arrive as U+FFFD" || fail "failed reason: $(cat "$w/doc.json")"

# An install error: release 3's changed object is missing on the server.
pub repo r3 K1.key --timestamp-key T1.key --trusted-root pinned.root.json
obj=$("$gen" show --repo repo --board tb --channel stable --json | "$py" -c 'import json,sys; print([p["object"]["path"] for p in json.load(sys.stdin)["packages"] if p["name"]=="tool"][0])')
mv "repo/$obj" "repo/$obj.gone"
sleep 1
eq update >/dev/null 2>&1 && fail "update without the object succeeded"
doc "status, with an install error" eqota-status-1.schema.json eq status --json
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["install_error"]["attempts"] == 1, d' "$w/doc.json" &&
  pass "status: the install error and its backoff" || fail "install error: $(cat "$w/doc.json")"

# Fleet policy (docs/fleet.md): a hold, then a staged rollout this device
# is not in, then a halted one. The object is back, so only policy stops it.
mv "repo/$obj.gone" "repo/$obj"
future=$(date -u -d '+2 days' +%Y-%m-%dT%H:%M:%SZ)
eq hold --until "$future" >/dev/null || fail "hold --until"
doc "check, held" eqota-check-1.schema.json eq check --json
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["deferred"] == "held" and d["hold"]["by"] == "command", d' \
  "$w/doc.json" && pass "check: the hold defers the release" || fail "check held: $(cat "$w/doc.json")"
doc "status, held" eqota-status-1.schema.json eq status --json
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["hold"]["until"] > 0 and d["pin"] is None, d' \
  "$w/doc.json" && pass "status: the hold" || fail "status held: $(cat "$w/doc.json")"
eq hold --off >/dev/null || fail "hold --off"
"$gen" -q rollout --repo repo --board tb --channel stable --percent 0 --key T1.key --trusted-root pinned.root.json >/dev/null || fail "rollout --percent 0"
sleep 1
doc "check, out of the rollout" eqota-check-1.schema.json eq check --json
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["deferred"] == "rollout" and d["rollout"] == {"percent": 0, "halted": False, "selected": False} and d["hold"] is None, d' \
  "$w/doc.json" && pass "check: out of a 0 % rollout" || fail "check rollout: $(cat "$w/doc.json")"
"$gen" -q rollout --repo repo --board tb --channel stable --percent 100 --halt --key T1.key --trusted-root pinned.root.json >/dev/null || fail "rollout --halt"
sleep 1
doc "check, halted" eqota-check-1.schema.json eq check --json
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["deferred"] == "halted" and d["rollout"]["halted"], d' \
  "$w/doc.json" && pass "check: a halted rollout" || fail "check halted: $(cat "$w/doc.json")"
doc "status, halted rollout" eqota-status-1.schema.json eq status --json
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["rollout"]["halted"] and d["rollout"]["number"] == 3, d' \
  "$w/doc.json" && pass "status: the rollout of the last timestamp" || fail "status rollout: $(cat "$w/doc.json")"

# Legacy mode: trust is null.
l=$w/l
simdevice_make "$l" "$HTTPD_URL/legacy" tb "$w/L1.pub" repository.retries=0
EQ_TEST_BOOT_ID_FILE=$l/boot_id "$eqota" --config "$l/eqota.conf" provision --slot A >/dev/null 2>&1 || fail "legacy provision"
"$simboot" --env "$l/bootenv" --cmdline "$l/cmdline" >/dev/null
doc "status, legacy mode" eqota-status-1.schema.json "$eqota" --config "$l/eqota.conf" status --json

# ---- eqota-gen
doc "diff r1 -> r2" eqota-gen-diff-1.schema.json "$gen" diff --repo repo --board tb --channel stable --from r1 --to r2 --json
doc "show" eqota-gen-manifest-1.schema.json "$gen" show --repo repo --board tb --channel stable --json
doc "show --release r1" eqota-gen-manifest-1.schema.json "$gen" show --repo repo --board tb --channel stable --release r1 --json
doc "equiv import" eqota-gen-equiv-import-1.schema.json "$gen" equiv import --repo repo --root repo/root/1.root.json \
  --store "$w/imported.db" --json

# The fleet summary, over reports as the collector stores them for a device
# with a client certificate ("auth"), one without, and one bad line; the
# installs say how many of their bytes were image components.
python3 - "$w/reports.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i, (ev, to, why) in enumerate([("installed", 2, None), ("committed", 2, None), ("installed", 3, None),
                                       ("rolled_back", 3, "health check failed")]):
        f.write(json.dumps({"schema": "eqota-report/1", "time": 1796515200 + i, "device": "ab" * 16, "board": "tb",
                            "channel": "stable", "event": ev, "from": {"release": "r1", "number": 1},
                            "to": {"release": "r%d" % to, "number": to}, "reason": why, "bytes": 100,
                            "seconds": 1.0, "agent": "0.1.0", "auth": "device-1",
                            **({"component_bytes": 40} if ev == "installed" else {})}) + "\n")
    f.write(json.dumps({"schema": "eqota-report/1", "time": 1796515300, "device": "cd" * 16, "board": "tb",
                        "channel": "stable", "event": "committed", "from": None,
                        "to": {"release": "r3", "number": 3}, "reason": None, "bytes": 0}) + "\n")
    f.write("not a report\n")
PY
doc "fleet" eqota-gen-fleet-1.schema.json "$gen" fleet --reports "$w/reports.jsonl" --json
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert sum(r["component_bytes_total"] for c in d["channels"] for r in c["releases"]) == 80, d' \
  "$w/doc.json" && pass "fleet: the image components' bytes of the reports that carry them" || fail "fleet components: $(cat "$w/doc.json")"

# image-check on a tiny root filesystem: the packages' entries, one of
# them edited (an override), one package whose file the image lacks
# (missing), and files, an empty file and a symlink only the image has.
mkdir -p p-img
tarpkg p-img/base_1.tar usr/share/base/data "base 1"
tarpkg p-img/tool_1.tar usr/share/tool/data "tool 1"
tarpkg p-img/gone_1.tar usr/share/gone/data "gone 1"
"$py" - "$w/rootfs.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    def add(name, kind=tarfile.DIRTYPE, body=b"", mode=0o755, link=""):
        i = tarfile.TarInfo(name)
        i.type, i.mode, i.size, i.linkname = kind, mode, len(body), link
        t.addfile(i, io.BytesIO(body))
    for d in ("usr", "usr/share", "usr/share/base", "usr/share/tool", "etc"):
        add(d)
    add("usr/share/base/data", tarfile.REGTYPE, b"base 1", 0o644)
    add("usr/share/tool/data", tarfile.REGTYPE, b"tool 1, edited", 0o644)
    add("etc/passwd", tarfile.REGTYPE, b"root:x:0:0:root:/root:/bin/sh\n", 0o644)
    add("etc/machine-id", tarfile.REGTYPE, b"", 0o444)
    add("etc/base", tarfile.SYMTYPE, link="../usr/share/base")
PY
doc "image-check" eqota-gen-image-check-1.schema.json "$gen" image-check --image rootfs.tar --packages p-img --json
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["overrides"] == [{"path": "usr/share/tool/data", "package": "tool"}] and {"path": "usr/share/gone/data", "package": "gone"} in d["missing"] and d["from_image"] == d["entries"] - d["from_packages"] == sum(v for k, v in d["classes"].items() if k != "package"), d' \
  "$w/doc.json" && pass "image-check: the override and the missing entry listed" || fail "image-check: $(cat "$w/doc.json")"

# diff between two image releases (format 2): the components' entries and
# totals. Its document is the one the strictness check below takes.
mkdir -p p-imgrel
tarpkg p-imgrel/base_1.tar usr/share/base/data "base 1"
for v in 1 2; do
  "$py" - "$w/img$v.tar" "$v" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    for name, body in (("usr", None), ("usr/share", None), ("usr/share/base", None), ("usr/share/base/data", b"base 1"),
                       ("etc", None), ("etc/conf", b"conf %s\n" % sys.argv[2].encode())):
        i = tarfile.TarInfo(name)
        i.type, i.mode = (tarfile.DIRTYPE, 0o755) if body is None else (tarfile.REGTYPE, 0o644)
        i.size = len(body or b"")
        t.addfile(i, io.BytesIO(body or b""))
PY
  "$gen" -q publish --repo imgrepo --board tb --channel stable --release "i$v" --packages p-imgrel --image "img$v.tar" \
    --key K1.key --store imgrepo.db --level 1 >/dev/null || fail "publish image release i$v"
done
doc "diff i1 -> i2, image releases" eqota-gen-diff-1.schema.json "$gen" diff --repo imgrepo --board tb --channel stable \
  --from i1 --to i2 --json
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["totals"]; assert any(p["component"] for p in d["packages"]) and t["components_changed"] >= 1 and t["component_bytes"] > 0 and t["package_bytes"] + t["component_bytes"] == t["download_bytes"], d' \
  "$w/doc.json" && pass "diff: image components apart from packages" || fail "diff image: $(cat "$w/doc.json")"

# ---- strictness: a document with a field more, or one less, is refused
for s in eqota-status-1 eqota-check-1 eqota-verify-1 eqota-gen-diff-1 eqota-gen-manifest-1 eqota-gen-equiv-import-1 eqota-gen-fleet-1 \
  eqota-gen-image-check-1; do
  f=$w/last-$s.schema.json
  [ -f "$f" ] || { fail "no document was taken for $s"; continue; }
  out=$("$py" - "$schemas/$s.schema.json" "$f" <<'PY' 2>&1
import copy, json, sys, jsonschema
v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
doc = json.load(open(sys.argv[2]))
more = copy.deepcopy(doc); more["undeclared"] = 1
assert not v.is_valid(more), "a document with an undeclared field was accepted"
for k in doc:
    less = copy.deepcopy(doc); del less[k]
    assert not v.is_valid(less), "a document without %r was accepted" % k
print("ok")
PY
  ) && pass "$s: refuses an undeclared field and a missing one" || fail "$s: $out"
done

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all JSON documents valid against their schemas"
