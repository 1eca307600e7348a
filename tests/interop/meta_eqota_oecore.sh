#!/usr/bin/env bash
# meta-eqota in a real OpenEmbedded-Core build folder: BitBake
# (EQ_BITBAKE_DIR) parses oe-core (EQ_OECORE_DIR) with meta-eqota added,
# and `bitbake -e` shows what the layer sets (image mode included). BitBake
# refuses to run as root, so it runs as an unprivileged user this test
# creates (eqota-bb).
# Parse only: nothing is fetched or built.
# Usage: meta_eqota_oecore.sh SOURCE_DIR
set -euo pipefail
src=$1
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
# shellcheck source=tests/interop/lib/oe.sh
. "$src/tests/interop/lib/oe.sh"
oe_need_trees
# The host tools OE-Core's base class links into its HOSTTOOLS folder.
oe_need_tools OE-Core "chrpath diffstat gawk wget cpio file lz4 zstd" \
  chrpath diffstat gawk wget cpio file lz4c zstd pzstd perl python3 git patch tar xz bzip2 gzip
oe_need_locale

# The trees must be readable by the user; the build folder is theirs.
oe_setup eq-oecore "$EQ_BITBAKE_DIR" "$EQ_OECORE_DIR" "$src/meta-eqota"
mkdir -p "$w/build/conf"
cat > "$w/build/conf/bblayers.conf" <<EOF
BBPATH = "\${TOPDIR}"
BBFILES ?= ""
BBLAYERS = "$EQ_OECORE_DIR/meta $src/meta-eqota"
EOF
cat > "$w/build/conf/local.conf" <<EOF
MACHINE = "qemux86-64"
DL_DIR = "$w/downloads"
SSTATE_DIR = "$w/sstate"
TMPDIR = "$w/tmp"
IMAGE_CLASSES += "eqota"
EQOTA_REPO = "$w/repo"
EQOTA_SIGNING_KEY = "/secure/release.key"
EQOTA_SERVER_URL = "https://updates.example.com/eqota"
EQOTA_PUBLIC_KEY = "$w/release.pub"
EQOTA_SLOT_A = "/dev/vda2"
EQOTA_SLOT_B = "/dev/vda3"
BB_NUMBER_PARSE_THREADS = "2"
BB_NO_NETWORK = "1"
# meta-openembedded's cjson and mbedtls stand in as "provided" (OE-Core has
# neither); the test parses, it builds nothing.
ASSUME_PROVIDED += "cjson cjson-native mbedtls mbedtls-native"
BB_HASHSERVE_DB_DIR = "\${SSTATE_DIR}"
EOF
: > "$w/release.pub"
chown -R "$user" "$w"
bb() { as_user timeout 900 env -i HOME="$w" PATH="$EQ_BITBAKE_DIR/bin:$EQ_OECORE_DIR/scripts:/usr/bin:/bin" LANG=en_US.UTF-8 \
  bash -c "cd '$w/build' && $*"; }

if out=$(bb 'bitbake -p' 2>&1); then
  pass "bitbake -p parses oe-core with meta-eqota"
else
  fail "bitbake -p: $(tail -20 <<<"$out")"
fi
env_of() { bb "bitbake -e $1" 2>&1 || true; }
e=$(env_of eqota)
grep -q '^EQOTA_BOARD="qemux86-64"' <<<"$e" && pass "eqota: EQOTA_BOARD defaults to MACHINE" || fail "eqota: EQOTA_BOARD"
grep -q '^EXTERNALSRC="'"$src"'"' <<<"$e" && pass "eqota builds the sources the layer sits in" || fail "eqota: EXTERNALSRC"
grep -q '^EXTRA_OECMAKE=.*-DEQ_TEST_HOOKS=OFF.*-DEQ_HOST_TOOLS=OFF' <<<"$e" && pass "eqota: release build, agent only" ||
  fail "eqota: EXTRA_OECMAKE"
