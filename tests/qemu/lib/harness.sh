# shellcheck shell=bash
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
arch=$EQ_BOARD_ARCH

# Whether a short KVM boot works; the machines this was written on have a
# /dev/kvm that ordinary guests cannot use (QEMU-NOTES), so the device file
# alone proves nothing.
accel_pick() {
	if [ -n "${EQ_QEMU_ACCEL:-}" ]; then echo "$EQ_QEMU_ACCEL"; return; fi
	local host
	host=$(uname -m)
	if [ -w /dev/kvm ] && { [ "$arch" = amd64 ] && [ "$host" = x86_64 ] || [ "$arch" = arm64 ] && [ "$host" = aarch64 ]; }; then
		local q=qemu-system-x86_64
		[ "$arch" = amd64 ] || q=qemu-system-aarch64
		if timeout 20 "$q" -accel kvm -M none -display none -S -monitor none -serial none \
			-device loader,addr=0,data=0,data-len=1 </dev/null >/dev/null 2>&1 & wait $!; then
			echo kvm; return
		fi
	fi
	echo tcg
}

# Each step's stamp holds a hash of the sources everything is built from,
# so an edit to eqota, a board or this harness rebuilds the packages, the
# repository and the image (the downloads stay cached).
inputs_hash() {
	(cd "$top" && find CMakeLists.txt cmake common delta manifest bootloader agent scripts \
		"boards/$board" tests/qemu -type f ! -name '*.md' -print0 | LC_ALL=C sort -z |
		xargs -0 sha256sum | sha256sum | cut -c1-64)
}
step_done() { [ -f "$bwork/.stamp-$1" ] && [ "$(cat "$bwork/.stamp-$1")" = "$inputs" ]; }
step_mark() { echo "$inputs" > "$bwork/.stamp-$1"; }

prepare() {
	mkdir -p "$bwork"
	local t0=$SECONDS
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
	"$gen" -q publish --repo "$bwork/repo" --board "$board" --channel "$1" --release "$2" \
		--packages "$3" --key "$bwork/keys/test-release.key" --store "$bwork/store.db" \
		--level "${EQ_QEMU_ZSTD_LEVEL:-9}" --expires 3650
}

# The factory image: slot A filled by `eqota provision` on the host (dir
# slots, a throw-away bootloader file), so it carries the same per-package
# records as a slot that eqota installed on the device; then the board's
# build-image.sh turns that folder into the slot's ext4.
factory() {
	local f=$bwork/factory
	rm -rf "$f"; mkdir -p "$f/A" "$f/B" "$f/data" "$f/logs"
	cat > "$f/eqota.conf" <<-EOF
		[repository]
		url = http://127.0.0.1:@PORT@
		board = $board
		channel = stable
		key = $bwork/keys/test-release.pub
		[slots]
		type = dir
		A = $f/A
		B = $f/B
		[bootloader]
		backend = file
		path = $f/bootenv
		[paths]
		data = $f/data
	EOF
	httpd_start "$bwork/repo" "$f/logs"
	sed -i "s/@PORT@/$HTTPD_PORT/" "$f/eqota.conf"
	local rc=0
	"$agent" --config "$f/eqota.conf" -q provision --slot A --release 1 || rc=$?
	httpd_stop
	[ $rc = 0 ] || hdie "provision of slot A failed (exit $rc)"
	"$top/boards/$board/build-image.sh" --out "$bwork/factory.img" --rootfs-a "$f/A" >/dev/null
	rm -rf "$f/A"
}

# qboot NAME STEP [--channel C] [--port P] [--kill-on REGEX [--kill-log FILE]
#                 [--kill-delay SEC]] [--timeout SEC]
# One boot of $disk (the scenario's copy of the factory image) with the
# guest init's fw_cfg inputs; the serial console goes to $sdir/NAME.log.
# The repository is the server on 127.0.0.1:P (default $HTTPD_PORT). With
# --kill-on, QEMU is killed SEC seconds after REGEX shows up in the serial
# log, or in FILE (a server's log).
# Sets qrc: 0 QEMU ended by itself (guest poweroff or reset), 124 timeout,
# 137 killed by us (--kill-on matched; a power cut).
qboot() {
	local name=$1 step=$2 channel=stable kill_on='' kill_delay=0 secs=${EQ_QEMU_BOOT_TIMEOUT:-300}
	local port=${HTTPD_PORT:-} kill_log=''
	shift 2
	while [ $# -gt 0 ]; do
		case "$1" in
		--channel) channel=$2; shift 2 ;;
		--port) port=$2; shift 2 ;;
		--kill-log) kill_log=$2; shift 2 ;;
		--kill-on) kill_on=$2; shift 2 ;;
		--kill-delay) kill_delay=$2; shift 2 ;;
		--timeout) secs=$2; shift 2 ;;
		*) hdie "qboot: unknown option $1" ;;
		esac
	done
	local log=$sdir/$name.log t0=$SECONDS pid
	rm -f "$log"
	kill_log=${kill_log:-$log}
	EQ_QEMU_ACCEL=$accel "$top/boards/$board/run-qemu.sh" --disk "$disk" --log "$log" --timeout "$secs" -- \
		-nic "user,model=virtio-net-pci" \
		-fw_cfg "name=opt/eqota/url,string=http://10.0.2.2:$port" \
		-fw_cfg "name=opt/eqota/channel,string=$channel" \
		-fw_cfg "name=opt/eqota/step,string=$step" 2>"$log.stderr" &
	pid=$!
	qrc=0
	if [ -n "$kill_on" ]; then
		while kill -0 "$pid" 2>/dev/null; do
			if grep -aqE "$kill_on" "$kill_log" 2>/dev/null; then
				sleep "$kill_delay"
				# QEMU itself, the child of run-qemu.sh's timeout: SIGKILL
				# is not passed on, and an orphaned QEMU would keep writing.
				local q
				q=$(pgrep -P "$pid" || true)
				# shellcheck disable=SC2086 # one PID or none
				kill -KILL $q "$pid" 2>/dev/null || true
				break
			fi
			sleep 0.05
		done
	fi
	wait "$pid" || qrc=$?
	hlog "boot $name ($step): $((SECONDS - t0)) s, qemu exit $qrc"
}

# Lines the guest init printed: qline NAME PREFIX (without "EQTEST ").
qline() { tr -d '\r' < "$sdir/$1.log" | sed -n "s/^EQTEST $2//p"; }
