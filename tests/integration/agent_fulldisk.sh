#!/usr/bin/env bash
# Full disks (issue 17, "Full disks and damaged slots"), on simulated devices
# whose folders are small file systems: tmpfs mounts and ext4 images on loop
# devices.
#  a. the data folder (downloads, temporary payloads) is too small for the
#     release (the check before the install refuses: a1), fills in the
#     middle of the downloads although that check passed (a2), or is filled
#     by another program while an object downloads (a3, a slow server);
#  b. the target slot is too small (refused before the install) or fills in
#     the middle of the install, as a dir slot on a tmpfs (b1, b2) and as a
#     block slot, a loop device eqota formats and mounts (b3, b4; eqota then
#     runs chrooted into the booted slot, as on a board);
#  c. the data folder, where the state file lives, is read-only.
# Each time `eqota update` fails (exit 1) with an error that names the folder
# or file and the reason, the running slot's files and the bootloader's state
# for it are unchanged and nothing is on trial (the target slot may only have
# left the boot order), `status` answers; once there is room (or the folder is
# writable again) `update --retry` installs, the device boots the new slot and
# mark-good commits it. The errors are listed at the end.
# Needs root (mount); without a loop device or mkfs.ext4 the block slot cases
# are skipped and the test ends as skipped (77) after the others.
# Usage: agent_fulldisk.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
. "$4/tests/integration/lib/agent-test.sh" agent_fulldisk "$@"

