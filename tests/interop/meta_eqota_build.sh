#!/usr/bin/env bash
# meta-eqota in a real OpenEmbedded-Core build, offline: BitBake
# (EQ_BITBAKE_DIR) and OE-Core (EQ_OECORE_DIR) build a one-package image
# (tests/interop/meta-eqtest) that inherits meta-eqota's class, and
# `bitbake -c eqota_publish` publishes it in image mode: the deployed tar
# of the rootfs with its packages. Native tools come from the host (Debian's
# pseudo, dpkg and apt); nothing is downloaded. BitBake runs as an
# unprivileged user (eqota-bb when started as root). About 3 to 5 minutes.
# Usage: meta_eqota_build.sh EQOTA_GEN SOURCE_DIR
set -euo pipefail
gen=$1 src=$2
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
# shellcheck source=tests/interop/lib/oe.sh
. "$src/tests/interop/lib/oe.sh"
oe_need_trees
oe_need_tools "the offline build" "pseudo apt-utils chrpath diffstat gawk wget cpio file lz4 zstd" \
  pseudo dpkg-deb dpkg apt-get apt-ftparchive chrpath diffstat gawk wget cpio file lz4c zstd perl python3 git patch tar xz bzip2 gzip
pseudo_lib=$(dirname "$(find /usr/lib -path '*/pseudo/libpseudo.so' -print -quit 2>/dev/null)")
[ "$pseudo_lib" != . ] || skip "no libpseudo.so under /usr/lib (Debian: apt-get install pseudo)"
oe_need_locale

oe_setup eq-ocbuild "$EQ_BITBAKE_DIR" "$EQ_OECORE_DIR" "$src/meta-eqota" "$src/tests/interop/meta-eqtest"
bb() { as_user timeout 900 env -i HOME="$w" PATH="$w/bin:$EQ_BITBAKE_DIR/bin:$EQ_OECORE_DIR/scripts:/usr/bin:/bin" \
  LANG=en_US.UTF-8 nice -n 19 bash -c "cd '$w/build' && $*"; }
git --git-dir="$EQ_BITBAKE_DIR/.git" log -1 --format='bitbake %H' 2>/dev/null || true
git --git-dir="$EQ_OECORE_DIR/.git" log -1 --format='openembedded-core %H' 2>/dev/null || true

# eqota-gen-native would be built from downloaded sources: the host's
# eqota-gen (the one under test) comes in through HOSTTOOLS instead.
mkdir -p "$w/bin" "$w/build/conf"
cp "$gen" "$w/bin/eqota-gen"
"$w/bin/eqota-gen" keygen --out "$w/release" >/dev/null
cat > "$w/build/conf/bblayers.conf" <<EOF
BBPATH = "\${TOPDIR}"
BBFILES ?= ""
BBLAYERS = "$EQ_OECORE_DIR/meta $src/tests/interop/meta-eqtest $src/meta-eqota"
EOF
cat > "$w/build/conf/local.conf" <<EOF
MACHINE = "qemux86-64"
DISTRO = ""
PACKAGE_CLASSES = "package_deb"
TMPDIR = "\${TOPDIR}/tmp"
DL_DIR = "\${TOPDIR}/downloads"
SSTATE_DIR = "\${TOPDIR}/sstate"
BB_NO_NETWORK = "1"
BB_NUMBER_THREADS = "1"
BB_NUMBER_PARSE_THREADS = "2"
BB_SIGNATURE_HANDLER = "OEEquivHash"
BB_HASHSERVE = "auto"
BB_HASHSERVE_DB_DIR = "\${TOPDIR}/hashserv"
# Only the test layer's and meta-eqota's recipes are parsed.
BBMASK = "$EQ_OECORE_DIR/meta/recipes-"
# uninative is a downloaded tarball.
INHERIT_DISTRO:remove = "uninative"
# Native and cross tools that would be built from downloaded sources come
# from the host, or are not needed by an allarch data package and a tar image.
ASSUME_PROVIDED += "quilt-native patch-replacement-native virtual/fakeroot-native pseudo-native \\
    rpm-native dwarfsrcfiles-native file-native dpkg-native binutils-cross-allarch \\
    virtual/kernel xz-native zstd-native tar-replacement-native cross-localedef-native depmodwrapper-cross \\
    makedevs-native virtual/update-alternatives-native update-rc.d-native apt-native \\
    qemu-system-native qemu-helper-native eqota-gen-native"
