# shellcheck shell=bash
# run.sh sets the variables named below before it sources this file, and
# reads qlast, qresets, qkvmfalls back:
# shellcheck disable=SC2154,SC2034
# harness.sh: what every QEMU end-to-end scenario shares. Sourced by
# tests/qemu/run.sh after it has set:
#   top     the source tree
#   board   qemux86-64 or qemuarm64
#   bwork   the board's work folder (prepared once, reused by scenarios)
#   gen     the host's eqota-gen, agent: the host's eqota (for provision)
#
# prepare   builds whatever is missing in $bwork (each step leaves a stamp):
#   keys/test-release.{key,pub}   a TEST signing key made at run time
#   pkgs/{r1,r2,r2-unhealthy,r2-hang}/*.deb   the releases' packages
#   repo/                         one repository, channels:
#                                   stable     r1, r2
#                                   unhealthy  r1, r2 whose health check fails
#                                   hang       r1, r2 whose init never ends
#   store.db                      the equivalence store of all publishes
#   factory.img                   slot A provisioned with stable r1
# qboot     one boot of a scenario's disk, see below.

hlog() { echo "qemu[$board]: $*" >&2; }
hdie() { echo "qemu[$board]: FATAL: $*" >&2; exit 1; }

# shellcheck source=/dev/null
. "$top/boards/$board/board.conf"
# shellcheck source=/dev/null
. "$top/tests/integration/lib/httpd.sh"
# shellcheck source=/dev/null
. "$top/tests/integration/lib/simdevice.sh"
arch=$EQ_BOARD_ARCH
qemu_prog=${EQ_BOARD_QEMU%% *}
EQ_QEMU_REPO_ADDR=10.0.2.100:80

# KVM is used only when it really runs guest code: /dev/kvm exists on hosts
# whose KVM cannot run ordinary guests (QEMU-NOTES.md), and on others KVM
# runs some guests but refuses the board's CPU model (seen: -cpu host dies
# with "failed to set MSR 0x10a"). So the probe runs exactly what a boot
# runs, the board's machine (EQ_BOARD_QEMU) with the accelerator and CPU of
# accel_args, and only swaps the disk and firmware for a few bytes that
# power the machine off at once (x86: a write to isa-debug-exit, which
# makes QEMU exit 99; arm64: PSCI SYSTEM_OFF, exit 0). A KVM error or a
# hang within 10 s means TCG. The answer is kept per work folder, host
# kernel, QEMU binary and accelerator arguments. A boot that KVM still
# fails falls back to TCG by itself (qboot).
#
# accel_args ACCEL: the arguments run-qemu.sh adds for ACCEL.
accel_args() {
	if [ "$1" = kvm ]; then echo "${EQ_QEMU_KVM_ARGS:-$EQ_BOARD_ACCEL_KVM}"; else echo "$EQ_BOARD_ACCEL_TCG"; fi
}

# accel_probe ACCEL: 0 when that accelerator ran the probe to its end.
accel_probe() {
	local fw rc=0 want=0 machine=()
	fw=$(mktemp)
	if [ "$arch" = amd64 ]; then
		# 64 KiB BIOS; at the reset vector: mov al,0x31; out 0xf4,al; hlt
		head -c 65536 /dev/zero | tr '\0' '\364' > "$fw"
		printf '\260\061\346\364\364' | dd of="$fw" bs=1 seek=65520 conv=notrunc status=none
		# shellcheck disable=SC2054 # the commas are QEMU's option syntax
		machine=(-device isa-debug-exit,iobase=0xf4,iosize=0x04)
		want=99
	else
		# mov w0,#0x84000008 (PSCI SYSTEM_OFF); hvc #0
		printf '\000\001\200\122\000\200\260\162\002\000\000\324' > "$fw"
	fi
	# shellcheck disable=SC2046 # the board's words, split as run-qemu.sh splits them
	timeout 10 $EQ_BOARD_QEMU $(accel_args "$1") -nodefaults -display none -serial none -monitor none \
		-bios "$fw" "${machine[@]}" </dev/null >/dev/null 2>&1 || rc=$?
	rm -f "$fw"
	[ "$rc" = "$want" ]
}

