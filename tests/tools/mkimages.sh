#!/usr/bin/env bash
# mkimages.sh CACHE_DIR SET: builds two real Debian 12 (bookworm) root
# filesystems with mmdebstrap, r1 and r2, in a folder of CACHE_DIR:
#   rN.tar         the image
#   rN-debs/       exactly the .debs rN was installed from
#   rN.packages    package=version, one a line, sorted
#   README         what was built, from where, when, how long
#
# SET "demo" is the README demo's pair, in CACHE_DIR/images-demo/: rN is
# the demo's package set CACHE_DIR/debs/releaseN (made by
# scripts/fetch-debs.sh) at exactly those versions, served to apt as a local
# archive pinned above Debian's, plus what Debian 12 needs to install it (dash,
# libc-bin, perl-base, login, ...) from bookworm. r1 -> r2 therefore differs by
# the demo's security updates only. Both images are built at once.
#
# SET "board" with a BOARD (qemux86-64, qemuarm64) is the slot images of
# that QEMU board, in CACHE_DIR/images-BOARD/, and the qemux86-64 pair is
# also the test data of image mode (integration.agent_image): Debian 12
# minbase for the board's architecture with systemd as PID 1 (systemd-sysv,
# udev, kmod) and openssh-server, the board's kernel as the QEMU tests package it
# (tests/qemu/lib/mkdeb-board.sh: eqota-kernel-BOARD, with the initramfs
# where the board needs one) and the eqota package of this checkout
# (tests/qemu/lib/mkdeb-eqota.sh; 0.1.0-1 in r1, 0.1.0-2 in r2), both from
# a local archive pinned above Debian's as in the demo set. r1 is built from
# bookworm main and has nano (with its editor alternative); r2 from
# bookworm, bookworm-updates and bookworm-security, without nano and with
# chrony (its install script creates the _chrony system user and enables
# chrony.service). r1 -> r2 therefore differs by the security and stable
# updates published after the bookworm point release, by eqota's version,
# by a package added and one removed. The image holds no ssh host keys:
# tests/tools/ssh-hostkeys.service makes a device's own at its first boot.
# On top: the
# board's eqota.conf and fw_env.config, the release key
# CACHE_DIR/images-BOARD/release.pub (made with openssl when missing;
# EQ_IMAGE_RELEASE_KEY names another), a fixed hostname, an /etc/fstab for
# the board's data partition (and the ESP on qemux86-64), no manual pages,
# documentation or translations. The serial console gets systemd's getty
# (systemd-getty-generator, from console= on the kernel command line).
# An arm64 image runs its install scripts through qemu-aarch64 (package
# qemu-user-static registered with binfmt_misc, scripts/setup.sh).
# EQ_IMAGE_EQOTA_BUILD names the CMake folder of the eqota build (default
# CACHE_DIR/images-BOARD/build-eqota).
#
# Nothing is rebuilt when both tars exist and the folder's stamp matches
# the recipe below. Downloads go to the folder's pool/ only (shared by both
# builds, reused by later builds). Exits 77 (a CTest skip) with the reason when
# the images must be built but cannot be: not root, no mmdebstrap, or the
# package archive unreachable.
#
# The archive is the one this machine's apt uses (apt-cache policy), or
# EQ_DEBIAN_MIRROR / EQ_DEBIAN_SECURITY_MIRROR. SOURCE_DATE_EPOCH is pinned,
# so two builds from the same archive state give the same tars; the archive
# itself moves on (new security updates), which the stamp does not see:
# delete the folder to build from today's archive.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/apt-wait.sh
. "$top/scripts/apt-wait.sh"

