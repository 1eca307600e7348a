#!/usr/bin/env bash
# Builds the two packages that make a QEMU test device out of Debian's
# packages, the way a Yocto image has a kernel package and an image-specific
# base-files package:
#   eqota-kernel-BOARD_<kernel version>_ARCH.deb
#       /boot/vmlinuz, /boot/initrd.img (boards that need one) and the
#       modules the test device loads, flat in /lib/modules/RELEASE
#   eqota-board-BOARD_VERSION_ARCH.deb
#       /sbin/init (tests/qemu/guest/init), the busybox applets it and eqota
#       call, the board's eqota.conf with the health check, the release key,
#       fw_env.config where the board has one, and the empty mount points
# Both are made with dpkg-deb from fixed inputs, so building them again gives
# the same files: a kernel package rebuilt for release 2 keeps its unihash
# and is not downloaded again. They are not compressed: eqota-gen compresses
# what it publishes.
#
# Usage: mkdeb-board.sh --board B --version V --key PUB --out DIR
#                       [--variant normal|unhealthy|hang] [--release NAME]
#   --variant  unhealthy: the health check fails; hang: init never gets to
#              eqota (it arms the watchdog and waits); both test fallbacks
#   --release  written to /etc/eqota-test/release (default: V)
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
usage() { sed -n '/^# Usage:/,/^#   --release/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "mkdeb-board: $*" >&2; exit 1; }

board='' version='' key='' out='' variant=normal release=''
while [ $# -gt 0 ]; do
	case "$1" in
	--board) board=${2:?}; shift 2 ;;
	--version) version=${2:?}; shift 2 ;;
	--key) key=${2:?}; shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	--variant) variant=${2:?}; shift 2 ;;
	--release) release=${2:?}; shift 2 ;;
	*) usage ;;
	esac
done
[ -n "$board" ] && [ -n "$version" ] && [ -n "$key" ] && [ -n "$out" ] || usage
case "$variant" in normal | unhealthy | hang) ;; *) die "unknown variant '$variant'" ;; esac
bdir=$top/boards/$board
tconf=$top/tests/qemu/boards/$board.conf
[ -f "$bdir/board.conf" ] || die "no board '$board' ($bdir/board.conf missing)"
[ -f "$tconf" ] || die "no test settings for '$board' ($tconf missing)"
[ -f "$key" ] || die "no key $key"
# shellcheck source=/dev/null
. "$bdir/board.conf"
# shellcheck source=/dev/null
. "$tconf"
arch=$EQ_BOARD_ARCH
cache=${EQ_CACHE_DIR:-$top/.cache}/boards/$board
kr=$(cat "$cache/kernel-release" 2>/dev/null || true)
if [ -z "$kr" ] || [ ! -f "$cache/root/boot/vmlinuz-$kr" ] || [ ! -f "$cache/root/bin/busybox" ]; then
	"$top/scripts/fetch-board-debs.sh" "$board" "$cache" >&2
	kr=$(cat "$cache/kernel-release")
fi
kdeb=$(ls "$cache"/debs/linux-image-"$kr"_*.deb 2>/dev/null | head -1)
[ -n "$kdeb" ] || die "the kernel package of $kr is not in $cache/debs"
kver=$(dpkg-deb -f "$kdeb" Version)
mkdir -p "$out"

w=$(mktemp -d "${TMPDIR:-/tmp}/eq-mkdeb-board.XXXXXX")
trap 'rm -rf "$w"' EXIT

# Fixed modes, owners and times: the packages' payloads must not depend on
# the checkout's umask or on when this ran.
pack() { # pack DIR NAME VERSION DESCRIPTION
	local d=$1
	mkdir -p "$d/DEBIAN"
	cat > "$d/DEBIAN/control" <<-EOF
		Package: $2
		Version: $3
		Architecture: $arch
		Maintainer: eqota developers <eqota@localhost>
		Section: admin
		Priority: optional
		Description: $4
		 Part of eqota's QEMU test devices (tests/qemu); not for real devices.
	EOF
	find "$d" -type d -exec chmod 0755 {} +
	find "$d" -exec touch -h -d @0 {} +
	SOURCE_DATE_EPOCH=0 dpkg-deb --root-owner-group -Znone --build "$d" "$out/$2_$3_$arch.deb" >/dev/null
	echo "$out/$2_$3_$arch.deb"
}

