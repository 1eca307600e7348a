#!/usr/bin/env bash
# integration.imgcmp_selftest: tests/tools/imgcmp.py, the independent
# comparer of image mode (issue 31), finds what it is there to find. A small
# root with every kind of entry is copied (cp -a, and as a tar), the copies
# compare equal, and then one difference of each kind is planted in a fresh
# copy: it must be reported, naming the path and what differs, both when the
# trees are compared and when their tars are.
# Usage: imgcmp_selftest.sh SOURCE_DIR
set -uo pipefail
src=${1:?usage: imgcmp_selftest.sh SOURCE_DIR}
cmp=$src/tests/tools/imgcmp.py
. "$src/tests/integration/lib/check.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: the test root needs a device node and files owned by other users: run as root"
	exit 77
fi
for t in python3 tar mknod mkfifo; do
	command -v "$t" >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
setxattr() { python3 -c 'import os, sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode(), follow_symlinks=False)' "$@"; }
if ! touch "$work/probe" || ! setxattr "$work/probe" user.probe 1 2>/dev/null; then
	echo "SKIP: the file system of $work does not take user xattrs"
	exit 77
fi
# GNU tar keeps xattrs only when asked to.
mktar() { tar --xattrs --xattrs-include='*' --numeric-owner -C "$1" -cf "$2" .; }

a=$work/a
setup_step "the test root" 0 bash -c '
	set -e
	mkdir -p "$1"/etc "$1"/usr/bin "$1"/usr/lib "$1"/dev "$1"/run "$1"/var/lib/app
	echo "root:x:0:0::/root:/bin/sh" >"$1"/etc/passwd
	echo hello >"$1"/etc/motd
	printf "\0\1binary\377" >"$1"/usr/bin/tool
	chmod 4755 "$1"/usr/bin/tool
	echo linked >"$1"/usr/bin/one
	ln "$1"/usr/bin/one "$1"/usr/bin/two
	ln -s /usr/bin/tool "$1"/usr/bin/alias
	mknod "$1"/dev/null c 1 3
	mkfifo "$1"/run/pipe
	echo state >"$1"/var/lib/app/data
	chown 1234:2345 "$1"/var/lib/app "$1"/var/lib/app/data
	chmod 1777 "$1"/run
	echo id >"$1"/etc/machine-id
' bash "$a"
setup_step "an xattr" 0 setxattr "$a/usr/bin/tool" user.mark image
# GNU tar records a hard link's xattrs only with the first of its names.
setup_step "an xattr on a hard-linked file" 0 setxattr "$a/usr/bin/one" user.mark linked
setup_step "cp -a" 0 cp -a "$a" "$work/b"
setup_step "the tar of the root" 0 mktar "$a" "$work/a.tar"

run "tree vs its cp -a copy" 0 python3 "$cmp" "$a" "$work/b" && grep -q "^0 differences" <<<"$out" &&
	pass "tree vs its cp -a copy: 0 differences"
run "tree vs its tar" 0 python3 "$cmp" "$a" "$work/a.tar" && grep -q "^0 differences" <<<"$out" &&
	pass "tree vs its tar: 0 differences"
run "tar vs tree" 0 python3 "$cmp" "$work/a.tar" "$work/b" && pass "tar vs tree: 0 differences"
# The tar reader sees what the tree reader sees, so that a tar comparison's
# 0 is not a blind one.
if grep -q "^0 differences (20 entries in A, 20 in B" <<<"$out"; then
	pass "tar and tree: the same 20 entries"
else
	fail "tar and tree: entry counts: $out"
fi

# plant NAME PATH WHAT WANT_LINES SHELL-CODE: SHELL-CODE changes a fresh copy
# ($1 in it); imgcmp must exit 1 with a line "PATH: WHAT", tree vs tree and
# tar vs tar, and report WANT_LINES differences.
plant() {
	local name=$1 path=$2 what=$3 want=$4 code=$5 c=$work/case
	rm -rf "$c" "$work/case.tar"
	cp -a "$a" "$c"
	if ! bash -c "set -e; $code" bash "$c"; then
		fail "$name: could not plant the difference"
		return
	fi
	mktar "$c" "$work/case.tar"
	local kind l
	for kind in tree tar; do
		if [ "$kind" = tree ]; then l=$c; else l=$work/case.tar; fi
		[ "$kind" = tree ] || set -- "$work/a.tar" "$l"
		[ "$kind" = tar ] || set -- "$a" "$l"
		run "$name ($kind)" 1 python3 "$cmp" "$@" || continue
		if grep -qF -- "$path: $what" <<<"$out" && grep -q "^$want difference" <<<"$out"; then
			pass "$name ($kind): $(grep -F -- "$path: $what" <<<"$out" | head -1)"
		else
			fail "$name ($kind): wanted '$path: $what' and $want difference(s), got: $out"
		fi
	done
}
plant content etc/motd "content: sha256" 1 'echo changed >"$1"/etc/motd'
plant mode usr/bin/tool "mode: 4755 vs 0755" 1 'chmod 0755 "$1"/usr/bin/tool'
plant sticky run "mode: 1777 vs 0777" 1 'chmod 0777 "$1"/run'
plant owner var/lib/app/data "owner: 1234:2345 vs 0:2345" 1 'chown 0 "$1"/var/lib/app/data'
plant xattr usr/bin/tool "xattr user.mark: 'image' vs 'device'" 1 \
	'python3 -c "import os; os.setxattr(\"$1/usr/bin/tool\", \"user.mark\", b\"device\")"'
