#!/usr/bin/env bash
# Installs the Debian 12 packages eqota needs to build and test, then
# configures and builds. Safe to run again: only missing packages are
# installed.  Usage: scripts/setup.sh [--demo] [--no-build] [BUILD_DIR] [extra cmake args...]
# --demo installs only what the build and scripts/demo.sh need, not the
# test tools (QEMU, clang, Chromium, ...); --no-build stops after the packages.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/apt-wait.sh"

pkgs=(
  build-essential cmake pkg-config git ca-certificates
  libmbedtls-dev libcurl4-openssl-dev libzstd-dev libubootenv-dev libcjson-dev
  libsqlite3-dev libarchive-dev libcmocka-dev libdivsufsort-dev zlib1g-dev
  zstd bsdiff xdelta3 time sqlite3 python3 dpkg-dev xz-utils binutils lighttpd lighttpd-mod-openssl openssl
  # the Debian 12 images of the demo and of image mode's tests (tests/tools/mkimages.sh)
  mmdebstrap apt-utils
)
test_pkgs=(
  # the libFuzzer build (EQ_FUZZ) of scripts/test.sh and bench/fuzz-campaign.sh
  clang libclang-rt-14-dev
  # boards and QEMU tests (boards/, tests/bootloader, tests/qemu)
  qemu-system-x86 qemu-system-arm qemu-utils ovmf grub-efi-amd64-bin grub-common mtools dosfstools
  e2fsprogs fdisk gdisk busybox-static u-boot-qemu u-boot-tools libubootenv-tool cpio kmod socat
  # the arm64 systemd images: mmdebstrap runs their install scripts through qemu-aarch64,
  # and refuses a foreign architecture without arch-test ("install arch-test for
  # foreign architecture support", seen on a fresh machine)
  qemu-user-static arch-test
  # SHA-256 with the ARMv8 instructions, built for arm64 and run under qemu-aarch64
  # (unit.sha256_arm64)
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross
  # packages, units and manual pages (integration.packages, integration.manpages)
  man-db groff-base systemd file
  # the --json documents against their schemas (integration.json_schema)
  python3-jsonschema
  # the fleet page in a real browser (integration.fleet_html)
  chromium
  # a write failed on purpose between the bootloader and the state (integration.agent_killpoints)
  strace
  # static analysis (label static: tests/static)
  cppcheck clang-tidy clang-format shellcheck
)

demo=0 build_it=1
while [ $# -gt 0 ]; do
  case $1 in
    --demo) demo=1 ;;
    --no-build) build_it=0 ;;
    *) break ;;
  esac
  shift
done
[ $demo -eq 1 ] || pkgs+=("${test_pkgs[@]}")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  eq_apt_get update -q
  eq_apt_get install -y -q --no-install-recommends "${missing[@]}"
fi

# qemu-user-static only ships binfmt.d files: on a machine (or container)
# without a running systemd nothing registers them, and binfmt_misc may not
# even be mounted. Root can do both; then an arm64 chroot runs its programs
# (the F flag keeps the interpreter open, so it works inside the chroot).
if [ $demo -eq 0 ] && [ -f /usr/lib/binfmt.d/qemu-aarch64.conf ] && [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  # Only the arm64 board images (tests/tools/mkimages.sh board qemuarm64,
  # bench/qemu-boot.sh) need this: a machine that refuses it still runs the
  # tests, so it is a warning, not a failure.
  if { [ -e /proc/sys/fs/binfmt_misc/register ] || $sudo mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc; } &&
    $sudo /lib/systemd/systemd-binfmt /usr/lib/binfmt.d/qemu-aarch64.conf; then
    echo "setup: registered qemu-aarch64 with binfmt_misc"
  else
    echo "setup: warning: cannot register qemu-aarch64 with binfmt_misc; the arm64 board images cannot be built here" >&2
  fi
fi

[ $build_it -eq 1 ] || exit 0
build=${1:-$top/build}
shift || true
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
