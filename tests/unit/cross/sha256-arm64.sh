#!/usr/bin/env bash
# unit.sha256_arm64: common/sha256.c built for arm64 and run under
# qemu-aarch64 on a Cortex-A57, which has the ARMv8 cryptography extension:
# the instructions' path must be the one chosen, and it and the portable
# code must give the FIPS 180-4 vectors and equal digests on every length
# (sha256_check.c). The x86-64 paths are unit.test_common's.
# Usage: sha256-arm64.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$1 work=$2
for t in aarch64-linux-gnu-gcc qemu-aarch64-static; do
	command -v "$t" >/dev/null || { echo "SKIP: $t is missing (scripts/setup.sh installs it)"; exit 77; }
done
mkdir -p "$work"
aarch64-linux-gnu-gcc -std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -DEQ_TEST_HOOKS -static \
	-I"$src/common/include" "$src/tests/unit/cross/sha256_check.c" "$src/common/sha256.c" -o "$work/sha256-check-arm64"
qemu-aarch64-static -cpu cortex-a57 "$work/sha256-check-arm64" "ARMv8 cryptography extension"