HOSTTOOLS += "dpkg-deb dpkg dpkg-query dpkg-split dpkg-divert dpkg-trigger apt-get apt-ftparchive pseudo eqota-gen"
INHERIT += "eqtest-hosttools"
# The per-file dependency scan runs rpm-native's rpmdeps.
SKIP_FILEDEPS = "1"
# Debian's pseudo as OE's fakeroot. It predates PSEUDO_INCLUDE_PATHS, so it
# gets the paths to leave alone (OE-Core's list from before it switched to
# an include list, and the image's work folders); without them it tracks
# stamps and sstate files too and aborts on a reused inode.
PSEUDO_SYSROOT = ""
FAKEROOTCMD = "/usr/bin/pseudo"
PSEUDO_IGNORE_PATHS = "/usr/,/etc/,/lib,/dev/,/run/,\${T},\${WORKDIR}/recipe-sysroot,\${SSTATE_DIR},\${STAMPS_DIR}"
PSEUDO_IGNORE_PATHS .= ",\${TMPDIR}/sstate-control,\${TMPDIR}/buildstats,\${TMPDIR}/sysroots-components,\${TMPDIR}/pkgdata"
PSEUDO_IGNORE_PATHS .= ",\${WORKDIR}/deploy-,\${WORKDIR}/sstate-build-package_,\${WORKDIR}/sstate-install-package_,\${WORKDIR}/pkgdata-sysroot"
PSEUDO_IGNORE_PATHS .= ",\${DEPLOY_DIR},\${TOPDIR}/cache,\${COREBASE}/scripts,\${S},\${B}"
PSEUDO_IGNORE_PATHS .= ",\${WORKDIR}/intercept_scripts,\${WORKDIR}/oe-rootfs-repo,\${WORKDIR}/sstate-build-image_complete"
BB_BASEHASH_IGNORE_VARS:append = " PSEUDO_IGNORE_PATHS"
FAKEROOTBASEENV = "PSEUDO_BINDIR=/usr/bin PSEUDO_LIBDIR=$pseudo_lib PSEUDO_PREFIX=/usr PSEUDO_IGNORE_PATHS=\${@oe.path.canonicalize(d.getVar('PSEUDO_IGNORE_PATHS'))} PSEUDO_DISABLED=1 PYTHONDONTWRITEBYTECODE=1"
FAKEROOTENV = "PSEUDO_PREFIX=/usr PSEUDO_LOCALSTATEDIR=\${PSEUDO_LOCALSTATEDIR} PSEUDO_PASSWD=\${PSEUDO_PASSWD} PSEUDO_NOSYMLINKEXP=1 PSEUDO_IGNORE_PATHS=\${@oe.path.canonicalize(d.getVar('PSEUDO_IGNORE_PATHS'))} PSEUDO_DISABLED=0"

EQOTA_REPO = "$w/repo"
EQOTA_SIGNING_KEY = "$w/release.key"
EQOTA_BOARD = "eqtest"
EQOTA_RELEASE = "1"
EOF
chown -R "$user" "$w"

t0=$(date +%s)
if out=$(bb "bitbake eqtest-image" 2>&1); then
  pass "bitbake eqtest-image builds offline ($(( $(date +%s) - t0 )) s)"
else
  fail "bitbake eqtest-image (the host tweaks may need updating for this OE-Core): $(grep -v '^NOTE: Running' <<<"$out" | tail -30)"
  echo "meta_eqota_build: $fails failed"
  exit 1
fi
deploy=$w/build/tmp/deploy/images/qemux86-64
tarball=$deploy/eqtest-image-qemux86-64.rootfs.tar
[ -f "$tarball" ] && pass "image mode: the class made OE write the rootfs tar (IMAGE_FSTYPES was empty)" ||
  fail "no $tarball: $(ls "$deploy")"
listing=$(tar --numeric-owner -tvf "$tarball" 2>&1 || true)
grep -Eq '^-rw-r--r-- 0/0 .* \./usr/share/eqtest/eqtest\.txt$' <<<"$listing" &&
  grep -Eq '^drwxr-x--- 1234/1234 .* \./home/eqtest/?$' <<<"$listing" &&
  pass "the tar has the owners pseudo recorded (root, and 1234 for the image's own folder)" ||
  fail "owners in the tar: $(grep -E 'eqtest' <<<"$listing")"
index=$deploy/eqtest-image-qemux86-64.rootfs.eqota-index
grep -Eq '^eqtest-data [0-9a-f]{64}$' "$index" && pass "the build index maps the package to its taskhash" ||
  fail "index: $(cat "$index" 2>&1)"

# Image mode needs an eqota-gen whose publish takes --image; until then the
# packages are published alone, and the class's image command line is
# checked by interop.meta_eqota_class.
image_mode=1
"$w/bin/eqota-gen" publish --help 2>&1 | awk '/^  [a-z]/ { p = ($1 == "publish") } p' | grep -q -- '--image' ||
  image_mode=0
if [ "$image_mode" = 0 ]; then
  echo "SKIP: publishing in image mode: this eqota-gen's publish has no --image yet; the packages alone instead"
  echo 'EQOTA_IMAGE_MODE = "0"' >> "$w/build/conf/local.conf"
fi
if out=$(bb "bitbake eqtest-image -c eqota_publish" 2>&1); then
  pass "bitbake -c eqota_publish publishes in a fresh build folder: $(grep -E '^(published|image:)' <<<"$out")"
else
  fail "eqota_publish: $(grep -v '^NOTE: Running' <<<"$out" | tail -30)"
fi
log=$(find "$w/build/tmp/work" -path '*/eqtest-image/*/temp/log.do_eqota_publish' 2>/dev/null | head -1)
if [ "$image_mode" = 1 ]; then
  grep -q -- "--image $tarball" "$log" && pass "the task gave eqota-gen the deployed tar (--image)" ||
    fail "task log: $(grep 'eqota-gen publish' "$log")"
fi
m=$w/repo/boards/eqtest/stable/manifest.json
if python3 - "$m" "$image_mode" <<'EOF'
import json, sys
try:
    m = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print(e)
    sys.exit(1)
names = [p["name"] for p in m["packages"]]
want = 2 if sys.argv[2] == "1" else 1
ok = m.get("format") == want and "eqtest-data" in names and (("image" in m) == (want == 2))
if want == 2:
    ok = ok and isinstance(m["image"], dict) and any(n.startswith("eqota-image") for n in names)
print(("" if ok else "not ") + "format %s, packages %s" % (m.get("format"), " ".join(names)))
sys.exit(0 if ok else 1)
EOF
then
  pass "the manifest is format $([ "$image_mode" = 1 ] && echo "2 with an image object and image components" || echo 1)"
else
  fail "manifest $m"
fi
verify=$("$w/bin/eqota-gen" verify --repo "$w/repo" --board eqtest --channel stable --key "$w/release.pub" --deep 2>&1) &&
  pass "eqota-gen verify --deep passes" || fail "verify: $verify"

echo "meta_eqota_build: $fails failed"
[ "$fails" -eq 0 ]