usage() { echo "usage: $0 CACHE_DIR demo|board qemux86-64|qemuarm64" >&2; exit 2; }
[ $# -ge 2 ] && [ $# -le 3 ] || usage
set_name=$2
board=''
case "$set_name" in
demo) [ $# -eq 2 ] || usage ;;
board)
	[ $# -eq 3 ] && [ -f "$top/boards/$3/board.conf" ] || usage
	board=$3
	;;
*) usage ;;
esac
arch=amd64
if [ -n "$board" ]; then
	# shellcheck source=/dev/null
	arch=$(. "$top/boards/$board/board.conf" && echo "$EQ_BOARD_ARCH")
	mkdir -p "$1/images-$board"
	out=$(cd "$1/images-$board" && pwd)
	# One build at a time per folder: the QEMU board tests and image
	# mode's integration test share the qemux86-64 pair and may start at
	# once; the second waits, then finds the pair up to date.
	exec 9>"$out/.lock"
	flock 9
	key=${EQ_IMAGE_RELEASE_KEY:-$out/release.pub}
	if [ ! -f "$key" ] && [ -z "${EQ_IMAGE_RELEASE_KEY:-}" ]; then
		# Only the public half is kept: these images verify nothing yet.
		openssl ecparam -name prime256v1 -genkey -noout | openssl ec -pubout -out "$key" 2>/dev/null
	fi
	[ -f "$key" ] || { echo "mkimages: no release key $key" >&2; exit 1; }
	# mkdeb-board.sh keeps the board's kernel in the same cache.
	EQ_CACHE_DIR=$(cd "$1" && pwd)
	export EQ_CACHE_DIR
	bdebs=$out/debs
	mkdir -p "$bdebs/release1" "$bdebs/release2"
	ebuild=${EQ_IMAGE_EQOTA_BUILD:-$out/build-eqota}
	# The cache outlives checkouts: a build folder CMake made for another
	# source tree is refused by CMake, so it is started over.
	if [ -f "$ebuild/CMakeCache.txt" ] &&
		[ "$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$ebuild/CMakeCache.txt")" != "$top" ]; then
		rm -rf "$ebuild"
	fi
	for n in 1 2; do
		rm -f "$bdebs/release$n"/*.deb
		"$top/tests/qemu/lib/mkdeb-eqota.sh" --arch "$arch" --version "0.1.0-$n" --out "$bdebs/release$n" \
			--build "$ebuild" >/dev/null
	done
	# The kernel package only; mkdeb-board.sh's board package is the busybox
	# test device's init and is not wanted here.
	kw=$(mktemp -d "$out/kernel.XXXXXX")
	"$top/tests/qemu/lib/mkdeb-board.sh" --board "$board" --version 1 --key "$key" --out "$kw" >/dev/null
	for n in 1 2; do
		cp "$kw"/eqota-kernel-"$board"_*.deb "$bdebs/release$n/"
	done
	rm -rf "$kw"
	debs=$bdebs
elif [ "$set_name" = demo ]; then
	debs=$(cd "$1/debs" 2>/dev/null && pwd) || true
	if [ -z "$debs" ] || [ ! -d "$debs/release1" ] || [ ! -d "$debs/release2" ]; then
		echo "mkimages: $1/debs/release1 and release2 are missing: run scripts/fetch-debs.sh first" >&2
		exit 1
	fi
	mkdir -p "$1/images-demo"
	out=$(cd "$1/images-demo" && pwd)
fi

# The recipe: every input that changes what is built is in this text, and
# its hash is the stamp. dpkg runs with force-unsafe-io: the image is a tar
# written once at the end, so a sync after every unpacked file buys nothing
# and doubled the build (r1 with a warm pool: 1 min 52 s instead of 3.5 min).
export SOURCE_DATE_EPOCH=1747699200 # 2025-05-20, the date of the archive snapshot the machine names
board_include=systemd-sysv,udev,kmod,openssh-server
if [ "$set_name" = demo ]; then
	# The .deb file names carry the versions: the recipe changes when the
	# demo's package set does.
	recipe="mkimages demo 1
arch=amd64 variant=essential mode=root dpkg=force-unsafe-io SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH
rN: the local archive CACHE_DIR/debs/releaseN pinned at 1001, then bookworm; include=all of it
r1: $(cd "$debs/release1" && ls | sha256sum | cut -d' ' -f1)
r2: $(cd "$debs/release2" && ls | sha256sum | cut -d' ' -f1)"
fi
if [ -n "$board" ]; then
	# The inputs are files: their hashes are in the recipe.
	recipe="mkimages board $board 2
arch=$arch variant=minbase mode=root dpkg=force-unsafe-io,path-exclude=doc,man,locale SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH
rN: the local archive images-$board/debs/releaseN pinned at 1001, then bookworm; include=$board_include,eqota,eqota-kernel-$board
r1: include nano; r2: include chrony, suites also bookworm-updates, bookworm-security; no ssh host keys
files: $(cd "$top/boards/$board" && cat eqota.conf fw_env.config 2>/dev/null | sha256sum | cut -d' ' -f1) key $(sha256sum <"$key" | cut -d' ' -f1) $(sha256sum <"$here/ssh-hostkeys.service" | cut -d' ' -f1)
r1: $(cd "$bdebs/release1" && sha256sum ./*.deb | sha256sum | cut -d' ' -f1)
r2: $(cd "$bdebs/release2" && sha256sum ./*.deb | sha256sum | cut -d' ' -f1)"
fi
# This script is an input too: a changed build step must not reuse images
# the old one made (a comment edit costs one rebuild).
recipe="$recipe
script: $(sha256sum <"$here/mkimages.sh" | cut -d' ' -f1)"
stamp=$(printf '%s\n' "$recipe" | sha256sum | cut -d' ' -f1)

if [ -f "$out/r1.tar" ] && [ -f "$out/r2.tar" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "mkimages: $out/r1.tar and r2.tar are up to date (stamp $stamp)"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: mkimages.sh builds the images as root (mmdebstrap --mode=root, device nodes and owners); run it as root"
	exit 77
fi
if ! command -v mmdebstrap >/dev/null; then
	echo "mkimages: installing mmdebstrap"
	eq_apt_get install -y -q --no-install-recommends mmdebstrap >/dev/null || true
	if ! command -v mmdebstrap >/dev/null; then
		echo "SKIP: mmdebstrap is not installed and apt-get could not install it"
		exit 77
	fi
fi

# The mirrors this machine's apt fetches bookworm and bookworm-security from.
mirror_of() { # SUITE: the URI apt-cache policy lists for SUITE/main amd64
	apt-cache policy 2>/dev/null | awk -v s="$1/main" '$3 == s && $4 == "amd64" { print $2; exit }'
}
mirror=${EQ_DEBIAN_MIRROR:-$(mirror_of bookworm)}
security=${EQ_DEBIAN_SECURITY_MIRROR:-$(mirror_of bookworm-security)}
if [ -z "$mirror" ] || [ -z "$security" ]; then
	echo "SKIP: apt on this machine knows no bookworm and bookworm-security archive (set EQ_DEBIAN_MIRROR and EQ_DEBIAN_SECURITY_MIRROR, or run apt-get update)"
	exit 77
fi
# shellcheck source=tests/integration/lib/archive.sh
. "$top/tests/integration/lib/archive.sh"
archive_need base-files
if ! curl -sS -o /dev/null --head --max-time 20 "$security/dists/bookworm-security/InRelease" 2>/dev/null; then
	echo "SKIP: the security archive $security is unreachable: r2 cannot be built"
	exit 77
fi

pool=$out/pool
mkdir -p "$pool"
# The board set's own packages are rebuilt for every build, under the same
# names and versions, and an uncompressed .deb may keep its size when its
# content changes: apt would take the pool's old copy for the new one.
if [ -n "$board" ]; then
	for f in "$debs"/release1/*.deb "$debs"/release2/*.deb; do
		rm -f "$pool/${f##*/}"
	done
