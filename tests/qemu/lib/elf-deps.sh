#!/usr/bin/env bash
# elf-deps.sh: checks that ELF programs find every shared library they need
# inside a root file system tree that is not the host's (an arm64 tree on an
# amd64 host, or packages unpacked with dpkg-deb -x), without running them:
# arm64 programs cannot run here, and ldd would look at the host anyway.
# readelf (binutils) reads ELF of either architecture.
#
# Sourced by mkdeb-eqota.sh and device-debs.sh for its functions (eq_*), or
# run on its own:
# Usage: elf-deps.sh --arch amd64|arm64 --root DIR FILE...
#   FILE is a path inside DIR (e.g. /usr/bin/eqota) or a bare soname
#   (libcurl.so.4), looked up in DIR's library folders. Each FILE, its ELF
#   interpreter and its NEEDED sonames, recursively, must resolve to files of
#   ARCH inside DIR. Exit 0 when they do, 1 with a line per problem naming
#   the missing soname and the chain of files that need it.
#
# Symbolic links are followed inside DIR: Debian's packages hold absolute
# links (/lib64/ld-linux-x86-64.so.2 -> /lib/x86_64-linux-gnu/...), which
# would otherwise be followed into the host and prove nothing.

eq_triplet() { # ARCH -> the multiarch folder name
	case "$1" in
	amd64) echo x86_64-linux-gnu ;;
	arm64) echo aarch64-linux-gnu ;;
	*) return 1 ;;
	esac
}

eq_arch_machine() { # ARCH -> readelf's "Machine:" text
	case "$1" in
	amd64) echo 'Advanced Micro Devices X86-64' ;;
	arm64) echo 'AArch64' ;;
	*) return 1 ;;
	esac
}

eq_elf_machine() { # FILE -> readelf's Machine, empty for a file that is not ELF
	LC_ALL=C readelf -hW "$1" 2>/dev/null | sed -n 's/^ *Machine: *//p'
}

eq_elf_needed() { # FILE -> its NEEDED sonames, one a line
	LC_ALL=C readelf -dW "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'
}

eq_elf_interp() { # FILE -> its ELF interpreter, empty for a static program or a library
	LC_ALL=C readelf -lW "$1" 2>/dev/null | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]$/\1/p'
}

# Sets EQ_RESOLVED to the path inside ROOT of the regular file that PATH
# leads to, following links component by component as the device's kernel
# would. A variable, not output: the check resolves hundreds of paths and a
# subshell each made it several times slower.
eq_root_resolve() { # ROOT PATH
	local root=$1 rest=${2#/} done='' comp link hops=0
	EQ_RESOLVED=''
	while [ -n "$rest" ]; do
		comp=${rest%%/*}
		if [[ $rest == */* ]]; then rest=${rest#*/}; else rest=''; fi
		case "$comp" in
		'' | .) continue ;;
		..) done=${done%/*}; continue ;;
		esac
		if [ -L "$root$done/$comp" ]; then
			# A loop of links must end in an error, not hang.
			hops=$((hops + 1))
			[ "$hops" -le 40 ] || return 1
			link=$(readlink "$root$done/$comp")
			case "$link" in
			/*) done=''; rest=${link#/}${rest:+/$rest} ;;
			*) rest=$link${rest:+/$rest} ;;
			esac
		else
			done=$done/$comp
		fi
	done
	[ -n "$done" ] && [ -f "$root$done" ] || return 1
	EQ_RESOLVED=$done
}

# The folders the device's ld.so searches (its default paths; the test
# devices carry no ld.so.conf): the multiarch ones first, like Debian's.
eq_root_find_lib() { # ROOT TRIPLET SONAME -> EQ_RESOLVED
	local d
	for d in "/lib/$2" "/usr/lib/$2" /lib /usr/lib; do
		eq_root_resolve "$1" "$d/$3" && return 0
	done
	return 1
}

# The check described at the top. Prints "elf-deps: N files checked" on
# success; problems go to stderr.
eq_elf_verify() { # ROOT ARCH FILE...
	local root=$1 arch=$2 triplet want
	shift 2
	triplet=$(eq_triplet "$arch") || { echo "elf-deps: unknown architecture '$arch'" >&2; return 1; }
	want=$(eq_arch_machine "$arch")
	# parent[F]: the file that first needed F, to print how a missing
	# library is reached.
	local -A parent=() seen=()
	local queue=() needed=() bad=0 i=0 f real m interp so lib chain p line
	for f in "$@"; do
		if [[ $f == */* ]]; then eq_root_resolve "$root" "$f" || true
		else eq_root_find_lib "$root" "$triplet" "$f" || true; fi
		real=$EQ_RESOLVED
		if [ -z "$real" ]; then
			echo "elf-deps: MISSING $f (asked for directly) in $root" >&2
			bad=1
			continue
		fi
		parent[$real]=''
		queue+=("$real")
	done
	while [ $i -lt ${#queue[@]} ]; do
		f=${queue[$i]}
		i=$((i + 1))
		[ -z "${seen[$f]:-}" ] || continue
		seen[$f]=1
		chain=$f
		p=${parent[$f]:-}
		while [ -n "$p" ]; do chain="$chain <- $p"; p=${parent[$p]:-}; done
		# One readelf per file: header, program headers and dynamic section.
		m='' interp='' needed=()
		while IFS= read -r line; do
			case "$line" in
			*'Machine:'*) m=${line#*Machine:}; m=${m#"${m%%[![:space:]]*}"} ;;
			*'Requesting program interpreter: '*) interp=${line#*interpreter: }; interp=${interp%]} ;;
			*'(NEEDED)'*) so=${line##*[}; needed+=("${so%]}") ;;
			esac
		done < <(LC_ALL=C readelf -hldW "$root$f" 2>/dev/null)
		if [ -z "$m" ]; then
			echo "elf-deps: $chain: not an ELF file" >&2
			bad=1
			continue
		fi
		if [ "$m" != "$want" ]; then
			echo "elf-deps: $chain: built for '$m', not $arch" >&2
			bad=1
			continue
		fi
		if [ -n "$interp" ] && ! eq_root_resolve "$root" "$interp"; then
			echo "elf-deps: MISSING the ELF interpreter $interp of $chain" >&2
			bad=1
		fi
		for so in "${needed[@]}"; do
			if ! eq_root_find_lib "$root" "$triplet" "$so"; then
				echo "elf-deps: MISSING $so, needed by $chain" >&2
				bad=1
				continue
			fi
			lib=$EQ_RESOLVED
			[ -n "${parent[$lib]+x}" ] || parent[$lib]=$f
			queue+=("$lib")
		done
	done
	[ "$bad" = 0 ] || return 1
	echo "elf-deps: ${#seen[@]} files checked, every interpreter and NEEDED soname resolves in $root"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	usage() { sed -n '/^# Usage:/,/^#   the missing/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
	arch='' root=''
	while [ $# -gt 0 ]; do
		case "$1" in
		--arch) arch=${2:-}; shift 2 || usage ;;
		--root) root=${2:-}; shift 2 || usage ;;
		-*) usage ;;
		*) break ;;
		esac
	done
	[ -n "$arch" ] && [ -n "$root" ] && [ $# -gt 0 ] || usage
	[ -d "$root" ] || { echo "elf-deps: no folder $root" >&2; exit 1; }
	eq_elf_verify "$root" "$arch" "$@"
fi
