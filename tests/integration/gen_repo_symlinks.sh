#!/usr/bin/env bash
# eqota-gen follows no symbolic link inside a repository: with objects/,
# deltas/, boards/, a release folder or root/ replaced by a link to a
# folder outside (holding a canary, as the folder of a signing key would),
# prune, publish, promote, timestamp and root rotate refuse, naming the
# link, and the outside folder is left exactly as it was. Put back, the
# repository publishes and prunes again.
# Usage: gen_repo_symlinks.sh EQOTA_GEN
set -euo pipefail
gen=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
export XDG_CACHE_HOME=$w/cache

# shellcheck source=tests/integration/lib/tarpkg.sh
. "$src/tests/integration/lib/tarpkg.sh"
for v in 1 2 3; do tarpkg_pair "s$v" "$v"; done
for k in R K T; do "$gen" keygen --out "$k" >/dev/null; done
"$gen" root init --repo repo --key R.key --root-pub R.pub --release-pub K.pub --timestamp-pub T.pub >/dev/null
# The operator's pin, kept outside the repository (docs/eqota-gen.md).
cp repo/root/1.root.json pinned.root.json
pub() { "$gen" -q publish --repo repo --board b --key K.key --timestamp-key T.key --trusted-root pinned.root.json --store s.db --level 3 \
  --channel "$1" --release "$2" --packages "$3"; }
pub stable r1 s1 >/dev/null
pub stable r2 s2 >/dev/null
[ -n "$(ls repo/deltas)" ] || { fail "setup: no deltas published"; exit 1; }

snap() { (cd "$1" && find . -print0 | sort -z | xargs -0 ls -ld --time-style=+%s | awk '{print $1, $5, $6, $7}' &&
  find . -type f -print0 | sort -z | xargs -0 -r sha256sum); }

# link SUB: repo/SUB becomes a link to outside/, which holds SUB's files
# and a canary; unlink puts the real folder back.
link() {
  rm -rf outside && mkdir outside && cp -a "repo/$1/." outside/ && echo secret >outside/canary.key
  mv "repo/$1" real && ln -s "$w/outside" "repo/$1"
  touch -d '2 days ago' outside/canary.key
  before=$(snap outside)
}
unlink_() { rm "repo/$1" && mv real "repo/$1"; }
untouched() {
  if [ -f outside/canary.key ] && [ "$(snap outside)" = "$before" ]; then pass "$1: the folder outside is untouched"
  else fail "$1: the folder outside changed:"; diff <(echo "$before") <(snap outside) || true; fi
}

for sub in objects deltas boards boards/b/stable/releases/1; do
  link "$sub"
  expect_fail "prune with $sub a link" "'repo/$sub' is a symbolic link inside the repository" \
    "$gen" prune --repo repo --keep 1 --grace-hours 0
  untouched "prune with $sub a link"
  expect_fail "publish with $sub a link" "'repo/$sub' is a symbolic link inside the repository" pub stable r3 s3
  untouched "publish with $sub a link"
  expect_fail "promote with $sub a link" "'repo/$sub' is a symbolic link inside the repository" \
    "$gen" -q promote --repo repo --board b --from-channel stable --release r2 --to-channel testing --key K.key \
    --timestamp-key T.key --trusted-root pinned.root.json
  untouched "promote with $sub a link"
  expect_fail "timestamp with $sub a link" "'repo/$sub' is a symbolic link inside the repository" \
    "$gen" timestamp --repo repo --board b --channel stable --key T.key --trusted-root pinned.root.json
  untouched "timestamp with $sub a link"
  unlink_ "$sub"
done

link root
expect_fail "root rotate with root a link" "'repo/root' is a symbolic link inside the repository" \
  "$gen" root rotate --repo repo --key R.key --release-pub K.pub --release-pub T.pub --trusted-root pinned.root.json
untouched "root rotate with root a link"
unlink_ root

# A link to a file: the lock file pointing at the key.
cp K.key K.key.orig
ln -sf "$w/K.key" repo/.publish.lock
expect_fail "publish with .publish.lock a link" ".publish.lock" pub stable r3 s3
cmp -s K.key K.key.orig && pass "the key the lock file pointed at is unchanged" || fail "K.key changed"
rm repo/.publish.lock

# What eqota-gen does not write may be a link (another repository served
# beside this one); it is left alone.
mkdir other && echo other >other/canary && ln -s "$w/other" repo/other
# Back to folders: everything works again.
if pub stable r3 s3 >/dev/null && out=$("$gen" prune --repo repo --keep 1 --grace-hours 0) &&
  grep -q "^removed 2 releases" <<<"$out" && [ -f other/canary ]; then
  pass "with the folders back, publish and prune work; a link beside them is left alone"
else fail "after the links: ${out:-publish failed}"; fi
[ "$fails" -eq 0 ]