fi
work=$(mktemp -d "$out/build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# build NAME INCLUDE SOURCES...: NAME.tar, NAME.packages, NAME-debs and
# NAME.secs in $work. Both builds run at once (mmdebstrap waits on dpkg and
# the disk as much as on a core), so the shared pool is only read here and
# filled after both have finished.
build() {
	local name=$1 include=$2 t0; shift 2
	t0=$(date +%s)
	echo "mkimages: building $name (--include=$include)"
	mmdebstrap --quiet --mode=root --variant="$variant" --arch="$arch" --include="$include" \
		--skip=essential/unlink \
		--dpkgopt=force-unsafe-io \
		--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
		--setup-hook="sync-in $pool /var/cache/apt/archives/" \
		"${pin_opts[@]}" \
		--customize-hook="sync-out /var/cache/apt/archives $work/$name-archives" \
		--customize-hook="chroot \"\$1\" dpkg-query -W -f='\${Package}=\${Version}\n' | LC_ALL=C sort > $work/$name.packages" \
		bookworm "$work/$name.tar" "$@" >"$work/$name.log" 2>&1 ||
		{ cat "$work/$name.log" >&2; echo "mkimages: mmdebstrap failed for $name" >&2; return 1; }
	# Keep exactly the .debs that were installed: the archive folder may hold others.
	mkdir "$work/$name-debs"
	local deb id
	for deb in "$work/$name-archives"/*.deb; do
		id=$(dpkg-deb --show --showformat='${Package}=${Version}' "$deb")
		if grep -qxF "$id" "$work/$name.packages"; then
			mv "$deb" "$work/$name-debs/"
		fi
	done
	local want have
	want=$(wc -l <"$work/$name.packages")
	have=$(find "$work/$name-debs" -name '*.deb' | wc -l)
	if [ "$want" -ne "$have" ]; then
		echo "mkimages: $name has $want packages installed but $have of their .debs were kept" >&2
		return 1
	fi
	echo $(($(date +%s) - t0)) >"$work/$name.secs"
}

# local_archive N: $work/archN, the demo's releaseN as an archive apt reads
# with copy:// (file:// would need the folder inside the chroot). Its
# Release file names the suite bookworm, or mmdebstrap would not find the
# essential packages in it.
local_archive() {
	local a=$work/arch$1
	mkdir -p "$a"
	cp -L "$debs/release$1"/*.deb "$a/"
	(cd "$a" && apt-ftparchive packages . >Packages &&
		apt-ftparchive -o APT::FTPArchive::Release::Suite=bookworm \
			-o APT::FTPArchive::Release::Codename=bookworm release . >Release)
}

# board_hooks: adds to pin_opts what makes the slot image of $board out of
# the installed packages. The hooks run on the host, so they work for a
# foreign architecture; depmod reads any architecture's modules.
board_hooks() {
	local bd=$top/boards/$board data esp='' fstab data_dir
	# eqota's data folder ([paths] data of the board's eqota.conf)
	data_dir=$(sed -n 's/^data = //p' "$bd/eqota.conf")
	[ -n "$data_dir" ] || { echo "mkimages: no 'data = ' in $bd/eqota.conf" >&2; exit 1; }
	# The data partition and, where eqota's environment lives on it, the ESP:
	# the QEMU test settings name them for the busybox init.
	# shellcheck source=/dev/null
	data=$(. "$top/tests/qemu/boards/$board.conf" && echo "$EQ_TEST_DATA_DEV")
	# shellcheck source=/dev/null
	esp=$(. "$top/tests/qemu/boards/$board.conf" && echo "$EQ_TEST_ESP_DEV")
	# The root stays as the kernel mounted it (ro on the command line) until
	# systemd-remount-fs applies this line.
	fstab="/dev/root / ext4 defaults 0 0\n$data /data ext4 defaults 0 2\n"
	# No fsck of the ESP: that would need dosfstools in every slot.
	[ -z "$esp" ] || fstab="$fstab$esp /boot/efi vfat defaults 0 0\n"
	pin_opts+=(
		--dpkgopt='path-exclude=/usr/share/doc/*'
		--dpkgopt='path-include=/usr/share/doc/*/copyright'
		--dpkgopt='path-exclude=/usr/share/man/*'
		--dpkgopt='path-exclude=/usr/share/info/*'
		--dpkgopt='path-exclude=/usr/share/locale/*'
		--dpkgopt='path-include=/usr/share/locale/locale.alias'
		--customize-hook="echo eqota-$board >\"\$1\"/etc/hostname"
		--customize-hook="printf '127.0.1.1\teqota-$board\n' >>\"\$1\"/etc/hosts"
		--customize-hook="printf '$fstab' >\"\$1\"/etc/fstab"
		--customize-hook="mkdir -p \"\$1\"/data \"\$1\"/boot/efi \"\$1\"/etc/eqota"
		--customize-hook="install -m 0644 $bd/eqota.conf \"\$1\"/etc/eqota/eqota.conf"
		# The board keeps eqota's data on its data partition, outside the
		# unit's ReadWritePaths: a product's drop-in, as docs/systemd.md says.
		--customize-hook="mkdir -p \"\$1\"/etc/systemd/system/eqota.service.d"
		--customize-hook="printf '[Service]\\nReadWritePaths=%s\\n' $data_dir >\"\$1\"/etc/systemd/system/eqota.service.d/board-data.conf"
		--customize-hook="install -m 0644 $key \"\$1\"/etc/eqota/release.pub"
		--customize-hook="depmod -b \"\$1\" \$(ls \"\$1\"/lib/modules)"
		# openssh-server's install script made host keys: every device
		# would share them. Each makes its own at its first boot.
		--customize-hook="rm -f \"\$1\"/etc/ssh/ssh_host_*"
		--customize-hook="install -m 0644 $here/ssh-hostkeys.service \"\$1\"/etc/systemd/system/"
		--customize-hook="mkdir -p \"\$1\"/etc/systemd/system/ssh.service.wants"
		--customize-hook="ln -s ../ssh-hostkeys.service \"\$1\"/etc/systemd/system/ssh.service.wants/"
	)
	[ ! -f "$bd/fw_env.config" ] ||
		pin_opts+=(--customize-hook="install -m 0644 $bd/fw_env.config \"\$1\"/etc/fw_env.config")
}

