#!/usr/bin/env bash
# eqota-gen image-check on a root filesystem made from real Debian 12
# packages (the cached .debs of release1, unpacked with dpkg-deb -x), then
# changed as an image builder changes it: bin, sbin, lib and lib64 moved
# into usr/ behind merged-/usr symlinks (as Debian 12 does), an /etc/passwd,
# an empty /etc/machine-id, a file a package ships edited, a package file
# removed, a device node (as root). The counts are computed here with
# find/stat/python, independently of eqota, and must match exactly, for the
# folder and for a tar of it (tar --xattrs --numeric-owner). A socket, proc/
# content and a truncated tar are refused, naming the entry or the file.
# Usage: gen_image.sh EQOTA_GEN SOURCE_DIR
set -Eeuo pipefail
gen=$1 src=$2
debs=${EQ_CACHE_DIR:-$src/.cache}/debs/release1
py=/usr/bin/python3
compgen -G "$debs/*.deb" >/dev/null ||
  { echo "SKIP: no .debs in $debs (scripts/fetch-debs.sh fetches them)"; exit 77; }
command -v dpkg-deb >/dev/null || { echo "SKIP: dpkg-deb is not installed"; exit 77; }
w=$(mktemp -d /tmp/eq-image.XXXXXX)
cleanup() { rm -rf "$w"; }
trap cleanup EXIT
trap 'echo "gen_image.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
. "$src/tests/integration/lib/check.sh"
root=$w/rootfs
mkdir -p "$w/pkgs" "$root"
for f in "$debs"/*.deb; do
  cp -L "$f" "$w/pkgs/"
  setup_step "dpkg-deb -x $(basename "$f")" 0 dpkg-deb -x "$f" "$root"
done

# ---- what an image builder does --------------------------------------------
# Merged /usr: every entry of bin/ (...) moved into usr/bin/ by rename, so
# hard links stay hard links; a non-folder met twice is a layout this test
# cannot count.
setup_step "merge /usr" 0 "$py" - "$root" <<'PY'
import os, sys
root = sys.argv[1]
def merge(a, b):
    for n in sorted(os.listdir(a)):
        s, d = os.path.join(a, n), os.path.join(b, n)
        if os.path.lexists(d):
            if os.path.isdir(s) and not os.path.islink(s) and os.path.isdir(d) and not os.path.islink(d):
                merge(s, d)
                os.rmdir(s)
            else:
                sys.exit("both %s and %s exist" % (s, d))
        else:
            os.rename(s, d)
for top in ("bin", "sbin", "lib", "lib64"):
    p = os.path.join(root, top)
    if os.path.isdir(p) and not os.path.islink(p):
        u = os.path.join(root, "usr", top)
        if not os.path.lexists(u):
            os.mkdir(u)
            st = os.lstat(p)
            os.chmod(u, st.st_mode & 0o7777)
        merge(p, u)
        os.rmdir(p)
        os.symlink("usr/" + top, p)
PY
merged=0
for t in bin sbin lib lib64; do [ -L "$root/$t" ] && merged=$((merged + 1)); done
echo 'root:x:0:0:root:/root:/bin/bash' >"$root/etc/passwd"
: >"$root/etc/machine-id"
[ -f "$root/etc/bash.bashrc" ] || { echo "SETUP FAILED: bash's etc/bash.bashrc is not in the image"; exit 1; }
echo '# edited at image time' >>"$root/etc/bash.bashrc"
removed=$(cd "$root" && find usr/share/doc/bash -type f | sort | head -1)
[ -n "$removed" ] || { echo "SETUP FAILED: bash ships no file under usr/share/doc/bash"; exit 1; }
rm "$root/$removed"
devices=0
if [ "$(id -u)" = 0 ] && mknod "$root/dev/eqtest" c 1 3 2>/dev/null; then
  devices=1
else
  echo "SKIP part: no device node (mknod needs root); the counts below go without it"
fi

# ---- the expected counts, from the tree alone -----------------------------
entries=$(cd "$root" && find . -mindepth 1 | wc -l)
image_only=$((2 + merged + devices)) # passwd, machine-id, the symlinks, the node
from_packages=$((entries - image_only - 1)) # and the edited file
image_bytes=$(($(stat -c %s "$root/etc/passwd") + $(stat -c %s "$root/etc/bash.bashrc")))
# Regular files of the packages: every inode once, without the image's own.
package_bytes=$(cd "$root" && find . -type f ! -path ./etc/passwd ! -path ./etc/bash.bashrc \
  -printf '%i %s\n' | sort -u -k1,1 | awk '{s += $2} END {print s + 0}')
echo "expected: $entries entries, $from_packages from packages, $merged merged-/usr symlinks, $devices device(s)"

# check_counts NAME IMAGE: image-check's text and --json say the numbers above.
check_counts() {
  local name=$1 image=$2
  run "$name: image-check" 0 "$gen" image-check --image "$image" --packages "$w/pkgs" || return 0
  echo "$out" | sed -n 1,25p
  local want
  for want in "entries in the image: $entries" "from packages: $from_packages" \
    "from the image: $((entries - from_packages))" "overrides (package files the image changed): 1" \
    "files no package ships: 1" "empty files: 1" "symlinks: $merged" "device nodes: $devices" \
    "fifos: 0" "folders only the image has: 0" "override: etc/bash.bashrc (bash)" \
    "package entries missing from the image: 1" "missing: $removed (bash)" \
    "image bytes: $image_bytes " "package bytes: $package_bytes "; do
    grep -qF -- "$want" <<<"$out" && pass "$name: $want" || fail "$name: no line '$want'"
  done
  run "$name: image-check --json" 0 "$gen" image-check --image "$image" --packages "$w/pkgs" --json || return 0
  printf '%s' "$out" >"$w/check.json"
  "$py" - "$w/check.json" "$entries" "$from_packages" "$image_bytes" "$package_bytes" "$devices" <<'PY' &&
import json, sys
d = json.load(open(sys.argv[1]))
e, fp, ib, pb, dev = map(int, sys.argv[2:])
assert d["schema"] == "eqota-gen-image-check/1", d["schema"]
assert d["entries"] == e and d["from_packages"] == fp and d["from_image"] == e - fp, d
assert d["classes"]["override"] == 1 and d["classes"]["device"] == dev, d["classes"]
assert d["overrides"] == [{"path": "etc/bash.bashrc", "package": "bash"}], d["overrides"]
assert len(d["missing"]) == 1 and d["image_bytes"] == ib and d["package_bytes"] == pb, d
assert sum(d["classes"].values()) == e, d["classes"]
PY
    pass "$name: --json agrees" || fail "$name: --json: $out"
}

check_counts folder "$root"
tar --xattrs --numeric-owner -C "$root" -cf "$w/rootfs.tar" .
check_counts tar "$w/rootfs.tar"
gzip -1 -c "$w/rootfs.tar" >"$w/rootfs.tar.gz"
check_counts tar.gz "$w/rootfs.tar.gz"

# ---- refused ------------------------------------------------------------------
mkdir -p "$w/sock/run" "$w/proc/proc/1" "$w/loop/etc"
"$py" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$w/sock/run/control"
refused "a socket" "entry 'run/control'" "$gen" image-check --image "$w/sock" --packages "$w/pkgs"
echo 'State: R' >"$w/proc/proc/1/status"
refused "proc/ content" "entry 'proc/1'" "$gen" image-check --image "$w/proc" --packages "$w/pkgs"
ln -s b "$w/loop/etc/a"
ln -s a "$w/loop/etc/b"
refused "a symlink loop" "loop at 'etc/" "$gen" image-check --image "$w/loop" --packages "$w/pkgs"
# Tars that name what is outside the image: a hard link to the host's
# /etc/shadow (absolute: an image path, which this image lacks), one with
# "..", a member with "..".
"$py" - "$w" <<'PY'
import io, sys, tarfile
def make(name, members):
    with tarfile.open(sys.argv[1] + "/" + name, "w", format=tarfile.PAX_FORMAT) as t:
        d = tarfile.TarInfo("etc"); d.type = tarfile.DIRTYPE; d.mode = 0o755; t.addfile(d)
        f = tarfile.TarInfo("etc/x"); f.size = 1; t.addfile(f, io.BytesIO(b"x"))
        for m in members:
            t.addfile(m)
def hard(path, target):
    h = tarfile.TarInfo(path); h.type = tarfile.LNKTYPE; h.linkname = target
    return h
make("abs-link.tar", [hard("etc/h", "/etc/shadow")])
make("dotdot-link.tar", [hard("etc/h", "../../etc/x")])
f = tarfile.TarInfo("etc/../../escape"); f.size = 0
make("dotdot.tar", [f])
l = tarfile.TarInfo("bin"); l.type = tarfile.SYMTYPE; l.linkname = "usr/bin"
u = tarfile.TarInfo("bin/sh"); u.size = 0
make("under-link.tar", [l, u])
twice = tarfile.TarInfo("etc/x"); twice.size = 0
make("twice.tar", [twice])
PY
refused "a hard link out of the image" "entry 'etc/h': hard link to '/etc/shadow'" \
  "$gen" image-check --image "$w/abs-link.tar" --packages "$w/pkgs"
refused "a hard link with .." "entry 'etc/h': hard link to '../../etc/x'" \
  "$gen" image-check --image "$w/dotdot-link.tar" --packages "$w/pkgs"
refused "a path with .." "entry 'etc/../../escape'" \
  "$gen" image-check --image "$w/dotdot.tar" --packages "$w/pkgs"
refused "an entry under a symlink" "entry 'bin/sh': its parent 'bin' is not a folder" \
  "$gen" image-check --image "$w/under-link.tar" --packages "$w/pkgs"
refused "an entry twice" "entry 'etc/x' appears twice" \
  "$gen" image-check --image "$w/twice.tar" --packages "$w/pkgs"
head -c 4096 /dev/urandom >"$w/noise.img"
refused "not a tar" "image '$w/noise.img'" "$gen" image-check --image "$w/noise.img" --packages "$w/pkgs"
head -c $(($(stat -c %s "$w/rootfs.tar") / 2)) "$w/rootfs.tar" >"$w/truncated.tar"
refused "a truncated tar" "image '$w/truncated.tar'" "$gen" image-check --image "$w/truncated.tar" --packages "$w/pkgs"
refused "no such image" "image '$w/none'" "$gen" image-check --image "$w/none" --packages "$w/pkgs"
run "--image is needed" 2 "$gen" image-check --packages "$w/pkgs" && pass "--image is needed"

echo "gen_image: $fails failed"
[ "$fails" -eq 0 ]