accel_cache_key() {
	local q
	q=$(command -v "$qemu_prog")
	echo "$(uname -r) $q $(stat -c %Y "$q") $(accel_args kvm)"
}

accel_pick() {
	if [ -n "${EQ_QEMU_ACCEL:-}" ]; then echo "$EQ_QEMU_ACCEL"; return; fi
	local key cache=$bwork/.accel a=tcg
	case "$arch/$(uname -m)" in
	amd64/x86_64 | arm64/aarch64) ;;
	*) echo tcg; return ;;
	esac
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || { echo tcg; return; }
	key=$(accel_cache_key)
	if [ -f "$cache" ] && [ "$(sed -n 1p "$cache")" = "$key" ]; then sed -n 2p "$cache"; return; fi
	accel_probe kvm && a=kvm
	printf '%s\n%s\n' "$key" "$a" > "$cache"
	echo "$a"
}

# Each step's stamp holds a hash of the sources everything is built from,
# so an edit to eqota, a board or this harness rebuilds the packages, the
# repository and the image (the downloads stay cached).
inputs_hash() {
	{
		(cd "$top" && find CMakeLists.txt cmake common delta manifest gen bootloader agent scripts packaging man completion \
			"boards/$board" tests/qemu tests/integration/lib tests/tools/mkimages.sh -type f ! -name '*.md' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
		local d
		for d in "$user_rel1" "$user_rel2"; do
			echo "user release: $d"
			[ -z "$d" ] || (cd "$d" && find . -maxdepth 1 -type f -name '*.deb' -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
		done
	} | sha256sum | cut -c1-64
}

# check_user_releases: your release folders hold .deb files for this
# board's architecture, none of them one of eqota's own packages (the
# scenarios are built around those). Checked before anything is built.
check_user_releases() {
	local dir f name a n
	for dir in "$user_rel1" "$user_rel2"; do
		[ -n "$dir" ] || continue
		n=0
		for f in "$dir"/*.deb; do
			[ -f "$f" ] || continue
			name=$(dpkg-deb -f "$f" Package 2>/dev/null) || hdie "$f is not a Debian package (dpkg-deb cannot read its control file)"
			a=$(dpkg-deb -f "$f" Architecture)
			[ "$a" = "$arch" ] || [ "$a" = all ] || hdie "$f is for architecture $a, board $board is $arch"
			case "$name" in eqota | eqota-board-* | eqota-kernel-*)
				hdie "$f: package $name belongs to the harness and cannot be replaced" ;;
			esac
			n=$((n + 1))
		done
		[ $n -gt 0 ] || hdie "no .deb files in $dir"
	done
}

# add_user_release R DIR: the .deb files of DIR join release R's set; a
# package of the same name leaves it. The merged set must still be
# complete (dependencies, NEEDED libraries).
add_user_release() {
	local r=$1 dir=$2 f n=0
	for f in "$dir"/*.deb; do
		rm -f "$bwork/pkgs/r$r/$(dpkg-deb -f "$f" Package)_"*.deb
		cp "$f" "$bwork/pkgs/r$r/"
		n=$((n + 1))
	done
	hlog "release $r: $n of your packages from $dir"
	"$top/tests/qemu/lib/device-debs.sh" --arch "$arch" --verify "$bwork/pkgs/r$r" >/dev/null ||
		hdie "release $r with your packages from $dir is incomplete (see above)"
}
step_done() { [ -f "$bwork/.stamp-$1" ] && [ "$(cat "$bwork/.stamp-$1")" = "$inputs" ]; }
step_mark() { echo "$inputs" > "$bwork/.stamp-$1"; }

prepare() {
	mkdir -p "$bwork"
	local t0=$SECONDS
	# The KVM probe's firmware must run under TCG, or "no KVM" would be a
	# broken probe rather than an answer.
	accel_probe tcg || { hlog "the accelerator probe does not run under TCG (tests/qemu/lib/harness.sh accel_probe)"; return 1; }
	inputs=$(inputs_hash)
	# A later step is stale whenever an earlier one is redone.
	step_done debs || rm -f "$bwork/.stamp-repo" "$bwork/.stamp-factory"
	step_done repo || rm -f "$bwork/.stamp-factory"
	if [ ! -f "$bwork/keys/test-release.key" ] || [ ! -f "$bwork/keys/test-release.pub" ]; then
		rm -rf "$bwork/keys" "$bwork"/.stamp-*; mkdir -p "$bwork/keys"
		# A test key, made for this work folder only and never committed.
		"$gen" keygen --out "$bwork/keys/test-release" >/dev/null
	fi
	if ! step_done debs; then
		hlog "building eqota for $arch (two versions) and collecting the releases' packages"
		rm -rf "$bwork/eqota-debs" "$bwork/pkgs"
		"$top/tests/qemu/lib/mkdeb-eqota.sh" --arch "$arch" --version 0.1.0-1 --out "$bwork/eqota-debs" \
			--build "$bwork/build-$arch" >/dev/null
		"$top/tests/qemu/lib/mkdeb-eqota.sh" --arch "$arch" --version 0.1.0-2 --out "$bwork/eqota-debs" \
			--build "$bwork/build-$arch" >/dev/null
		local r
		for r in 1 2; do
			"$top/tests/qemu/lib/device-debs.sh" --arch "$arch" --release $r --out "$bwork/pkgs/r$r" \
				--eqota-deb "$bwork/eqota-debs/eqota_0.1.0-${r}_$arch.deb" >"$bwork/pkgs-r$r.txt"
		done
		if [ -n "$user_rel1" ]; then
			add_user_release 1 "$user_rel1"
			add_user_release 2 "$user_rel2"
		fi
		for r in r2-unhealthy r2-hang; do
			mkdir -p "$bwork/pkgs/$r"
			cp -l "$bwork/pkgs/r2"/*.deb "$bwork/pkgs/$r/"
		done
		local key=$bwork/keys/test-release.pub
		"$top/tests/qemu/lib/mkdeb-board.sh" --board "$board" --version 1 --release r1 --key "$key" --out "$bwork/pkgs/r1" >/dev/null
		"$top/tests/qemu/lib/mkdeb-board.sh" --board "$board" --version 2 --release r2 --key "$key" --out "$bwork/pkgs/r2" >/dev/null
		"$top/tests/qemu/lib/mkdeb-board.sh" --board "$board" --version 2 --release r2-unhealthy --variant unhealthy \
			--key "$key" --out "$bwork/pkgs/r2-unhealthy" >/dev/null
		"$top/tests/qemu/lib/mkdeb-board.sh" --board "$board" --version 2 --release r2-hang --variant hang \
			--key "$key" --out "$bwork/pkgs/r2-hang" >/dev/null
		step_mark debs
	fi
	if ! step_done repo; then
		hlog "publishing r1 and r2 (channels stable, unhealthy, hang)"
		rm -rf "$bwork/repo" "$bwork/store.db"
		local c r2
		for c in stable unhealthy hang; do
			r2=r2; [ $c = stable ] || r2=r2-$c
			pub "$c" r1 "$bwork/pkgs/r1"
			pub "$c" "$r2" "$bwork/pkgs/$r2"
		done
		step_mark repo
	fi
	if ! step_done factory; then
		hlog "provisioning slot A with r1 and building the factory image"
		factory
		step_mark factory
	fi
	hlog "prepared in $((SECONDS - t0)) s"
}

pub() { # pub CHANNEL RELEASE PKGDIR
	# The board package's files (bin/sh -> busybox and the other applet
	# links) win over a user's package that ships the same path (dash's
	# bin/sh): the image is the board's, and a release ships a path once.
	local owners=$bwork/path-owners-$2
	dpkg-deb -c "$3"/eqota-board-"$board"_*.deb |
		awk -v o="eqota-board-$board" '$1 !~ /^d/ { p = $6; sub(/^\.\//, "", p); print p, o }' > "$owners"
	"$gen" -q publish --repo "$bwork/repo" --board "$board" --channel "$1" --release "$2" \
		--packages "$3" --key "$bwork/keys/test-release.key" --store "$bwork/store.db" \
		--level "${EQ_QEMU_ZSTD_LEVEL:-9}" --expires 3650 --path-owners "$owners"
}

# The factory image: slot A filled by `eqota provision` on the host (dir
# slots, a throw-away bootloader file), so it carries the same per-package
# records as a slot that eqota installed on the device; then the board's
# build-image.sh turns that folder into the slot's ext4.
factory() {
	local f=$bwork/factory
	rm -rf "$f"
	httpd_start "$bwork/repo" "$f/logs"
	simdevice_make "$f" "$HTTPD_URL" "$board" "$bwork/keys/test-release.pub"
	local rc=0
	"$agent" --config "$f/eqota.conf" -q provision --slot A --release 1 || rc=$?
	httpd_stop
	[ $rc = 0 ] || hdie "provision of slot A failed (exit $rc)"
	"$top/boards/$board/build-image.sh" --out "$bwork/factory.img" --rootfs-a "$f/A" >/dev/null
	rm -rf "$f/A"
}

# qboot NAME STEP [--channel C] [--port P] [--kill-on REGEX [--kill-log FILE]
#                 [--kill-delay SEC]] [--kill-after SEC] [--timeout SEC]
#                 [--isolation-probe] [--fw NAME=VALUE]... [--stamps FILE]
# One boot of $disk (the scenario's copy of the factory image) with the
# guest init's fw_cfg inputs; the serial console goes to $sdir/NAME.log.
# The repository is the server on 127.0.0.1:P (default $HTTPD_PORT), which
# the guest reaches at $EQ_QEMU_REPO_ADDR and nowhere else: user-mode
# networking with restrict=on, one guestfwd whose socat connects to the
# server for each connection the guest opens. --isolation-probe makes the
# guest fetch the channel's manifest both ways, straight at 10.0.2.2 too,
# and report which arrived. With --kill-on, QEMU is killed SEC seconds
# after REGEX shows up in the serial log, or in FILE (a server's log); with
# --kill-after, SEC seconds after QEMU started. --fw adds the fw_cfg file
# opt/eqota/NAME for the guest init. --stamps writes each serial line with
# the seconds since the start at which it arrived (lib/stamps.py).
# Sets qrc: 0 QEMU ended by itself (guest poweroff or reset), 124 timeout,
# 137 killed by us (--kill-on matched, or --kill-after passed; a power cut).
#
# A boot that the guest's watchdog resets before the init started eqota
# is booted once more, as the reset itself would do on hardware (QEMU's
# -no-reboot turns it into an exit here); the first attempt's log is kept
# as NAME.reset.log and qresets counts these. Rarely (about 1 boot in 20
# on qemux86-64 under TCG, none seen on qemuarm64), the guest stops early
# in its init, before eqota runs: mount of the data partition waits for an
# NVMe read in ext4's journal recovery that never completes, with the vCPU
# idle. The watchdog is what brings such a device back. A second reset in
# a row is left to the scenario's checks.
#
# A boot under KVM that QEMU ends with an accelerator error (QEMU's stderr
# names KVM, or QEMU failed before the guest printed a byte) is booted
# again under TCG, and so is every later boot of the board: the probe
# passed, yet this host's KVM cannot run the real guest. That attempt's
# serial log and QEMU's stderr are kept as NAME.kvm.log(.stderr), the
# cached probe answer becomes tcg, and qkvmfalls counts these.
qresets=0 qkvmfalls=0
qboot() {
	local name=$1 step=$2 channel=stable kill_on='' kill_delay=0 secs=${EQ_QEMU_BOOT_TIMEOUT:-300}
	local port=${HTTPD_PORT:-} kill_log='' probe='' kill_after='' stamps='' fw=()
	shift 2
	while [ $# -gt 0 ]; do
		case "$1" in
		--channel) channel=$2; shift 2 ;;
		--kill-after) kill_after=$2; shift 2 ;;
		--stamps) stamps=$2; shift 2 ;;
		--fw) fw+=(-fw_cfg "name=opt/eqota/${2%%=*},string=${2#*=}"); shift 2 ;;
		--port) port=$2; shift 2 ;;
		--kill-log) kill_log=$2; shift 2 ;;
		--kill-on) kill_on=$2; shift 2 ;;
		--kill-delay) kill_delay=$2; shift 2 ;;
		--timeout) secs=$2; shift 2 ;;
		--isolation-probe) probe=1; shift ;;
		*) hdie "qboot: unknown option $1" ;;
		esac
	done
	local log=$sdir/$name.log
	kill_log=${kill_log:-$log}
	qlast=$log
	qboot_once
	if kvm_failed; then
		qkvmfalls=$((qkvmfalls + 1))
		mv "$log" "$sdir/$name.kvm.log" 2>/dev/null || : > "$sdir/$name.kvm.log"
		mv "$log.stderr" "$sdir/$name.kvm.log.stderr"
		hlog "boot $name: QEMU failed under KVM (exit $qrc: $(kvm_reason "$sdir/$name.kvm.log.stderr")); booting again under TCG, as every later boot of $board will"
		accel=tcg
		[ -n "${EQ_QEMU_ACCEL:-}" ] || printf '%s\n%s\n' "$(accel_cache_key)" tcg > "$bwork/.accel"
		qboot_once
	fi
	if [ "$qrc" = 0 ] && grep -aq 'softdog: Initiating system reboot' "$log" &&
		! grep -aq '^EQTEST step: mark-good' "$log"; then
		qresets=$((qresets + 1))
		mv "$log" "$sdir/$name.reset.log"
		hlog "boot $name: the watchdog reset the guest before eqota ran (its last line: $(qline "$name.reset" '' | tail -1)); booting again, as the reset would on hardware"
		qboot_once
	fi
}

# kvm_failed: the boot qboot_once just made ran under KVM and ended with an
# accelerator error rather than anything the guest did. Our own kill of a
# power cut (137) is never one, unless it was the kill for a KVM error.
kvm_failed() {
	[ "$accel" = kvm ] || return 1
	[ "$qkvm_err" = 0 ] || return 0
	[ "$qrc" != 0 ] && [ "$qrc" != 137 ] || return 1
	grep -aqi 'kvm' "$log.stderr" 2>/dev/null || [ ! -s "$log" ]
}
# kvm_reason STDERR: QEMU's last error line, for the log.
kvm_reason() {
	local r
	r=$(grep -a . "$1" 2>/dev/null | tail -1 | cut -c1-200)
	echo "${r:-no message; the guest printed nothing}"
}

# One QEMU run of qboot, with its locals. Sets qrc and qkvm_err (1 when the
# run was stopped for a KVM error QEMU reported while it kept running).
qboot_once() {
	local t0=$SECONDS pid
	rm -f "$log" "$log.stderr"
	EQ_QEMU_ACCEL=$accel "$top/boards/$board/run-qemu.sh" --disk "$disk" --log "$log" --timeout "$secs" -- \
		-nic "user,model=virtio-net-pci,restrict=on,guestfwd=tcp:$EQ_QEMU_REPO_ADDR-cmd:socat - TCP:127.0.0.1:$port" \
		-fw_cfg "name=opt/eqota/url,string=http://$EQ_QEMU_REPO_ADDR" \
		${probe:+-fw_cfg "name=opt/eqota/hostport,string=$port"} \
		${probe:+-fw_cfg "name=opt/eqota/probepath,string=/boards/$board/$channel/manifest.json"} \
		-fw_cfg "name=opt/eqota/channel,string=$channel" \
		-fw_cfg "name=opt/eqota/step,string=$step" "${fw[@]}" 2>"$log.stderr" &
	pid=$!
	local spid='' deadline=''
	if [ -n "$stamps" ]; then
		rm -f "$stamps" "$stamps.stop"
		python3 "$top/tests/qemu/lib/stamps.py" "$log" "$stamps" &
		spid=$!
	fi
	[ -z "$kill_after" ] || deadline=$(awk -v a="$kill_after" -v n="$(date +%s.%N)" 'BEGIN { printf "%.3f", n + a }')
	qrc=0 qkvm_err=0 qstall=0
	if [ -n "$kill_on$kill_after" ] || [ "$accel" = kvm ]; then
		while kill -0 "$pid" 2>/dev/null; do
			if [ -n "$deadline" ] && awk -v d="$deadline" -v n="$(date +%s.%N)" 'BEGIN { exit !(n >= d) }'; then
				qkill "$pid"
				break
			fi
			# A KVM internal error pauses the guest and QEMU waits for
			# a monitor command that never comes: stop it now rather
			# than at the boot's time limit.
			if [ "$accel" = kvm ] && grep -aqi 'KVM internal error\|kvm run failed' "$log.stderr" 2>/dev/null; then
				qkvm_err=1
				qkill "$pid"
				break
			fi
			if [ -n "$kill_on" ] && grep -aqE "$kill_on" "$kill_log" 2>/dev/null; then
				sleep "$kill_delay"
				qkill "$pid"
				break
			fi
			qstalled "$pid" && break
			sleep 0.05
		done
	else
		while kill -0 "$pid" 2>/dev/null; do
			qstalled "$pid" && break
			sleep 2
		done
	fi
	wait "$pid" || qrc=$?
	if [ -n "$spid" ]; then
		: >"$stamps.stop"
		wait "$spid" 2>/dev/null || true
		rm -f "$stamps.stop"
	fi
	hlog "boot $name ($step): $((SECONDS - t0)) s, qemu exit $qrc$([ "$accel" = kvm ] && echo ' (kvm)')"
}
# qstalled PID: the guest's kernel reports tasks blocked for 120 s (its
# hung-task check), which in these boots has meant a disk request QEMU
# never completed (docs/testing-in-ci.md, "Disk I/O on a loaded host").
# Nothing finishes after that: QEMU is stopped now, not at the boot's time
# limit, and the boot counts as a failed check that names the cause.
qstalled() {
	grep -aq 'blocked for more than [0-9]* seconds' "$log" 2>/dev/null || return 1
	qkill "$1"
	qstall=1
	fail "$name: the guest's I/O stalled: its kernel reports tasks blocked for 120 s ($(tr -d '\r' <"$log" | grep -a -m1 'blocked for more than' | cut -c1-100)); QEMU stopped. Not eqota's doing: see docs/testing-in-ci.md, 'Disk I/O on a loaded host'"
}
# qkill PID: SIGKILL to run-qemu.sh's timeout and QEMU itself, its child:
# SIGKILL is not passed on, and an orphaned QEMU would keep writing.
qkill() {
	local q
	q=$(pgrep -P "$1" || true)
	# shellcheck disable=SC2086 # one PID or none
	kill -KILL $q "$1" 2>/dev/null || true
}

# Lines the guest init printed: qline NAME PREFIX (without "EQTEST ").
qline() { tr -d '\r' < "$sdir/$1.log" | sed -n "s/^EQTEST $2//p"; }
