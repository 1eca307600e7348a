#!/usr/bin/env bash
# A root planted in the repository (issue 29, finding 3). Someone who can
# write the repository tree (a web host, a bucket CI syncs from) but holds
# no key replaces root/1.root.json with a root whose release role lists
# their key beside the genuine one, and testing's release with one they
# signed. Every signing command starts from the root the operator pinned
# (--trusted-root, a copy kept outside the repository or its SHA-256), so:
#   - promote refuses, naming the file and both hashes, and stable keeps
#     its release; so do publish, timestamp, rollout and root rotate;
#   - without a pin, a repository with a root is refused, saying how to pin;
#   - promote re-signs only a source its own key (--key) signed, not one
#     signed by another key the genuine root lists;
#   - verify --root FILE --release R checks R against the chain from FILE.
# Usage: gen_planted_root.sh EQOTA_GEN SOURCE_DIR
set -euo pipefail
gen=$1 src=$2
. "$src/tests/integration/lib/tarpkg.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to build the test packages"; exit 77; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
export XDG_CACHE_HOME=$w/cache
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
must_fail() { # NAME CMD...: must fail; its output in $out
  local name=$1; shift
  if out=$("$@" 2>&1); then fail "$name: succeeded: $out"; return 1; fi
  pass "$name"
}
has() { # NAME SUBSTRING: $out names it
  grep -qF -- "$2" <<<"$out" && pass "$1" || fail "$1: '$2' not in: $out"
}

# R roots, K releases (the operator), C releases too (CI's key), T
# timestamps; AR and A are the attacker's.
for k in R K C T AR A; do "$gen" keygen --out "$k" >/dev/null; done
B=tb
pkgs() { mkdir -p "$1"; tarpkg "$1/hello_$2.tar" usr/bin/hello "hello $2"; }
pub() { # REPO CHANNEL RELEASE KEY PIN [OPTIONS]
  local repo=$1 ch=$2 rel=$3 key=$4 pin=(${5:+--trusted-root "$5"}); shift 5
  pkgs "p-$rel" "$rel"
  "$gen" -q publish --repo "$repo" --board $B --channel "$ch" --release "$rel" --packages "p-$rel" --key "$key" \
    --store "$repo.db" --level 1 --timestamp-key T.key "${pin[@]}" "$@"
}

ok "root init" "$gen" root init --repo repo --key R.key --root-pub R.pub --release-pub K.pub --release-pub C.pub \
  --timestamp-pub T.pub
sha=$(sha256sum repo/root/1.root.json | cut -c1-64)
has "root init prints the SHA-256 to pin" "$sha"
mkdir -p pins && cp repo/root/1.root.json pins/root.json # the operator's copy, outside the repository
cp repo/root/1.root.json.sig pins/root.json.sig          # what a device installs, for verify --root

must_fail "publish without a pin in a repository with a root" pub repo stable r1 K.key "" &&
  has "the refusal says how to pin" "--trusted-root"
[ ! -e repo/boards/$B/stable/manifest.json ] && pass "nothing published without a pin" || fail "published without a pin"
ok "publish pinned by a file" pub repo stable r0 K.key pins/root.json
ok "publish pinned by the SHA-256" pub repo testing r1 K.key "$sha"
ok "publish testing r2" pub repo testing r2 K.key pins/root.json
ok "promote r1, pinned" "$gen" promote --repo repo --board $B --from-channel testing --release r1 --to-channel stable \
  --key K.key --timestamp-key T.key --trusted-root pins/root.json --level 1

# ---- a source signed by another key of the release role (C), not the operator's (K)
ok "CI publishes testing r3 with C" pub repo testing r3 C.key pins/root.json
must_fail "promote of a release the operator's key did not sign" "$gen" promote --repo repo --board $B \
  --from-channel testing --release r3 --to-channel stable --key K.key --trusted-root pins/root.json --level 1 &&
  has "the refusal names the key" "not signed by the key given (--key K.key)"
