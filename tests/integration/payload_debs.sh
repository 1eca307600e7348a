#!/bin/bash
# Payload round trip over real Debian packages:
#   .deb -> GNU tar extract -> payload P1 -> eq-payload extract -> payload P2
#   -> GNU tar list and extract -> payload P3;  P1 == P2 == P3 byte for byte,
# and the payload has as many entries as the .deb's data.tar (minus "./").
# Usage: payload_debs.sh EQ_PAYLOAD_TOOL. Needs root (owners, device nodes).
set -euo pipefail

tool=${1:?usage: payload_debs.sh path/to/eq-payload}
src=$(cd "$(dirname "$0")/../.." && pwd)
cache=${EQ_CACHE_DIR:-$src/.cache}
# shellcheck source=tests/integration/lib/check.sh
. "$src/tests/integration/lib/check.sh"
# shellcheck source=tests/integration/lib/archive.sh
. "$src/tests/integration/lib/archive.sh"
debdir=$cache/debs
max=${EQ_PAYLOAD_DEBS_MAX:-20}

if [ "$(id -u)" != 0 ]; then
	# 77: CTest reports the test as skipped (SKIP_RETURN_CODE).
	echo "SKIP: payload_debs needs root to extract owners and device nodes"
	exit 77
fi

mkdir -p "$debdir"
if [ "$(find "$debdir" -name '*.deb' | wc -l)" -lt 10 ]; then
	# Offline that is a skip; a download that fails with the archive
	# reachable is a failure.
	archive_need libc6
	mkdir -p "$debdir/dl-payload"
	(cd "$debdir/dl-payload" && apt-get download libc6 bash coreutils libssl3 zlib1g busybox libcurl4 \
		systemd perl-base tar dpkg util-linux iproute2 openssl libsystemd0) ||
		{ echo "FAIL: apt-get download failed with the archive reachable"; exit 1; }
fi

# One .deb per package name, sorted, at most $max.
mapfile -t debs < <(find "$debdir" -name '*.deb' | sort | awk -F/ '{n=$NF; sub(/_.*/, "", n); if (!seen[n]++) print}' | head -n "$max")
if [ "${#debs[@]}" -lt 10 ]; then
	echo "FAIL: only ${#debs[@]} .deb files under $debdir"
	exit 1
fi

work=$(mktemp -d /tmp/eq-payload-debs.XXXXXX)
trap 'rm -rf "$work"' EXIT

for deb in "${debs[@]}"; do
	name=$(basename "$deb" .deb)
	d=$work/$name
	mkdir -p "$d/tree" "$d/x" "$d/g"
	dpkg-deb --fsys-tarfile "$deb" > "$d/data.tar"
	tar -xpf "$d/data.tar" --xattrs --xattrs-include='*' -C "$d/tree"
	tar_entries=$(tar -tf "$d/data.tar" | grep -vcx '\./' || true)

	read -r sha1 size1 < <("$tool" create "$d/tree" "$d/p1.tar")
	n1=$("$tool" list "$d/p1.tar" | wc -l)
	xsha=$("$tool" extract "$d/p1.tar" "$d/x")
	read -r sha2 size2 < <("$tool" create "$d/x" "$d/p2.tar")
	tar -tvf "$d/p1.tar" > "$d/gnu-list"
	gnu_n=$(wc -l < "$d/gnu-list")
	tar -xpf "$d/p1.tar" --xattrs --xattrs-include='*' -C "$d/g"
	read -r sha3 size3 < <("$tool" create "$d/g" "$d/p3.tar")

	status=ok
	[ "$sha1" = "$(sha256sum < "$d/p1.tar" | cut -d' ' -f1)" ] || status="sha of the file differs"
	[ "$xsha" = "$sha1" ] || status="extract hash $xsha != $sha1"
	[ "$sha2" = "$sha1" ] || status="re-created payload differs ($sha2)"
	[ "$sha3" = "$sha1" ] || status="payload of the GNU tar extraction differs ($sha3)"
	[ "$size1" = "$size2" ] && [ "$size1" = "$size3" ] || status="sizes differ $size1 $size2 $size3"
	[ "$n1" = "$tar_entries" ] || status="$n1 entries, data.tar has $tar_entries"
	[ "$gnu_n" = "$n1" ] || status="GNU tar lists $gnu_n entries, payload has $n1"
	cmp -s "$d/p1.tar" "$d/p2.tar" || status="p1/p2 bytes differ"
	line=$(printf '%-50s entries=%-6s size=%-10s sha=%s' "$name" "$n1" "$size1" "${sha1:0:16}")
	if [ "$status" = ok ]; then pass "$line"; else fail "$line: $status"; fi
	rm -rf "$d"
done

[ "$fails" -eq 0 ] || exit 1
echo "payload_debs: ${#debs[@]} packages ok"