# ---- kernel -----------------------------------------------------------------
k=$w/kernel
mkdir -p "$k/boot" "$k/lib/modules/$kr"
install -m 0644 "$cache/root/boot/vmlinuz-$kr" "$k/boot/vmlinuz"
modfile=$w/modules
: > "$modfile"
for m in $EQ_TEST_MODULES; do
	name=${m%%:*}
	f=$(find "$cache/root/lib/modules/$kr" -name "$name.ko" -print -quit)
	[ -n "$f" ] || die "module $name.ko is not in $kr"
	install -m 0644 "$f" "$k/lib/modules/$kr/$name.ko"
	if [ "$m" = "$name" ]; then echo "$name"; else echo "$name ${m#*:}" | tr ',' ' '; fi >> "$modfile"
done
if [ "${EQ_TEST_INITRAMFS:-0}" = 1 ]; then
	"$bdir/mkinitramfs.sh" --modules "$cache/root/lib/modules/$kr" --busybox "$cache/root/bin/busybox" \
		--out "$k/boot/initrd.img"
	chmod 0644 "$k/boot/initrd.img"
fi
pack "$k" "eqota-kernel-$board" "$kver" "Linux $kr for the eqota $board test device"

# ---- board --------------------------------------------------------------------
b=$w/board
mkdir -p "$b/sbin" "$b/bin" "$b/etc/eqota" "$b/etc/eqota-test" "$b/var" \
	"$b/proc" "$b/sys" "$b/dev" "$b/run" "$b/tmp" "$b/data"
[ -z "${EQ_TEST_ESP_DEV:-}" ] || mkdir -p "$b/boot/efi"
install -m 0755 "$top/tests/qemu/guest/init" "$b/sbin/init"
# libubootenv locks /var/lock; the root is read-only, /run is a tmpfs.
ln -s ../run/lock "$b/var/lock"
# The applets the init, the health check and eqota (/sbin/reboot) call.
# Only these: more would collide with files of other packages (e2fsprogs).
for a in sh cat sed grep tr printf echo test mkdir ls cp rm mv ln sleep sync uname \
	mount umount ip dd head tail wc sort cut stat df du find xargs date env dmesg \
	sha256sum hexdump od true false chmod touch basename dirname readlink kill ps wget timeout; do
	ln -s busybox "$b/bin/$a"
done
for a in insmod reboot poweroff halt watchdog; do
	ln -s ../bin/busybox "$b/sbin/$a"
done
cp "$modfile" "$b/etc/eqota-test/modules"
grep '^EQ_TEST_' "$tconf" | grep -v '^EQ_TEST_MODULES' > "$b/etc/eqota-test/board.env" || true
echo "${release:-$version}" > "$b/etc/eqota-test/release"
install -m 0644 "$key" "$b/etc/eqota/release.pub"
[ ! -f "$bdir/fw_env.config" ] || install -m 0644 "$bdir/fw_env.config" "$b/etc/fw_env.config"

grep -q '^\[health\]' "$bdir/eqota.conf" && die "$bdir/eqota.conf has a [health] section; the test device sets its own"
grep -q '^key = ' "$bdir/eqota.conf" || die "$bdir/eqota.conf has no 'key = ' line in [repository]"
{
	sed 's|^key = .*|key = /etc/eqota/release.pub|' "$bdir/eqota.conf"
	printf '\n[health]\ncheck = /etc/eqota/health.sh\ntimeout = 30\n'
} > "$b/etc/eqota/eqota.conf"
case "$variant" in
unhealthy)
	printf '#!/bin/sh\necho "health: the service of this release does not start (on purpose)" >&2\nexit 1\n'
	;;
*)
	# What a product would check: its program runs, and the device can keep
	# its state.
	printf '#!/bin/sh\n/usr/bin/eqota --version >/dev/null && test -w /data && grep -q eqota.slot= /proc/cmdline\n'
	;;
esac > "$b/etc/eqota/health.sh"
chmod 0755 "$b/etc/eqota/health.sh"
[ "$variant" != hang ] || : > "$b/etc/eqota-test/hang"
pack "$b" "eqota-board-$board" "$version" "init and configuration of the eqota $board test device"
