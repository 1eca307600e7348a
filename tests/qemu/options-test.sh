#!/usr/bin/env bash
# qemu.harness.options: run.sh refuses bad --release1/--release2 input with
# a message naming the folder or file, and bad campaign numbers (--cuts,
# --seed, --try-attempts), before it builds or boots anything.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
export EQ_GEN=${EQ_GEN:-/bin/false} EQ_AGENT=${EQ_AGENT:-/bin/false}

mkdeb() { # mkdeb OUT NAME ARCH: a minimal package
	local d=$t/src-$2-$3
	mkdir -p "$d/DEBIAN" "$d/usr/share/doc/$2"
	printf 'Package: %s\nVersion: 1.0\nArchitecture: %s\nMaintainer: eqota tests <test@invalid>\nDescription: test package\n' \
		"$2" "$3" > "$d/DEBIAN/control"
	echo "$2" > "$d/usr/share/doc/$2/README"
	dpkg-deb -Znone --root-owner-group --build "$d" "$1" >/dev/null
}
mkdir -p "$t/empty" "$t/good" "$t/garbage" "$t/amd64" "$t/harness" "$t/notdebs"
mkdeb "$t/good/hello_1.0_arm64.deb" hello arm64
echo 'not an ar archive' > "$t/garbage/broken_1.0_arm64.deb"
mkdeb "$t/amd64/hello_1.0_amd64.deb" hello amd64
mkdeb "$t/harness/eqota_9.9_arm64.deb" eqota arm64
echo 'text' > "$t/notdebs/README"

fails=0 n=0
expect() { # expect CODE TEXT ARGS...: run.sh exits CODE and prints TEXT
	local code=$1 text=$2 rc=0
	shift 2
	n=$((n + 1))
	"$top/tests/qemu/run.sh" --board qemuarm64 --scenario happy --work "$t/work" "$@" >"$t/out" 2>&1 || rc=$?
	if [ "$rc" = "$code" ] && grep -qF -- "$text" "$t/out"; then
		echo "PASS: $* -> exit $rc, '$text'"
	else
		echo "FAIL: $* -> exit $rc (expected $code with '$text'):"
		sed 's/^/    /' "$t/out"
		fails=$((fails + 1))
	fi
}
expect 2 "--release1 and --release2 go together" --release1 "$t/good"
expect 2 "release folder '$t/missing' does not exist" --release1 "$t/good" --release2 "$t/missing"
expect 1 "no .deb files in $t/empty" --release1 "$t/good" --release2 "$t/empty"
expect 1 "no .deb files in $t/notdebs" --release1 "$t/notdebs" --release2 "$t/good"
expect 1 "$t/garbage/broken_1.0_arm64.deb is not a Debian package" --release1 "$t/good" --release2 "$t/garbage"
expect 1 "$t/amd64/hello_1.0_amd64.deb is for architecture amd64, board qemuarm64 is arm64" \
	--release1 "$t/amd64" --release2 "$t/good"
expect 1 "package eqota belongs to the harness" --release1 "$t/good" --release2 "$t/harness"
expect 2 "no board 'nosuchboard'" --board nosuchboard
expect 2 "--cuts takes a number, not 'many'" --cuts many
expect 2 "--seed takes a number, not '-1'" --seed -1
expect 2 "--try-attempts is 1..9" --try-attempts 0
# Nothing was built for any of them.
if [ -e "$t/work/qemuarm64/.stamp-debs" ] || [ -e "$t/work/qemuarm64/keys" ]; then
	echo "FAIL: bad input still started the build ($t/work/qemuarm64)"; fails=$((fails + 1))
fi
echo "$((n - fails)) of $n refused as expected"
[ $fails = 0 ]