grep -q '^SYSTEMD_SERVICE:eqota="eqota.service eqota-confirm.service"' <<<"$e" && pass "eqota: the project's systemd units" ||
  fail "eqota: SYSTEMD_SERVICE"
grep -q '^EXTRA_OECMAKE=.*-DEQ_SYSTEMD_UNIT_DIR=/' <<<"$e" && pass "eqota: units installed by cmake into systemd_system_unitdir" ||
  fail "eqota: EQ_SYSTEMD_UNIT_DIR"
grep -q '^LAYERSERIES_COMPAT_eqota=".*'"$(sed -n 's/^LAYERSERIES_CORENAMES = "\(.*\)"/\1/p' "$EQ_OECORE_DIR/meta/conf/layer.conf" | awk '{print $NF}')"'.*"' <<<"$e" &&
  pass "LAYERSERIES_COMPAT_eqota names oe-core's current series" || fail "LAYERSERIES_COMPAT_eqota"
e=$(env_of eqota-gen-native)
grep -q '^DEPENDS=.*libdivsufsort-native' <<<"$e" && pass "eqota-gen-native builds against native libraries" ||
  fail "eqota-gen-native: DEPENDS"
e=$(env_of core-image-minimal)
hs=$(sed -n 's/^BB_HASHSERVE="\(.*\)"/\1/p' <<<"$e")
grep -q "^EQOTA_HASHSERV=\"$hs\"" <<<"$e" && [ -n "$hs" ] && pass "an image's EQOTA_HASHSERV is BB_HASHSERVE ($hs)" ||
  fail "EQOTA_HASHSERV: $(grep '^EQOTA_HASHSERV=' <<<"$e")"
grep -q '^python do_eqota_publish ()' <<<"$e" && grep -q 'eqota_write_index' <<<"$(grep '^ROOTFS_POSTUNINSTALL_COMMAND=' <<<"$e")" &&
  pass "core-image-minimal with IMAGE_CLASSES += eqota has do_eqota_publish and the index step" ||
  fail "core-image-minimal: eqota tasks"
# Image mode (the default): the publish reads the image's tar, so the class
# adds it to IMAGE_FSTYPES and has OE's tar keep xattrs.
grep -q '^EQOTA_IMAGE_MODE="1"' <<<"$e" && grep -qE '^IMAGE_FSTYPES="(.* )?tar( .*)?"$' <<<"$e" &&
  pass "core-image-minimal: image mode by default, its IMAGE_FSTYPES has tar" ||
  fail "image mode: $(grep -E '^(EQOTA_IMAGE_MODE|IMAGE_FSTYPES)=' <<<"$e")"
deploy=$(sed -n 's/^DEPLOY_DIR_IMAGE="\(.*\)"/\1/p' <<<"$e")
link=$(sed -n 's/^IMAGE_LINK_NAME="\(.*\)"/\1/p' <<<"$e")
grep -qx "EQOTA_IMAGE=\"$deploy/$link.tar\"" <<<"$e" && [ -n "$deploy" ] && [ -n "$link" ] &&
  pass "EQOTA_IMAGE is the deployed tar ($deploy/$link.tar)" ||
  fail "EQOTA_IMAGE: $(grep '^EQOTA_IMAGE=' <<<"$e")"
grep -q '^IMAGE_CMD_TAR=".*--xattrs --xattrs-include=' <<<"$e" && pass "image mode: OE's tar keeps xattrs" ||
  fail "IMAGE_CMD_TAR: $(grep '^IMAGE_CMD_TAR=' <<<"$e")"
tasks=$(bb "bitbake -c listtasks core-image-minimal" 2>&1 || true)
grep -q '^do_image_tar ' <<<"$tasks" && pass "image mode: bitbake lists do_image_tar for the image" ||
  fail "listtasks: no do_image_tar"
grep -q '^do_eqota_publish ' <<<"$tasks" &&
  pass "bitbake lists do_eqota_publish for the image" || fail "listtasks"

echo "meta_eqota_oecore: $fails failed"
[ "$fails" -eq 0 ]
