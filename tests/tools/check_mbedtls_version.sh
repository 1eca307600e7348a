#!/usr/bin/env bash
# unit.mbedtls_version: runs the configure-time mbedTLS version check in
# script mode against fake include folders, and against the real one.
# Usage: check_mbedtls_version.sh CMAKE EqMbedtlsVersion.cmake REAL_INCLUDE_DIR
set -euo pipefail
cmake=$1 module=$2 real=$3
w=$(mktemp -d /tmp/eq-mbedtls-version.XXXXXX)
trap 'rm -rf "$w"' EXIT
fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# fake NAME HEADER NUMBER STRING: an include folder NAME whose
# mbedtls/HEADER defines the version.
fake() {
	mkdir -p "$w/$1/mbedtls"
	printf '#define MBEDTLS_VERSION_NUMBER         %s\n#define MBEDTLS_VERSION_STRING         "%s"\n' "$3" "$4" \
		> "$w/$1/mbedtls/$2"
}
check() { # NAME WANT_RC PATTERN
	local rc=0 out
	out=$("$cmake" -DEQ_MBEDTLS_INCLUDE_DIR="$w/$1" -P "$module" 2>&1) || rc=$?
	out=$(tr -s ' \n' '  ' <<<"$out") # CMake wraps long messages
	if { [ "$2" = 0 ] && [ $rc -eq 0 ]; } || { [ "$2" != 0 ] && [ $rc -ne 0 ]; }; then
		if grep -q "$3" <<<"$out"; then pass "$1: rc $rc, '$3'"; else fail "$1: no '$3' in: $out"; fi
	else
		fail "$1: rc $rc: $out"
	fi
}

# 3.x keeps the version in build_info.h; its version.h has no number.
fake v3.5.0 build_info.h 0x03050000 3.5.0
echo '#include "mbedtls/build_info.h"' > "$w/v3.5.0/mbedtls/version.h"
fake v2.15.1 version.h 0x020F0100 2.15.1
fake v2.16.0 version.h 0x02100000 2.16.0
fake v2.28.3 version.h 0x021C0300 2.28.3
mkdir -p "$w/none/mbedtls" && : > "$w/none/mbedtls/version.h"
check v3.5.0 1 "mbedTLS 3.5.0 (0x03050000) in $w/v3.5.0 is not supported: eqota needs mbedTLS 2.16 to 2.28"
check v2.15.1 1 "mbedTLS 2.15.1 .* is not supported"
check v2.16.0 0 "mbedTLS 2.16.0 in"
check v2.28.3 0 "mbedTLS 2.28.3 in"
check none 1 "no MBEDTLS_VERSION_NUMBER"
out=$("$cmake" -DEQ_MBEDTLS_INCLUDE_DIR="$real" -P "$module" 2>&1) && pass "installed headers: $out" ||
	fail "installed headers refused: $out"
[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
