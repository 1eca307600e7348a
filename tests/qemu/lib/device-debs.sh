#!/usr/bin/env bash
# Collects the Debian packages of one release of a QEMU test device's root
# file system (all but the board's own kernel and init packages, which
# mkdeb-board.sh makes): busybox-static, e2fsprogs, libcurl4, eqota's
# package and the Depends/Pre-Depends closure of all of them, for ARCH.
# eqota-gen publishes the folder as a release; the device unpacks the
# payloads (no dpkg, no maintainer scripts).
#
# The two releases differ the way a real security update does: the
# "changing" packages (below) are at the OLDEST version apt offers in
# release 1 and at the NEWEST in release 2, everything else at apt's
# candidate. Versions are looked up at run time, since the archive moves.
#
# Packages come from a shared cache, .cache/qemu/debs/ARCH, checked against
# the SHA256 of apt's signed index; only missing ones are downloaded, so a
# second run is fast. Before the folder is written, the set is proven
# complete: every chosen package's dependencies are met by the set, and
# eqota, libcurl.so.4, mke2fs and every program in the bin folders find
# their ELF interpreter and all NEEDED libraries, recursively, in the set
# unpacked (elf-deps.sh).
#
# Usage: device-debs.sh --arch amd64|arm64 --release 1|2 --out DIR
#                       [--eqota-deb FILE] [--diff-against OTHER_DIR]
#        device-debs.sh --arch amd64|arm64 --verify DIR
#   --out           emptied of .deb files first; other files make it fail
#   --eqota-deb     eqota's package (default: built by mkdeb-eqota.sh with
#                   version PROJECT_VERSION-RELEASE, e.g. 0.1.0-2)
#   --diff-against  also print the packages whose version differs there
#   --verify        only check a folder of .deb files as described above
# Prints a table of package, version and size, and the total.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
. "$top/scripts/apt-wait.sh"
usage() { sed -n '/^# Usage:/,/^# Prints a table/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "device-debs: $*" >&2; exit 1; }
log() { echo "device-debs: $*" >&2; }
# shellcheck source=tests/qemu/lib/elf-deps.sh
. "$here/elf-deps.sh"

# What differs between release 1 and 2. libcurl4's siblings (libcurl3-gnutls,
# curl) are not in the set, and libcurl4's dependencies accept either
# libssl3, so nothing else has to move with these two.
changing=(libssl3 libcurl4)
# The device's userland, the formatter of block slots and the HTTP library
# eqota opens with dlopen; eqota's own Depends adds the libraries it links.
roots=(busybox-static e2fsprogs libcurl4)
# Left out of the closure on purpose, and counted as met where depended on:
#   debconf, debconf-2.0: libraries depend on it only for their maintainer
#   scripts (questions at install time), and nothing runs those here.
excluded=(debconf debconf-2.0)

arch='' release='' out='' eqdeb='' other='' verify_only=''
while [ $# -gt 0 ]; do
	case "$1" in
	--arch) arch=${2:-}; shift 2 || usage ;;
	--release) release=${2:-}; shift 2 || usage ;;
	--out) out=${2:-}; shift 2 || usage ;;
	--eqota-deb) eqdeb=${2:-}; shift 2 || usage ;;
	--diff-against) other=${2:-}; shift 2 || usage ;;
	--verify) verify_only=${2:-}; shift 2 || usage ;;
	*) usage ;;
	esac
done
[ -n "$arch" ] || usage
triplet=$(eq_triplet "$arch") || die "unknown architecture '$arch' (amd64 or arm64)"
if [ -z "$verify_only" ]; then
	[ -n "$out" ] || usage
	case "$release" in 1 | 2) ;; *) usage ;; esac
fi
[ -z "$other" ] || [ -d "$other" ] || die "--diff-against: no folder $other"