loops=()
binds=""
# Every mount under $w (ours and eqota's <data>/mnt/*), deepest first, then
# the loop devices, then the shared cleanup (which removes $w).
fulldisk_cleanup() {
	local m l
	for m in $(awk -v w="$w/" 'index($2, w) == 1 { print $2 }' /proc/self/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null || true; done
	agent_test_cleanup
}
trap fulldisk_cleanup EXIT

skip() {
	echo "SKIP: $*"
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root to mount the small file systems (tmpfs, ext4 on loop devices)"
command -v python3 >/dev/null || skip "python3 is needed to build the test packages"
mkdir -p probe
mount -t tmpfs -o size=64k eqota-probe probe 2>/dev/null || skip "cannot mount a tmpfs here (mount not permitted?)"
umount probe
block_skip=""
mkfs=$(PATH=$PATH:/usr/sbin:/sbin command -v mkfs.ext4 || true)
if [ -z "$mkfs" ]; then
	block_skip="mkfs.ext4 is missing (e2fsprogs)"
else
	truncate -s 1M probe.img
	if l=$(losetup --find --show probe.img 2>/dev/null); then
		losetup -d "$l"
	else
		block_skip="no loop device (losetup --find --show failed)"
	fi
	rm -f probe.img
fi

# ---- packages and releases
"$gen" keygen --out k >/dev/null
mkdir -p small big many logs repo
tarpkg small/base_1.tar usr/share/base/data "base data"
tarpkg small/app_1.tar usr/share/app/version "app 1"
python3 - big many <<'PY'
import io, random, sys, tarfile
def pkg(out, files):
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        dirs = sorted({"/".join(p.split("/")[:i]) for p, _ in files for i in range(1, p.count("/") + 1)})
        for d in dirs:
            i = tarfile.TarInfo(d)
            i.type, i.mode = tarfile.DIRTYPE, 0o755
            t.addfile(i)
        for p, body in files:
            f = tarfile.TarInfo(p)
            f.mode, f.size = 0o644, len(body)
            t.addfile(f, io.BytesIO(body))
# big: 1 MiB that does not compress, so its download is 1 MiB too
pkg(sys.argv[1] + "/app_2.tar", [("usr/share/app/blob", random.Random(17).randbytes(1 << 20))])
# many: 120 packages of one small file each: a few hundred bytes of
# downloads and of slot per package by their declared sizes, but every file
# takes a whole block or page
for n in range(120):
    pkg("%s/many%03d_1.tar" % (sys.argv[2], n), [("usr/share/many/f%03d" % n, b"file %03d\n" % n * 16)])
PY
cp small/base_1.tar big/
cp small/base_1.tar many/
pub() { # BOARD RELEASE PACKAGES
	"$gen" -q publish --repo repo --board "$1" --channel stable --release "$2" --packages "$3" --key k.key \
		--store repo.db --level 1 >/dev/null
}
httpd_start "$w/repo" "$w/logs"

# ---- helpers
# new_dev DEV BOARD [SECTION.KEY=VALUE ...]: r1 published for BOARD and a
# device of it in $w/DEV (its slot and data folders may be mounted before);
# prov DEV: slot A provisioned with r1, and booted.
new_dev() {
	local d=$w/$1 b=$2
	shift 2
	pub "$b" r1 small
	simdevice_make "$d" "$HTTPD_URL" "$b" "$w/k.pub" repository.retries=0 "$@"
}
prov() {
	eq "$w/$1" provision --slot A >"$w/$1.provision" 2>&1 ||
		{ cat "$w/$1.provision"; return 1; }
	boot "$w/$1"
}
# eq DIR ARGS...: eqota on the device in DIR. One with block slots (DIR/A.loop
# and DIR/B.loop name its loop devices) runs it as a board does: eqota reads
# the booted block slot at "/" (and copies from it through a non-recursive
# bind of "/", which leaves out what is mounted on it). So, once a slot is
# booted, eqota runs in a mount namespace of its own, chrooted into that
# slot's file system, with the host's /dev, /proc, /tmp (the test's files,
# a copy of eqota), the libraries and mkfs bound on it.
eq() {
	local d=$1 s
	shift
	s=$(sed -n 's/.*eqota\.slot=\([AB]\).*/\1/p' "$d/cmdline" 2>/dev/null || true)
	if [ ! -f "$d/A.loop" ] || [ -z "$s" ]; then
		simdevice_eq "$d" "$eqota" "$@"
		return
	fi
	EQ_TEST_BOOT_ID_FILE=$d/boot_id unshare -m --propagation private bash -c '
		set -e
		r=$1 dev=$2
		shift 2
		mount "$dev" "$r"
		for x in $binds; do mount --bind "$x" "$r$x"; done
		exec chroot "$r" "$@"' sh "$d/root" "$(cat "$d/$s.loop")" "$w/eqota" --config "$d/eqota.conf" "$@"
}
# Makes the bind targets (and the host's top-level symlinks such as
# lib -> usr/lib) in the file system of the slot DIR booted: what a real
# image has.
prepare_root() {
	local d=$1 s x
	[ -f "$d/A.loop" ] || return 0
	s=$(sed -n 's/.*eqota\.slot=\([AB]\).*/\1/p' "$d/cmdline")
	mkdir -p "$d/root"
	mount "$(cat "$d/$s.loop")" "$d/root"
	for x in $binds; do mkdir -p "$d/root$x"; done
	for x in /lib /lib32 /lib64 /libx32 /bin /sbin; do
		[ ! -L "$x" ] || [ -e "$d/root$x" ] || ln -s "$(readlink "$x")" "$d/root$x"
	done
	umount "$d/root"
}
# A simulated reboot (then the bind targets in the new slot, for block slots).
boot() {
	simdevice_boot "$1" "$simboot"
	prepare_root "$1"
}
# A checksum of a folder's tree: names, types, modes, owners, sizes, link
# targets and every file's content.
tree_sum() {
	(
		cd "$1"
		find . -printf '%p %y %m %U:%G %s %l\n' | LC_ALL=C sort
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum
	) | sha256sum | cut -d' ' -f1
}
# The same for a block slot: its ext4 mounted read-only (no journal replay:
# nothing is written) on a folder of ours.
dev_sum() {
	mkdir -p "$w/look"
	mount -o ro,noload "$1" "$w/look"
	local s
	s=$(tree_sum "$w/look")
	umount "$w/look"
	echo "$s"
}
# Exit code and output of `eqota update` on DEV into $rc and $out.
try_update() {
	rc=0
	out=$(eq "$1" update "${@:2}" 2>&1) || rc=$?
}
# BEFORE AFTER TARGET: the booted slot, its release, its place at the front
# of the boot order and its attempts are unchanged, nothing is on trial, and
# the target slot holds no release (a half-built slot never looks complete);
# the target may only have left the boot order.
boot_same() {
	python3 - "$@" <<'PY'
import json, sys
b, a, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
bb, ab, r = b["bootloader"], a["bootloader"], b["booted"]
p = []
if a["booted"] != r:
    p.append("booted %s, was %s" % (a["booted"], r))
if ab["order"] != [s for s in bb["order"] if s != t]:
    p.append("boot order %s, was %s" % (ab["order"], bb["order"]))
if ab["left"][r] != bb["left"][r]:
    p.append("attempts of %s %s, were %s" % (r, ab["left"][r], bb["left"][r]))
if ab["trial"] is not None or bb["trial"] is not None:
    p.append("trial %s, was %s" % (ab["trial"], bb["trial"]))
if a["slots"][r] != b["slots"][r]:
    p.append("running slot %s, was %s" % (a["slots"][r], b["slots"][r]))
if a["slots"][t] is not None:
    p.append("target slot %s holds %s" % (t, a["slots"][t]))
if a["state"]["phase"] in ("installed", "trying"):
    p.append("phase %s" % a["state"]["phase"])
if p:
    print("; ".join(p))
    sys.exit(1)
PY
}
# CASE DEV TARGET SUM-BEFORE SUM-AFTER BEFORE.json WANT...: the failed
# update's checks: exit 1, each WANT in the message, the running slot's
# checksum and the bootloader unchanged. The message is kept in msgs.txt.
check_failed() {
	local name=$1 d=$w/$2 t=$3 s0=$4 s1=$5 before=$6 want why
	shift 6
	printf '%s: %s\n' "$name" "$(grep -E '(^|>)error: ' <<<"$out" | sed 's/^<[0-9]>//')" >>"$w/msgs.txt"
	echo "  $name, eqota said: $(grep -E 'error: ' <<<"$out" || echo "$out")"
	if [ "$rc" -ne 1 ]; then fail "$name: update exit $rc, wanted 1: $out"; else pass "$name: update fails (exit 1)"; fi
	for want in "$@"; do
		if grep -qF -- "$want" <<<"$out"; then pass "$name: the error says '$want'"; else fail "$name: no '$want' in: $out"; fi
	done
	if [ "$s0" = "$s1" ]; then pass "$name: the running slot's files are unchanged"; else fail "$name: the running slot changed"; fi
	eq "$d" status --json >"$w/after.json" || fail "$name: status --json failed"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); e=a["install_error"]
print("  state after it: %s, install error recorded: %s" % (a["state"]["phase"], e["error"] if e else None))' "$w/after.json"
	if why=$(boot_same "$before" "$w/after.json" "$t"); then
		pass "$name: the bootloader still boots the running slot, nothing on trial"
	else
		fail "$name: $why"
	fi
}
# CASE DEV TARGET NUMBER: with room again, `update --retry` (the failed
# attempt set a backoff) installs release NUMBER in TARGET, the device boots
# it and mark-good commits it.
recover() {
	local name=$1 d=$w/$2 t=$3 n=$4 why
	try_update "$d" --retry
	if [ "$rc" -ne 3 ]; then
		fail "$name: the update after making room: exit $rc: $out"
		return
	fi
	boot "$d"
	rc=0
	out=$(eq "$d" mark-good 2>&1) || rc=$?
	[ "$rc" -eq 0 ] || { fail "$name: mark-good: exit $rc: $out"; return; }
	eq "$d" status --json >"$w/after.json"
	if why=$(python3 - "$w/after.json" "$t" "$n" <<'PY'
import json, sys
a, t, n = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
p = []
if a["booted"] != t: p.append("booted %s" % a["booted"])
if a["bootloader"]["order"][0] != t or a["bootloader"]["trial"] is not None: p.append("bootloader %s" % a["bootloader"])
if (a["slots"][t] or {}).get("number") != n: p.append("slot %s holds %s" % (t, a["slots"][t]))
if a["state"]["phase"] != "idle" or a["install_error"] is not None: p.append("state %s, install error %s" % (a["state"], a["install_error"]))
if p:
    print("; ".join(p)); sys.exit(1)
PY
	); then
		pass "$name: with room, the update installs release $n in slot $t, it boots and mark-good commits it"
	else
		fail "$name: after the recovery: $why"
	fi
}

# ---- a1. the data folder is smaller than the downloads: refused before
# anything is downloaded; then the folder is made larger
d=$w/a1
mkdir -p "$d/data"
mount -t tmpfs -o size=512k eqota-a1 "$d/data"
new_dev a1 fa1
prov a1
pub fa1 r2 big
eq "$d" status --json >before.json
s0=$(tree_sum "$d/A")
try_update "$d"
check_failed "a1 data folder too small" a1 B "$s0" "$(tree_sum "$d/A")" before.json \
	"work dir '$d/data/work' has" "free, downloads and temporary payloads need"
[ -z "$(ls -A "$d/B")" ] && pass "a1: slot B was not touched" || fail "a1: slot B: $(ls -A "$d/B")"
mount -o remount,size=8m "$d/data"
recover "a1 data folder too small" a1 B 2

# ---- a2. the data folder fills in the middle of the downloads: the check
# before them passes (they need a few hundred bytes each by their declared
# sizes), every object then takes a page of the tmpfs; a filler takes what
# else is free, and removing it makes room
d=$w/a2
mkdir -p "$d/data"
mount -t tmpfs -o size=4m eqota-a2 "$d/data"
new_dev a2 fa2
prov a2
pub fa2 r2 many
free=$(($(stat -f -c '%a*%S' "$d/data")))
fallocate -l $((free - 160 * 1024)) "$d/data/filler"
eq "$d" status --json >before.json
s0=$(tree_sum "$d/A")
try_update "$d"
check_failed "a2 data folder fills while downloading" a2 B "$s0" "$(tree_sum "$d/A")" before.json \
	"$d/data/" "No space left on device"
eq "$d" status >status.txt 2>&1 && pass "a2: status answers on the full disk" ||
	fail "a2: status: $(cat status.txt)"
rm "$d/data/filler"
recover "a2 data folder fills while downloading" a2 B 2

# ---- b1. a dir slot too small for the release: refused before the install
d=$w/b1
mkdir -p "$d/B"
mount -t tmpfs -o size=512k eqota-b1 "$d/B"
new_dev b1 fb1
prov b1
pub fb1 r2 big
eq "$d" status --json >before.json
s0=$(tree_sum "$d/A")
try_update "$d"
check_failed "b1 dir slot too small" b1 B "$s0" "$(tree_sum "$d/A")" before.json \
	"target '$d/B' has" "free, release needs"
mount -o remount,size=4m "$d/B"
recover "b1 dir slot too small" b1 B 2

# ---- b2. a dir slot fills in the middle of the install (every file and
# record takes a page of the tmpfs, more than the declared sizes)
d=$w/b2
mkdir -p "$d/B"
mount -t tmpfs -o size=640k eqota-b2 "$d/B"
new_dev b2 fb2
prov b2
pub fb2 r2 many
eq "$d" status --json >before.json
s0=$(tree_sum "$d/A")
try_update "$d"
check_failed "b2 dir slot fills while installing" b2 B "$s0" "$(tree_sum "$d/A")" before.json \
	"slot B: package '" "No space left on device"
mount -o remount,size=4m "$d/B"
recover "b2 dir slot fills while installing" b2 B 2

# ---- b3, b4. block slots: ext4 on loop devices, formatted by eqota. B is
# too small for the release (refused before the install), then grown; A,
# now the target, is shrunk so that the many small files fill it in the
# middle of the install, then grown again.
if [ -n "$block_skip" ]; then
	echo "SKIP: the block slot cases (b3, b4): $block_skip"
else
	d=$w/b3
	mkdir -p "$d"
	truncate -s 8M "$d/A.img"
	truncate -s 768K "$d/B.img"
	la=$(losetup --find --show "$d/A.img")
	loops+=("$la")
	lb=$(losetup --find --show "$d/B.img")
	loops+=("$lb")
	echo "$la" >"$d/A.loop"
	echo "$lb" >"$d/B.loop"
	cp "$eqota" "$w/eqota"
	# what eqota and mkfs need in the chroot: their libraries' folders, as
	# the host resolves them
	binds="/dev /proc /tmp $(dirname "$(realpath "$mkfs")")"
	for x in $( (ldd "$eqota" "$mkfs" || true) | grep -o '/[^ ]*' | grep -v ':$' | xargs -n1 dirname | sort -u); do
		binds+=" $(realpath "$x")"
	done
	binds=$(tr ' ' '\n' <<<"$binds" | sort -u | tr '\n' ' ')
	export binds
	new_dev b3 fb3 slots.mkfs="$mkfs -q -F"
	sed -i "s|^type = dir|type = block|; s|^A = .*|A = $la|; s|^B = .*|B = $lb|" "$d/eqota.conf"
	rmdir "$d/A" "$d/B"
	prov b3
	pub fb3 r2 big
	eq "$d" status --json >before.json
	s0=$(dev_sum "$la")
	try_update "$d"
	check_failed "b3 block slot too small" b3 B "$s0" "$(dev_sum "$la")" before.json \
		"target '$d/data/mnt/B' has" "free, release needs"
	truncate -s 8M "$d/B.img"
	losetup -c "$lb"
	recover "b3 block slot too small" b3 B 2

	pub fb3 r3 many
	truncate -s 700K "$d/A.img"
	losetup -c "$la"
	eq "$d" status --json >before.json
	s0=$(dev_sum "$lb")
	try_update "$d"
	check_failed "b4 block slot fills while installing" b3 A "$s0" "$(dev_sum "$lb")" before.json \
		"slot A: package '" "No space left on device"
	truncate -s 8M "$d/A.img"
	losetup -c "$la"
	recover "b4 block slot fills while installing" b3 A 3
fi

# ---- c. the data folder (the state file's file system) is read-only:
# refused before the slots are touched; status still answers
d=$w/c
mkdir -p "$d/data"
mount -t tmpfs -o size=4m eqota-c "$d/data"
new_dev c fc
prov c
pub fc r2 big
mount -o remount,ro "$d/data"
eq "$d" status --json >before.json
s0=$(tree_sum "$d/A")
try_update "$d"
check_failed "c read-only state" c B "$s0" "$(tree_sum "$d/A")" before.json \
	"$d/data/agent.lock" "Read-only file system"
[ -z "$(ls -A "$d/B")" ] && pass "c: slot B was not touched" || fail "c: slot B: $(ls -A "$d/B")"
python3 -c 'import json,sys; a,b=(json.load(open(f))["bootloader"] for f in sys.argv[1:]); sys.exit(a!=b)' \
	before.json after.json && pass "c: the bootloader environment is exactly as before" || fail "c: bootloader changed"
rc=0
out=$(eq "$d" status 2>&1) || rc=$?
[ "$rc" -eq 0 ] && grep -q "booted slot: A" <<<"$out" && pass "c: status answers on the read-only folder" ||
	fail "c: status: exit $rc: $out"
mount -o remount,rw "$d/data"
recover "c read-only state" c B 2

# ---- a3. another program fills the data folder while an object downloads
# (a slow server: 1 MiB at 256 KiB/s); the bytes received stay in the .part
# and the next attempt resumes it
httpd_stop
HTTPD_EXTRA_CONF='connection.kbytes-per-second = 256' httpd_start "$w/repo" "$w/logs"
d=$w/a3
mkdir -p "$d/data"
mount -t tmpfs -o size=8m eqota-a3 "$d/data"
new_dev a3 fa3
prov a3
pub fa3 r2 big
eq "$d" status --json >before.json
s0=$(tree_sum "$d/A")
(
	try_update "$d"
	echo "$rc" >a3.rc
	printf '%s\n' "$out" >a3.out
) &
bg+=("$!")
part_started() {
	local f
	for f in "$d"/data/downloads/*.part; do [ -s "$f" ] && return 0; done
	return 1
}
if wait_for 20 part_started; then
	fallocate -l $(($(stat -f -c '%a*%S' "$d/data"))) "$d/data/filler"
	wait "${bg[-1]}" || true
	rc=$(cat a3.rc)
	out=$(cat a3.out)
	check_failed "a3 data folder fills during a download" a3 B "$s0" "$(tree_sum "$d/A")" before.json \
		"$d/data/downloads/" ".part: write failed: No space left on device"
	rm "$d/data/filler"
	recover "a3 data folder fills during a download" a3 B 2
	httpd_log_flush
	grep -q " 206 [0-9]* bytes=[1-9]" "$HTTPD_ACCESS_LOG" && pass "a3: the next attempt resumed the .part (HTTP 206)" ||
		fail "a3: no resumed download in the access log"
else
	fail "a3: no download started: $(cat a3.out 2>/dev/null)"
fi

echo "the errors eqota gave:"
cat msgs.txt
[ "$fails" -eq 0 ] || {
	echo "$fails check(s) failed"
	exit 1
}
[ -z "$block_skip" ] || skip "the block slot cases could not run: $block_skip (the other cases passed)"
echo "full disks and a read-only data folder: clear errors, nothing broken, and an update once there is room"
