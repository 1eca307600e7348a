#!/usr/bin/env bash
# A damaged running slot (issue 17, "Full disks and damaged slots"): bit rot
# in a kept package's file, a deleted file, a lost record. `eqota verify`
# names each damaged package and what differs (exit 1; 0 on a clean slot,
# in text and JSON), and the next update downloads those packages instead
# of copying a bad file, so the new slot verifies clean.
# Usage: agent_verify.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
. "$4/tests/integration/lib/agent-test.sh" agent_verify "$@"

"$gen" keygen --out k >/dev/null
pub() { # RELEASE APP_VERSION
  mkdir -p "p$1"
  tarpkg "p$1/base_1.tar" usr/share/base/data "base data that rots"
  tarpkg "p$1/tool_1.tar" usr/bin/tool "#!/bin/sh\necho tool"
  tarpkg "p$1/extra_1.tar" usr/share/extra/notes "extra notes"
  tarpkg "p$1/app_$2.tar" usr/share/app/version "app $2"
  "$gen" -q publish --repo repo --board b --channel stable --release "r$1" --packages "p$1" --key k.key \
    --store repo.db --level 1 >/dev/null
}
pub 1 1
mkdir -p logs
httpd_start "$w/repo" "$w/logs"
d=$w/dev
simdevice_make "$d" "$HTTPD_URL" b "$w/k.pub" repository.retries=0
eq() { simdevice_eq "$d" "$eqota" "$@"; }
eq provision --slot A >/dev/null 2>&1
simdevice_boot "$d" "$simboot"

out=$(eq verify) && grep -q "4 packages, .* every file matches its record" <<<"$out" &&
  pass "a clean slot verifies: $out" || fail "clean: $out"

# ---- damage: a flipped byte (same size), a deleted file, a lost record
python3 - "$d/A/usr/share/base/data" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[3] ^= 0x01
open(p, "wb").write(bytes(b))
PY
rm "$d/A/usr/bin/tool"
rm "$d/A/usr/lib/eqota/slot/packages/extra.files"
rc=0; out=$(eq verify 2>&1) || rc=$?
echo "$out"
[ $rc -eq 1 ] && grep -q "usr/share/base/data: content differs from the record" <<<"$out" &&
  grep -q "usr/bin/tool: missing" <<<"$out" && grep -q "package extra:" <<<"$out" &&
  grep -q "3 packages differ from their records (3 problems)" <<<"$out" && ! grep -q "package app:" <<<"$out" &&
  pass "verify names the 3 damaged packages and what differs (exit 1)" || fail "damaged: exit $rc"
eq verify --json >"$w/v.json" || true
python3 - "$w/v.json" <<'PY' && pass "verify --json says the same" || fail "verify --json: $(cat "$w/v.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "eqota-verify/1" and d["damaged_packages"] == 3 and d["packages"] == 4, d
probs = {p["package"]: [q["problem"] for q in p["problems"]] for p in d["damaged"]}
assert probs["base"] == ["content differs from the record"] and probs["tool"] == ["missing"], probs
assert probs["extra"][0].startswith("its record:"), probs
PY

# ---- the next update downloads what the slot no longer holds
pub 2 2
rc=0; out=$(eq update 2>&1) || rc=$?
echo "$out" | tail -2
[ $rc -eq 3 ] && grep -q "3 fell back to full objects" <<<"$out" &&
  pass "update: the 3 damaged packages were downloaded, not copied" || fail "update: exit $rc"
simdevice_boot "$d" "$simboot"
eq mark-good >/dev/null 2>&1
out=$(eq verify) && grep -q "every file matches its record" <<<"$out" && grep -q "slot B" <<<"$out" &&
  pass "the new slot verifies clean" || fail "new slot: $out"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "a damaged slot is found and not copied"