w=$(mktemp -d "${TMPDIR:-/tmp}/eq-device-debs.XXXXXX")
stage=''
cleanup() { rm -rf "$w"; [ -z "$stage" ] || rm -rf "$stage"; }
trap cleanup EXIT

# ---- reading .deb folders ---------------------------------------------------

# Prints "PACKAGE VERSION SIZE FILE" for each .deb in DIR, sorted by name.
deb_list() { # DIR
	local f s p v l
	compgen -G "$1/*.deb" >/dev/null || return 0
	stat -c '%s %n' "$1"/*.deb | while read -r s f; do
		p='' v=''
		while IFS= read -r l; do
			case "$l" in Package:*) p=${l#Package: } ;; Version:*) v=${l#Version: } ;; esac
		done < <(dpkg-deb -f "$f" Package Version)
		printf '%s %s %s %s\n' "$p" "$v" "$s" "$f"
	done | sort -k1,1
}

# The proof that the set is complete, see the top. Unpacks into a scratch
# root; nothing needs root privileges.
verify_debs() { # DIR
	local dir=$1 root=$w/root f magic mke2fs='' progs=() d
	rm -rf "$root"; mkdir -p "$root"
	compgen -G "$dir/*.deb" >/dev/null || die "verify: no .deb files in $dir"
	# In parallel: unpacking is most of the check's time, and packages of a
	# sane set share no files.
	printf '%s\0' "$dir"/*.deb | xargs -0 -n1 -P"$(nproc)" sh -c 'dpkg-deb -x "$1" "$0" || { echo "device-debs: verify: cannot unpack $1" >&2; exit 255; }' "$root" ||
		die "verify: unpacking the packages of $dir failed"
	for d in /sbin/mke2fs /usr/sbin/mke2fs; do
		if eq_root_resolve "$root" "$d"; then mke2fs=$d; break; fi
	done
	[ -n "$mke2fs" ] || { echo "elf-deps: MISSING /sbin/mke2fs (e2fsprogs), which formats block slots" >&2; mke2fs=/sbin/mke2fs; }
	# Every program of the set, not only the three named: a tool the test
	# device calls must not fail for a library either. Scripts are skipped.
	for d in bin sbin usr/bin usr/sbin; do
		[ -d "$root/$d" ] || continue
		while IFS= read -r -d '' f; do
			magic=''
			IFS= read -r -n 4 magic < "$f" || true
			[ "$magic" != $'\x7fELF' ] || progs+=("/${f#"$root"/}")
		done < <(find "$root/$d" -type f -print0)
	done
	if ! eq_elf_verify "$root" "$arch" /usr/bin/eqota libcurl.so.4 "$mke2fs" "${progs[@]}" >"$w/verify.out"; then
		die "verify: the packages in $dir are not a complete $arch system for eqota (see the MISSING lines above)"
	fi
	log "verify: $(sed 's/^elf-deps: //; s| in .*||' "$w/verify.out") ($((${#progs[@]})) programs, eqota, libcurl.so.4)"
}

print_table() { # DIR [LIST]: LIST as deb_list prints it, when known
	local n=0 total=0 p v s f list=${2:-}
	[ -n "$list" ] || list=$(deb_list "$1")
	printf '%-24s %-32s %10s\n' PACKAGE VERSION BYTES
	while read -r p v s f; do
		printf '%-24s %-32s %10d\n' "$p" "$v" "$s"
		n=$((n + 1)); total=$((total + s))
	done <<<"$list"
	printf '%-24s %-32s %10d\n' "TOTAL ($n packages)" "$(awk -v t="$total" 'BEGIN { printf "%.1f MiB", t / 1048576 }')" "$total"
	if [ -n "$other" ]; then
		echo
		echo "versions that differ from $other:"
		join -a1 -a2 -e '(none)' -o 0,1.2,2.2 <(deb_list "$other" | cut -d' ' -f1,2) <(cut -d' ' -f1,2 <<<"$list") |
			awk '$2 != $3 { printf "  %-24s %s -> %s\n", $1, $2, $3; d++ } END { if (!d) print "  (none)" }'
	fi
}

if [ -n "$verify_only" ]; then
	[ -d "$verify_only" ] || die "--verify: no folder $verify_only"
	verify_debs "$verify_only"
	print_table "$verify_only"
	exit 0
fi

# ---- apt ----------------------------------------------------------------------
# The host's apt keeps no binary package cache (Docker's docker-clean turns
# it off), so each apt-cache call parsed every index again: 2 s a call. A
# private cache file makes it 0.2 s; apt rebuilds it when the lists change.
mkdir -p "${EQ_CACHE_DIR:-$top/.cache}/qemu/apt"
aptopt=(-o "Dir::Cache::pkgcache=${EQ_CACHE_DIR:-$top/.cache}/qemu/apt/pkgcache.bin"
	-o "Dir::Cache::srcpkgcache=${EQ_CACHE_DIR:-$top/.cache}/qemu/apt/srcpkgcache.bin")
apt_cache() { apt-cache "${aptopt[@]}" "$@"; }
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
native=$(dpkg --print-architecture)
if [ "$arch" != "$native" ] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
	log "adding architecture $arch to dpkg"
	$sudo dpkg --add-architecture "$arch"
	eq_apt_get update -q >&2
elif ! apt_cache show --no-all-versions "busybox-static:$arch" >/dev/null 2>&1; then
	eq_apt_get update -q >&2
fi

is_in() { # WORD LIST...
	local x=$1 y
	shift
	for y; do [ "$x" != "$y" ] || return 0; done
	return 1
}

# The version of a changing package for this release: the oldest or the
# newest that apt can download (madison lists the indexes, not the
# installed status).
pick_changing() { # NAME
	local vs=() v best=''
	mapfile -t vs < <(apt_cache madison "$1:$arch" | awk -F'|' '{ gsub(/ /, "", $2); print $2 }' | sort -u)
	[ ${#vs[@]} -ge 2 ] || die "changing package $1:$arch has ${#vs[@]} version(s) in apt (${vs[*]:-none}); the releases need two. Add a suite that has another (see apt-cache madison $1:$arch)"
	for v in "${vs[@]}"; do
		if [ -z "$best" ]; then best=$v
		elif [ "$release" = 1 ] && dpkg --compare-versions "$v" lt "$best"; then best=$v
		elif [ "$release" = 2 ] && dpkg --compare-versions "$v" gt "$best"; then best=$v
		fi
	done
	echo "$best"
}

# apt-cache show, reduced to one line a package: name, arch, version, size,
# sha256, Pre-Depends + Depends, Provides, separated by \037 (read collapses
# a run of tabs, which would shift the fields after an empty one). apt-cache prints
# nothing for a name without such a version (an arch: all package asked
# for as NAME:ARCH, a virtual package), which the caller notices.
apt_fields() { # ARG...
	apt_cache show --no-all-versions "$@" 2>/dev/null | awk '
		function flush() { if (p != "" && !(p in done)) { done[p] = 1; print p "\037" a "\037" v "\037" s "\037" h "\037" pd (pd != "" && d != "" ? ", " : "") d "\037" pr } p = a = v = s = h = d = pd = pr = "" }
		/^Package: /     { p = $2 }
		/^Architecture: / { a = $2 }
		/^Version: /     { v = $2 }
		/^Size: /        { s = $2 }
		/^SHA256: /      { h = $2 }
		/^Depends: /     { sub(/^Depends: /, ""); d = $0 }
		/^Pre-Depends: / { sub(/^Pre-Depends: /, ""); pd = $0 }
		/^Provides: /    { sub(/^Provides: /, ""); pr = $0 }
		/^$/ { flush() }
		END { flush() }'
}

declare -A ver=() deb_arch=() size=() sha=() deps=() provides=() wanted_by=()
chosen=()

# eqota comes from its package, not from apt.
if [ -z "$eqdeb" ]; then
	pv=$(sed -n 's/^project(eqota VERSION \([0-9.]*\).*/\1/p' "$top/CMakeLists.txt")
	[ -n "$pv" ] || die "cannot read the project version from $top/CMakeLists.txt"
	eqdeb=$("$here/mkdeb-eqota.sh" --arch "$arch" --version "$pv-$release" \
		--out "${EQ_CACHE_DIR:-$top/.cache}/qemu/eqota-debs/$arch")
fi
[ -f "$eqdeb" ] || die "--eqota-deb: no file $eqdeb"
dpkg-deb --info "$eqdeb" >/dev/null 2>&1 || die "--eqota-deb: $eqdeb is not a .deb"
[ "$(dpkg-deb -f "$eqdeb" Package)" = eqota ] || die "--eqota-deb: $eqdeb is package '$(dpkg-deb -f "$eqdeb" Package)', not eqota"
[ "$(dpkg-deb -f "$eqdeb" Architecture)" = "$arch" ] || die "--eqota-deb: $eqdeb is for $(dpkg-deb -f "$eqdeb" Architecture), not $arch"
ver[eqota]=$(dpkg-deb -f "$eqdeb" Version)
deb_arch[eqota]=$arch
pd=$(dpkg-deb -f "$eqdeb" Pre-Depends)
d=$(dpkg-deb -f "$eqdeb" Depends)
deps[eqota]=$pd${pd:+${d:+, }}$d
chosen+=(eqota)

# Breadth-first over the dependency graph, one apt-cache call per level.
# Of "a | b" the first alternative is taken (apt's own choice), skipping
# excluded ones.
level=("${roots[@]}")
for n in "${roots[@]}"; do wanted_by[$n]="(root)"; done
clause_names() { # DEPENDS -> the chosen name of each clause, one a line
	local IFS=, c alt n
	for c in $1; do
		IFS='|'
		for alt in $c; do
			n=${alt#"${alt%%[![:space:]]*}"}; n=${n%%[ (]*}; n=${n%%:*}
			if ! is_in "$n" "${excluded[@]}"; then echo "$n"; break; fi
		done
		IFS=,
	done
}
for n in $(clause_names "${deps[eqota]}"); do
	[ -n "${wanted_by[$n]:-}" ] || { wanted_by[$n]=eqota; level+=("$n"); }
done
while [ ${#level[@]} -gt 0 ]; do
	args=()
	for n in "${level[@]}"; do
		if is_in "$n" "${changing[@]}"; then
			v=$(pick_changing "$n")
			args+=("$n:$arch=$v")
		else
			args+=("$n:$arch")
		fi
	done
	lines=$(apt_fields "${args[@]}")
	missing=()
	for n in "${level[@]}"; do [[ $'\n'$lines == *$'\n'"$n"$'\037'* ]] || missing+=("$n"); done
	# Architecture-independent packages are found only as NAME:all.
	if [ ${#missing[@]} -gt 0 ]; then
		args=()
		for n in "${missing[@]}"; do args+=("$n:all"); done
		lines+=$'\n'$(apt_fields "${args[@]}")
	fi
	next=()
	while IFS=$'\037' read -r n a v s h dd pr; do
		[ -n "$n" ] && [ -z "${ver[$n]:-}" ] || continue
		ver[$n]=$v; deb_arch[$n]=$a; size[$n]=$s; sha[$n]=$h; deps[$n]=$dd; provides[$n]=$pr
		chosen+=("$n")
		for m in $(clause_names "$dd"); do
			[ -n "${wanted_by[$m]:-}" ] || { wanted_by[$m]=$n; next+=("$m"); }
		done
	done <<<"$lines"
	for n in "${level[@]}"; do
		[ -n "${ver[$n]:-}" ] && continue
		# A virtual name: met if a chosen package provides it, which the
		# check below confirms; otherwise a choice is missing here.
		prov=''
		for m in "${chosen[@]}"; do
			[[ ", ${provides[$m]:-}," =~ [,\ ]"$n"[\ ,] ]] && { prov=$m; break; }
		done
		[ -n "$prov" ] || die "no $arch package '$n' (wanted by ${wanted_by[$n]}) in apt; if it is virtual, name a provider in roots"
	done
	level=("${next[@]}")
done

# Every dependency of every chosen version must be met by the set itself;
# apt's candidate logic is not involved, so an old libcurl4 with a new
# libssl3 (or the other way) is checked here, not assumed.
satisfied() { # CLAUSE -> 0 when an alternative is in the set
	local IFS='|' alt n op want m pv items=() all_excluded=1
	for alt in $1; do
		alt=${alt#"${alt%%[![:space:]]*}"}
		n=${alt%%[ (]*}; n=${n%%:*}
		op='' want=''
		if [[ $alt =~ \((\<\<|\<=|=|\>=|\>\>)[[:space:]]*([^\)]+)\) ]]; then
			op=${BASH_REMATCH[1]}; want=${BASH_REMATCH[2]%"${BASH_REMATCH[2]##*[![:space:]]}"}
		fi
		is_in "$n" "${excluded[@]}" || all_excluded=0
		if [ -n "${ver[$n]:-}" ]; then
			[ -z "$op" ] && return 0
			dpkg --compare-versions "${ver[$n]}" "$op" "$want" && return 0
		fi
		for m in "${chosen[@]}"; do
			[ -n "${provides[$m]:-}" ] || continue
			IFS=, read -r -a items <<<"${provides[$m]}"
			for pv in "${items[@]}"; do
				pv=${pv#"${pv%%[![:space:]]*}"}
				[ "${pv%%[ (]*}" = "$n" ] || continue
				[ -z "$op" ] && return 0
				[[ $pv =~ \(=[[:space:]]*([^\)]+)\) ]] && dpkg --compare-versions "${BASH_REMATCH[1]// /}" "$op" "$want" && return 0
			done
		done
	done
	[ "$all_excluded" = 1 ]
}
bad=0
for n in "${chosen[@]}"; do
	IFS=, read -r -a clauses <<<"${deps[$n]}"
	for c in "${clauses[@]}"; do
		[ -n "${c// /}" ] || continue
		if ! satisfied "$c"; then
			m=${c#"${c%%[![:space:]]*}"}; m=${m%%[ (|]*}; m=${m%%:*}
			log "UNMET: $n ${ver[$n]} depends on '${c# }', the set has ${m} ${ver[$m]:-(none)}"
			bad=1
		fi
	done
done
[ "$bad" = 0 ] || die "the chosen versions of release $release for $arch do not satisfy each other (UNMET lines above)"

# ---- the cache --------------------------------------------------------------
cache=${EQ_CACHE_DIR:-$top/.cache}/qemu/debs/$arch
mkdir -p "$cache"
fname() { echo "${1}_${ver[$1]//:/%3a}_${deb_arch[$1]}.deb"; }
# One sha256sum over every cached file: the index's hash proves the file is
# the package, whole; anything else is downloaded again.
todo=()
declare -A have=()
check=()
for n in "${chosen[@]}"; do
	[ "$n" != eqota ] || continue
	f=$(fname "$n")
	if [ -f "$cache/$f" ]; then check+=("$f"); else todo+=("$n"); fi
done
if [ ${#check[@]} -gt 0 ]; then
	while read -r h f; do have[$f]=$h; done < <(cd "$cache" && sha256sum -- "${check[@]}")
	for n in "${chosen[@]}"; do
		[ "$n" != eqota ] || continue
		f=$(fname "$n")
		if [ -n "${have[$f]:-}" ] && [ "${have[$f]}" != "${sha[$n]}" ]; then
			log "cached $f does not match apt's SHA256, fetching it again"
			rm -f "$cache/$f"
			todo+=("$n")
		fi
	done
fi
if [ ${#todo[@]} -gt 0 ]; then
	log "downloading ${#todo[@]} packages for $arch into $cache"
	# Into a private folder first: only complete, checked files get a
	# name in the cache, so an interrupted download leaves nothing behind.
	part=$cache/.partial.$$
	stage=$part
	mkdir -p "$part"
	args=()
	for n in "${todo[@]}"; do
		q=$arch; [ "${deb_arch[$n]}" != all ] || q=all
		args+=("$n:$q=${ver[$n]}")
	done
	(cd "$part" && apt-get "${aptopt[@]}" download -q "${args[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) || true
	for n in "${todo[@]}"; do
		f=$(fname "$n")
		[ -f "$part/$f" ] || die "download of $n ${ver[$n]} ($arch) failed: no $f"
		[ "$(stat -c %s "$part/$f")" = "${size[$n]}" ] || die "download of $f: $(stat -c %s "$part/$f") bytes, the index says ${size[$n]}"
		[ "$(sha256sum < "$part/$f" | cut -d' ' -f1)" = "${sha[$n]}" ] || die "download of $f: SHA256 differs from apt's index"
		dpkg-deb --info "$part/$f" >/dev/null || die "download of $f: not a valid .deb"
		mv -f "$part/$f" "$cache/$f"
	done
	rm -rf "$part"
	stage=''
fi

# ---- the release folder -----------------------------------------------------
mkdir -p "$out"
out=$(cd "$out" && pwd)
others=$(find "$out" -mindepth 1 -maxdepth 1 ! -name '*.deb' -print -quit)
[ -z "$others" ] || die "$out holds more than .deb files ($others); refusing to empty it"
stage=$(mktemp -d "$(dirname "$out")/.device-debs.XXXXXX")
for n in "${chosen[@]}"; do
	[ "$n" != eqota ] || continue
	f=$(fname "$n")
	ln -f "$cache/$f" "$stage/$f" 2>/dev/null || cp "$cache/$f" "$stage/$f"
done
cp "$eqdeb" "$stage/eqota_${ver[eqota]}_$arch.deb"
# A set of exactly these bytes that passed the same checker before need not
# be unpacked again (most of a cached run's time); any other set, or a
# changed checker, is verified. --verify always checks.
key=$( (cd "$stage" && sha256sum -- *.deb; sha256sum < "$here/elf-deps.sh"; sed -n '/^verify_debs()/,/^}/p' "$here/device-debs.sh" | sha256sum; echo "$arch") | sha256sum | cut -c1-32)
stamp=${EQ_CACHE_DIR:-$top/.cache}/qemu/debs/verified/$key
if [ -f "$stamp" ]; then
	log "verify: this exact set of $(ls "$stage" | wc -l) packages passed before ($stamp)"
else
	verify_debs "$stage"
	mkdir -p "${stamp%/*}"
	: > "$stamp"
fi
find "$out" -mindepth 1 -maxdepth 1 -name '*.deb' -delete
mv "$stage"/*.deb "$out/"
rmdir "$stage"
stage=''
for n in "${changing[@]}"; do
	log "changing package $n: ${ver[$n]} (release $release takes the $([ "$release" = 1 ] && echo oldest || echo newest))"
done
echo "release $release for $arch in $out:"
# The table from what was chosen: reading each package back costs a
# dpkg-deb call per file.
declare -A byfile=()
for n in "${chosen[@]}"; do
	if [ "$n" = eqota ]; then byfile[eqota_${ver[eqota]}_$arch.deb]=eqota; else byfile[$(fname "$n")]=$n; fi
done
list=$(stat -c '%s %n' "$out"/*.deb | while read -r s f; do
	n=${byfile[${f##*/}]}
	echo "$n ${ver[$n]} $s $f"
done | sort -k1,1)
print_table "$out" "$list"