# deb_ids N FORMAT: one line per .deb of the demo's releaseN
deb_ids() {
	local f
	for f in "$debs/release$1"/*.deb; do
		dpkg-deb --show --showformat="$2\n" "$f"
	done
}

variant=minbase
[ "$set_name" = board ] || variant=essential
pin_opts=()
if ! command -v apt-ftparchive >/dev/null; then
	eq_apt_get install -y -q --no-install-recommends apt-utils >/dev/null || true
	command -v apt-ftparchive >/dev/null || { echo "mkimages: apt-ftparchive (apt-utils) is missing" >&2; exit 1; }
fi
# A local archive has origin "": priority 1001 makes apt take its
# versions over newer ones in Debian's archive.
pin='mkdir -p "$1"/etc/apt/preferences.d && printf "Package: *\nPin: origin \"\"\nPin-Priority: 1001\n" >"$1"/etc/apt/preferences.d/eqota-demo'
pin_opts=(--setup-hook="$pin")
local_archive 1
local_archive 2
r1_include=$(deb_ids 1 '${Package}' | paste -sd,)
r2_include=$(deb_ids 2 '${Package}' | paste -sd,)
r1_src=("deb [trusted=yes] copy://$work/arch1 ./" "deb $mirror bookworm main")
r2_src=("deb [trusted=yes] copy://$work/arch2 ./" "deb $mirror bookworm main")
if [ "$set_name" = board ]; then
	r1_include=$board_include,nano,$r1_include
	r2_include=$board_include,chrony,$r2_include
	r2_src+=("deb $mirror bookworm-updates main" "deb $security bookworm-security main")
	board_hooks
fi

t_start=$(date +%s)
build r1 "$r1_include" "${r1_src[@]}" &
pid1=$!
build r2 "$r2_include" "${r2_src[@]}" &
pid2=$!
rc1=0 rc2=0
wait $pid1 || rc1=$?
wait $pid2 || rc2=$?
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] || exit 1
secs_total=$(($(date +%s) - t_start))
declare -A secs=([r1]=$(cat "$work/r1.secs") [r2]=$(cat "$work/r2.secs"))
for name in r1 r2; do
	cp -n "$work/$name-archives"/*.deb "$pool/" 2>/dev/null || true
	cp -n "$work/$name-debs"/*.deb "$pool/"
	rm -rf "$work/$name-archives"
done

# Every .deb of the local archive must be in its image at exactly its version.
for n in 1 2; do
	deb_ids "$n" '${Package}=${Version}' | LC_ALL=C sort >"$work/want$n"
	missing=$(LC_ALL=C comm -23 "$work/want$n" "$work/r$n.packages")
	[ -z "$missing" ] || { echo "mkimages: r$n lacks these packages of the local release$n: $missing" >&2; exit 1; }
done
# r2's added package must really have done what it is there for. (Listings
# go through files: grep -q closing a pipe early would fail it under pipefail.)
if [ "$set_name" = board ]; then
	tar -xOf "$work/r2.tar" ./etc/passwd >"$work/r2.passwd"
	tar -tvf "$work/r2.tar" >"$work/r2.list"
	grep '^_chrony:' "$work/r2.passwd" ||
		{ echo "mkimages: r2 has no _chrony user in /etc/passwd" >&2; exit 1; }
	grep 'etc/systemd/system/multi-user.target.wants/chrony.service -> ' "$work/r2.list" ||
		{ echo "mkimages: r2 has no enablement link for chrony.service" >&2; exit 1; }
	if grep 'etc/ssh/ssh_host_.*_key' "$work/r2.list"; then
		echo "mkimages: r2 holds ssh host keys, which every device would share" >&2
		exit 1
	fi
fi

changes() { # DIR: the r1 -> r2 package changes, one a line
	LC_ALL=C awk -F= 'NR == FNR { a[$1] = $2; next } { b[$1] = $2 }
		END {
			for (p in b) if (!(p in a)) print "  added   " p " " b[p]
			for (p in a) if (!(p in b)) print "  removed " p " " a[p]
			for (p in a) if ((p in b) && a[p] != b[p]) print "  updated " p " " a[p] " -> " b[p]
		}' "$1/r1.packages" "$1/r2.packages" | LC_ALL=C sort
}

# The build is kept before it is described: the stamp, written last, is
# what says it is complete.
rm -rf "$out/r1-debs" "$out/r2-debs" "$out/stamp"
for f in r1.tar r2.tar r1.packages r2.packages r1-debs r2-debs; do
	mv -f "$work/$f" "$out/$f"
done

{
	echo "Debian 12 images for eqota's image mode (set $set_name), built by tests/tools/mkimages.sh"
	echo "built: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n) with $(mmdebstrap --version)"
	echo "archive: $mirror, $security"
	echo "recipe (stamp $stamp):"
	printf '%s\n' "$recipe" | sed 's/^/  /'
	for n in r1 r2; do
		echo "$n.tar: $(stat -c %s "$out/$n.tar") bytes, $(tar -tf "$out/$n.tar" | wc -l) entries," \
			"$(wc -l <"$out/$n.packages") packages, built in ${secs[$n]} s"
	done
	echo "both built in $secs_total s"
	echo "r1 -> r2 package changes:"
	changes "$out"
} >"$out/README"
echo "$stamp" >"$out/stamp"
cat "$out/README"
