#!/usr/bin/env bash
# Builds the device program eqota for a QEMU test device's architecture and
# packages it the way a distribution would, so that a test release installs
# it like any other package:
#   DIR/eqota_V_ARCH.deb   /usr/bin/eqota (stripped), its copyright file,
#                          Depends: the runtime libraries it links, as
#                          dpkg-shlibdeps derives them from its NEEDED
#                          sonames, plus libcurl4 (opened with dlopen at the
#                          first fetch, so not in NEEDED) and e2fsprogs
#                          (mke2fs formats block slots)
# amd64 is built natively, arm64 with scripts/cross-arm64.sh.
#
# The same V gives the same /usr/bin/eqota bytes, even from another build
# folder: the equivalence store must recognise an unchanged program, and a
# rebuilt one (another V, which --version prints) must differ. Hence the
# path maps below and the fixed times and owners of the package.
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
if [ "$arch" = "$native" ]; then
	cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEQ_HOST_TOOLS=OFF -DEQ_BUILD_TESTS=OFF \
		-DEQ_WERROR=ON "-DEQ_VERSION_STRING=$version" "-DCMAKE_C_FLAGS=$cflags" >/dev/null
	cmake --build "$build" --target eqota -j"$(nproc)" >&2
	strip="strip"
elif [ "$arch" = arm64 ]; then
	EQ_CMAKE_ARGS="-DEQ_VERSION_STRING=$version"$'\n'"-DCMAKE_C_FLAGS=$cflags" \
		"$top/scripts/cross-arm64.sh" "$build" >&2
	strip=aarch64-linux-gnu-strip
else
	die "cannot build for $arch on a $native host"
fi
bin=$build/agent/eqota
[ -x "$bin" ] || die "the build left no $bin"
[ "$(eq_elf_machine "$bin")" = "$(eq_arch_machine "$arch")" ] || die "$bin is not an $arch program ($(eq_elf_machine "$bin"))"

w=$(mktemp -d "${TMPDIR:-/tmp}/eq-mkdeb-eqota.XXXXXX")
trap 'rm -rf "$w"' EXIT
# dpkg-shlibdeps wants a source tree: debian/control and the package's
# files under debian/PACKAGE.
p=$w/debian/eqota
mkdir -p "$p/usr/bin" "$p/usr/share/doc/eqota" "$p/DEBIAN"
# What dh_strip does to a program: drop the debug and symbol tables and the
# compiler's .comment; the dynamic symbols stay.
"$strip" --strip-unneeded --remove-section=.comment -o "$p/usr/bin/eqota" "$bin"
chmod 0755 "$p/usr/bin/eqota"
# A device never gets the test hooks (-DEQ_TEST_HOOKS=ON): with them eqota
# would honour EQ_TEST_NOW and so skip manifest expiry.
if grep -qa 'EQ_TEST_' "$p/usr/bin/eqota"; then
	die "$bin has test hooks (it contains 'EQ_TEST_'): configure $build with -DEQ_TEST_HOOKS=OFF"
fi
cat > "$p/usr/share/doc/eqota/copyright" <<-'EOF'
	eqota: A/B over-the-air updates for embedded Linux.
	Copyright: the eqota developers.
	This package was built for eqota's QEMU end-to-end tests (tests/qemu).
EOF
chmod 0644 "$p/usr/share/doc/eqota/copyright"

printf 'Source: eqota\n\nPackage: eqota\nArchitecture: any\n' > "$w/debian/control"
# DEB_HOST_ARCH makes dpkg-shlibdeps look in ARCH's library folders and at
# ARCH's shlibs and symbols files (the :arm64 -dev packages of the cross
# build installed the runtime libraries it reads them from).
shlibs=$(cd "$w" && DEB_HOST_ARCH=$arch dpkg-shlibdeps -O debian/eqota/usr/bin/eqota) ||
	die "dpkg-shlibdeps could not map the NEEDED sonames of eqota to packages"
deps=${shlibs#shlibs:Depends=}
[ -n "$deps" ] && [ "$deps" != "$shlibs" ] || die "dpkg-shlibdeps printed no dependencies: '$shlibs'"
size=$(du -s -k --apparent-size "$p/usr" | cut -f1)
cat > "$p/DEBIAN/control" <<-EOF
	Package: eqota
	Version: $version
	Architecture: $arch
	Maintainer: eqota developers <eqota@localhost>
	Installed-Size: $size
	Depends: $deps, libcurl4, e2fsprogs
	Section: admin
	Priority: optional
	Description: A/B over-the-air update agent (QEMU test build)
	 The device side of eqota: fetches a signed release, installs the changed
	 packages into the inactive slot and switches the boot loader to it.
EOF

# Fixed modes, owners and times: the package must not depend on the
# checkout's umask or on when it was built. Not compressed: eqota-gen
# compresses what it publishes.
find "$p" -type d -exec chmod 0755 {} +
find "$p" -exec touch -h -d @0 {} +
deb=$out/eqota_${version}_$arch.deb
# Written beside its final name and renamed: a reader never sees half a
# package.
tmp=$out/.eqota_${version}_$arch.deb.$$
SOURCE_DATE_EPOCH=0 dpkg-deb --root-owner-group -Znone --build "$p" "$tmp" >/dev/null || { rm -f "$tmp"; exit 1; }
mv -f "$tmp" "$deb"
echo "mkdeb-eqota: $(stat -c %s "$deb") bytes, Depends: $deps, libcurl4, e2fsprogs" >&2
echo "$deb"
