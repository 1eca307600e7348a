#!/usr/bin/env bash
# Cross-compiles the device program eqota for arm64 (qemuarm64 and real
# boards) with Debian's gcc-aarch64-linux-gnu and the :arm64 -dev packages.
# Adds the arm64 architecture to dpkg the first time. Only missing packages
# are installed. The result is BUILD_DIR/agent/eqota (dynamically linked;
# libcurl is loaded at the first fetch).
# Usage: scripts/cross-arm64.sh [BUILD_DIR]
# EQ_CMAKE_ARGS adds configure arguments, one a line (a line may hold spaces),
# e.g. EQ_CMAKE_ARGS=-DEQ_VERSION_STRING=0.1.0-2 (tests/qemu/lib/mkdeb-eqota.sh).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/apt-wait.sh"
build=${1:-$top/build-arm64}
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "cross-arm64: adding architecture arm64 to dpkg"
  $sudo dpkg --add-architecture arm64
  eq_apt_get update -q
fi
pkgs=(gcc-aarch64-linux-gnu libc6-dev:arm64 libmbedtls-dev:arm64 libcurl4-openssl-dev:arm64
  libzstd-dev:arm64 libubootenv-dev:arm64 libcjson-dev:arm64)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "cross-arm64: installing ${missing[*]}"
  # Both architectures must come from the same package lists (Multi-Arch:
  # same requires equal versions), so refresh once if an install fails.
  eq_apt_get install -y -q --no-install-recommends "${missing[@]}" ||
    { eq_apt_get update -q && eq_apt_get install -y -q --no-install-recommends "${missing[@]}"; }
fi
extra=()
[ -z "${EQ_CMAKE_ARGS:-}" ] || mapfile -t extra <<< "$EQ_CMAKE_ARGS"
cmake -S "$top" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$top/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEQ_HOST_TOOLS=OFF -DEQ_BUILD_TESTS=OFF -DEQ_WERROR=ON "${extra[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target eqota
file "$build/agent/eqota" | grep -q 'ARM aarch64' || { echo "cross-arm64: $build/agent/eqota is not an arm64 binary" >&2; exit 1; }
echo "cross-arm64: $build/agent/eqota"
