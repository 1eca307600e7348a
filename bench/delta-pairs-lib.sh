# shellcheck shell=bash
# PAYLOAD_TOOL is set here for the scripts that source this file:
# shellcheck disable=SC2034
# Shared by bench/delta-pairs.sh and tests/integration/delta_pairs.sh:
# fetching Debian package pairs and building their canonical payloads.
# Expects EQ_PAYLOAD (path of tests' eq-payload, may be missing) and WORK.

# fetch_pairs DIR PKG...: downloads both versions (bookworm and
# bookworm-security) of each package that has two, unless already there.
fetch_pairs() {
	local dir=$1 p v
	shift
	mkdir -p "$dir"
	for p in "$@"; do
		for v in $(apt-cache madison "$p" 2>/dev/null | grep -E 'bookworm/main|bookworm-security/main' |
			awk -F'|' '{gsub(/ /,"",$2); print $2}'); do
			ls "$dir/${p}_$(echo "$v" | sed 's/:/%3a/')_"*.deb >/dev/null 2>&1 ||
				(cd "$dir" && apt-get download -qq "$p=$v" 2>/dev/null) || true
		done
	done
}

# list_pairs DIR PKG...: "pkg old new" lines, old < new by dpkg ordering.
list_pairs() {
	local dir=$1 p
	shift
	for p in "$@"; do
		local vs=()
		mapfile -t vs < <(for f in "$dir/${p}_"*.deb; do
			[ -e "$f" ] && dpkg-deb -f "$f" Version
		done | sort -u)
		[ "${#vs[@]}" -ge 2 ] || continue
		local a=${vs[0]} b=${vs[1]}
		if dpkg --compare-versions "$a" gt "$b"; then local t=$a; a=$b; b=$t; fi
		echo "$p $a $b"
	done
}

# make_payload DIR PKG VERSION OUT: canonical payload of the .deb's files,
# with eq-payload when built (the real writer), else GNU tar as stand-in.
make_payload() {
	local dir=$1 p=$2 v=$3 out=$4 deb x
	deb=$(ls "$dir/${p}_$(echo "$v" | sed 's/:/%3a/')_"*.deb | head -1)
	x=$(mktemp -d "$WORK/x.XXXXXX")
	dpkg-deb -x "$deb" "$x"
	if [ -x "${EQ_PAYLOAD:-}" ]; then
		"$EQ_PAYLOAD" create "$x" "$out" >/dev/null
		PAYLOAD_TOOL=eq-payload
	else
		tar -C "$x" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=pax \
			--pax-option=delete=atime,delete=ctime -cf "$out" .
		PAYLOAD_TOOL="GNU tar (stand-in)"
	fi
	rm -rf "$x"
}