plant "xattr added" etc/motd "xattr user.new: (none) vs 'x'" 1 \
	'python3 -c "import os; os.setxattr(\"$1/etc/motd\", \"user.new\", b\"x\")"'
plant "symlink target" usr/bin/alias "symlink target: '/usr/bin/tool' vs 'tool'" 1 'ln -sfn tool "$1"/usr/bin/alias'
plant "hard-link split" usr/bin/two "hard-link group: usr/bin/one usr/bin/two vs usr/bin/two" 2 \
	'cp -a "$1"/usr/bin/two "$1"/t && mv "$1"/t "$1"/usr/bin/two'
plant "hard-link joined" etc/motd "hard-link group: etc/motd vs etc/machine-id etc/motd" 3 \
	'echo id >"$1"/etc/motd && ln -f "$1"/etc/motd "$1"/etc/machine-id'
plant "device number" dev/null "device: 1:3 vs 1:5" 1 'rm "$1"/dev/null && mknod "$1"/dev/null c 1 5'
plant "device type" dev/null "type: chardev vs blockdev" 1 'rm "$1"/dev/null && mknod "$1"/dev/null b 1 3'
plant missing etc/passwd "missing in B (A has file)" 1 'rm "$1"/etc/passwd'
plant extra etc/shadow "extra in B (B has file)" 1 'touch "$1"/etc/shadow'
plant "type change" run/pipe "type: fifo vs file" 1 'rm "$1"/run/pipe && touch "$1"/run/pipe'
plant "dir to symlink" var/lib/app "type: dir vs symlink" 2 'rm -r "$1"/var/lib/app && ln -s /tmp "$1"/var/lib/app'

# Exclusions and persistent paths take out what they name, and only that.
cp -a "$a" "$work/dev"
echo device-own >"$work/dev/etc/machine-id"
echo changed >"$work/dev/etc/motd"
mkdir -p "$work/dev/usr/lib/eqota/slot" && echo '{}' >"$work/dev/usr/lib/eqota/slot/manifest.json"
run "slot marker excluded by default, persist" 1 python3 "$cmp" "$a" "$work/dev" --persist /etc/machine-id &&
	if grep -q "^persist: etc/machine-id: B's own" <<<"$out" && grep -q "^1 difference " <<<"$out" &&
		grep -q "^etc/motd: content" <<<"$out" && ! grep -q "usr/lib/eqota" <<<"${out%%$'\n'1 difference *}"; then
		pass "persist: machine-id is B's own and not a difference; the slot folder and usr/lib/eqota, made only to hold it, are excluded; motd still differs"
	else
		fail "persist/exclude: $out"
	fi
# usr/lib/eqota holding anything else is compared.
echo x >"$work/dev/usr/lib/eqota/other"
run "a folder leading to the slot folder but holding more" 1 python3 "$cmp" "$a" "$work/dev" --persist etc/machine-id &&
	if grep -q "^usr/lib/eqota: extra in B" <<<"$out" && grep -q "^usr/lib/eqota/other: extra in B" <<<"$out"; then
		pass "usr/lib/eqota with another entry is a difference"
	else
		fail "usr/lib/eqota with more: $out"
	fi
rm "$work/dev/usr/lib/eqota/other"
run "--exclude a pattern" 0 python3 "$cmp" "$a" "$work/dev" --persist etc/machine-id --exclude 'etc/mo*' --exclude usr/lib/eqota &&
	pass "--exclude: etc/mo* and usr/lib/eqota left out, 0 differences"
run "--no-default-excludes" 1 python3 "$cmp" "$a" "$work/dev" --persist etc/machine-id --exclude 'etc/mo*' --no-default-excludes &&
	if grep -q "^usr/lib/eqota/slot/manifest.json: extra in B" <<<"$out"; then
		pass "--no-default-excludes compares the slot folder"
	else
		fail "--no-default-excludes: $out"
	fi
run "--json" 1 python3 "$cmp" "$a" "$work/dev" --json &&
	if python3 -c 'import json, sys; d = json.load(sys.stdin); sys.exit(0 if d["count"] == 2 and d["differences"][0]["path"] == "etc/machine-id" else 1)' <<<"$out"; then
		pass "--json: count 2, the first difference etc/machine-id"
	else
		fail "--json: $out"
	fi
run "a missing root" 2 python3 "$cmp" "$a" "$work/nothing" && grep -q "nothing: neither a directory nor a tar file" <<<"$out" &&
	pass "a missing root: exit 2, named"
echo garbage >"$work/bad.tar"
run "a file that is no tar" 2 python3 "$cmp" "$a" "$work/bad.tar" && grep -q "bad.tar" <<<"$out" &&
	pass "a file that is no tar: exit 2, named"
run "usage" 2 python3 "$cmp" "$a" && pass "one root only: exit 2"

[ "$fails" -eq 0 ]
