#!/usr/bin/env bash
# Builds the device package eqota for a QEMU test device's architecture
# with the project's own packaging (CPack, cmake/EqInstall.cmake,
# docs/packaging.md), so that the images and the test releases carry the
# package a device maker would ship: /usr/bin/eqota, the systemd units,
# the manual pages, docs and example configuration, with Depends from
# dpkg-shlibdeps plus libcurl4 and e2fsprogs.
# amd64 is built natively, arm64 with scripts/cross-arm64.sh.
#
# The same V gives the same /usr/bin/eqota bytes, even from another build
# folder: the equivalence store must recognise an unchanged program, and a
# rebuilt one (another V, which --version prints) must differ. Hence the
# path maps below and SOURCE_DATE_EPOCH for cpack.
#
# Usage: mkdeb-eqota.sh --arch amd64|arm64 --version V --out DIR [--build DIR]
#   --version  a Debian version without epoch, e.g. 0.1.0-2
#   --build    the CMake build folder (default .cache/qemu/build-eqota-ARCH)
# Prints the path of the .deb.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
usage() { sed -n '/^# Usage:/,/^#   --build/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "mkdeb-eqota: $*" >&2; exit 1; }
# shellcheck source=tests/qemu/lib/elf-deps.sh
. "$here/elf-deps.sh"

arch='' version='' out='' build=''
while [ $# -gt 0 ]; do
	case "$1" in
	--arch) arch=${2:-}; shift 2 || usage ;;
	--version) version=${2:-}; shift 2 || usage ;;
	--out) out=${2:-}; shift 2 || usage ;;
	--build) build=${2:-}; shift 2 || usage ;;
	*) usage ;;
	esac
done
[ -n "$arch" ] && [ -n "$version" ] && [ -n "$out" ] || usage
eq_triplet "$arch" >/dev/null || die "unknown architecture '$arch' (amd64 or arm64)"
# No epoch: it would need escaping in the file name and buys nothing here.
[[ $version =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "version '$version' is not a Debian version without epoch (e.g. 0.1.0-2)"
build=${build:-${EQ_CACHE_DIR:-$top/.cache}/qemu/build-eqota-$arch}
mkdir -p "$build" "$out"
build=$(cd "$build" && pwd)
out=$(cd "$out" && pwd)

# Debug info (stripped later, but hashed into the build ID first) and
# __FILE__ record absolute paths; map them to fixed names. The later map
# wins for a build folder inside the tree.
cflags="-ffile-prefix-map=$top=/usr/src/eqota -ffile-prefix-map=$build=/usr/src/eqota-build"
native=$(dpkg --print-architecture)
common=(-DCMAKE_INSTALL_PREFIX=/usr -DEQ_HOST_TOOLS=OFF -DEQ_BUILD_TESTS=OFF -DEQ_TEST_HOOKS=OFF
  "-DEQ_VERSION_STRING=$version" "-DCMAKE_C_FLAGS=$cflags")
if [ "$arch" = "$native" ]; then
	cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEQ_WERROR=ON "${common[@]}" >/dev/null
elif [ "$arch" = arm64 ]; then
	EQ_CMAKE_ARGS=$(printf '%s\n' "${common[@]}") "$top/scripts/cross-arm64.sh" "$build" >&2
else
	die "cannot build for $arch on a $native host"
fi
# Everything the package installs (the program, the compressed manual pages).
cmake --build "$build" -j"$(nproc)" >&2
bin=$build/agent/eqota
[ -x "$bin" ] || die "the build left no $bin"
[ "$(eq_elf_machine "$bin")" = "$(eq_arch_machine "$arch")" ] || die "$bin is not an $arch program ($(eq_elf_machine "$bin"))"

# DEB_HOST_ARCH makes dpkg-shlibdeps (which cpack runs) look in ARCH's
# library folders and at ARCH's shlibs and symbols files (the :arm64 -dev
# packages of the cross build installed the runtime libraries it reads).
rm -rf "$build/packages"
(cd "$build" && DEB_HOST_ARCH=$arch SOURCE_DATE_EPOCH=0 cpack -B "$build/packages" >"$build/cpack.log" 2>&1) ||
	{ cat "$build/cpack.log" >&2; die "cpack failed in $build"; }
made=$build/packages/eqota_${version}_$arch.deb
[ -f "$made" ] || die "cpack made no $made: $(ls "$build/packages")"
[ "$(dpkg-deb -f "$made" Architecture)" = "$arch" ] || die "$made is for $(dpkg-deb -f "$made" Architecture), not $arch"
# A device never gets the test hooks: with them eqota would honour
# EQ_TEST_NOW and so skip manifest expiry.
x=$(mktemp -d "${TMPDIR:-/tmp}/eq-mkdeb-eqota.XXXXXX")
trap 'rm -rf "$x"' EXIT
dpkg-deb -x "$made" "$x"
if grep -qa 'EQ_TEST_' "$x/usr/bin/eqota"; then
	die "$bin has test hooks (it contains 'EQ_TEST_'): configure $build with -DEQ_TEST_HOOKS=OFF"
fi
deb=$out/eqota_${version}_$arch.deb
# Copied beside its final name and renamed: a reader never sees half a
# package.
tmp=$out/.eqota_${version}_$arch.deb.$$
cp "$made" "$tmp" && mv -f "$tmp" "$deb" || { rm -f "$tmp"; exit 1; }
echo "mkdeb-eqota: $(stat -c %s "$deb") bytes, Depends: $(dpkg-deb -f "$deb" Depends)" >&2
echo "$deb"