grep -q '"release": "r3"' repo/boards/$B/stable/manifest.json && fail "stable got r3" || pass "stable does not get r3"

# ---- the attacker builds a planted root and a testing r2 of their own in a
# copy, then writes them over the repository: no key of the operator's used
cp -a repo evil
rm -rf evil/root evil/boards/$B/testing/releases/2 evil/boards/$B/testing/releases/3 evil/boards/$B/testing/.publish*
"$gen" root init --repo evil --key AR.key --root-pub AR.pub --release-pub K.pub --release-pub A.pub \
  --timestamp-pub T.pub >/dev/null
pkgs p-evil evil
"$gen" -q publish --repo evil --board $B --channel testing --release r2 --packages p-evil --key A.key \
  --store evil.db --level 1 --trusted-root evil/root/1.root.json >/dev/null 2>&1
rm -rf repo/root repo/boards/$B/testing/releases/2
cp -a evil/root repo/root
cp -a evil/boards/$B/testing/releases/2 repo/boards/$B/testing/releases/2
cp -an evil/objects/. repo/objects/
planted=$(sha256sum repo/root/1.root.json | cut -c1-64)
[ "$planted" != "$sha" ] && pass "the repository now has a planted root" || fail "no planted root"
cp repo/boards/$B/stable/manifest.json stable.before

promote() { "$gen" promote --repo repo --board $B --from-channel testing --release r2 --to-channel stable \
  --key K.key --level 1 "$@"; }
must_fail "promote of the planted release, pinned" promote --trusted-root pins/root.json &&
  has "promote names the root file" "repo/root/1.root.json has SHA-256 $planted" &&
  has "promote names the pinned hash" "has SHA-256 $sha"
must_fail "promote of the planted release, pinned by the SHA-256" promote --trusted-root "$sha" &&
  has "the message names both hashes" "$planted, the trusted root (--trusted-root $sha) has SHA-256 $sha"
must_fail "promote of the planted release without a pin" promote && has "it says how to pin" "--trusted-root"
cmp -s stable.before repo/boards/$B/stable/manifest.json && pass "stable keeps its release" ||
  fail "stable changed: $(grep '"release"' repo/boards/$B/stable/manifest.json)"
grep -rq "hello evil" repo/boards/$B/stable 2>/dev/null && fail "evil on stable" || true
# verify --root checks an older release against the chain from the
# installed root, not from the repository's own root/1
must_fail "verify --release of the planted release" "$gen" verify --repo repo --board $B --channel testing \
  --root pins/root.json --release r2 && has "verify names the unknown key" "signed by unknown key"

# ---- every other signing command refuses the planted root too
must_fail "publish in the planted repository" pub repo stable r9 K.key pins/root.json && has "publish names both" "$planted"
must_fail "timestamp in the planted repository" "$gen" timestamp --repo repo --board $B --channel testing --key T.key \
  --trusted-root pins/root.json && has "timestamp names both" "$planted"
must_fail "rollout in the planted repository" "$gen" rollout --repo repo --board $B --channel stable --percent 50 \
  --key T.key --trusted-root pins/root.json && has "rollout names both" "$planted"
must_fail "root rotate in the planted repository" "$gen" root rotate --repo repo --key R.key --expires 100 \
  --trusted-root pins/root.json && has "root rotate names both" "$planted"
[ ! -e repo/root/2.root.json ] && pass "no root 2 written" || fail "root 2 written over the planted root"
cmp -s stable.before repo/boards/$B/stable/manifest.json && pass "stable still keeps its release" || fail "stable changed"

# ---- a pin given for a repository whose root was removed is refused, not
# taken for a repository that never had one
rm -rf repo/root
must_fail "publish pinned in a repository whose root is gone" pub repo stable r9 K.key pins/root.json &&
  has "it names the missing file" "root/1.root.json is missing"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
