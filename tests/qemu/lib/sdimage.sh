# shellcheck shell=bash
# run.sh sets the variables named in harness.sh before it sources this file,
# and reads sd_scenarios, sd and imgs, which it sets:
# shellcheck disable=SC2154,SC2034
# sdimage.sh: the board as it ships. Sourced by tests/qemu/run.sh after
# harness.sh. prepare_sd builds, in $bwork/sd, what the scenarios of
# $sd_scenarios boot (each step leaves a stamp, as prepare's do):
#   r1.tar, r2.tar    the slot images: tests/tools/mkimages.sh board (Debian
#                     12, systemd as PID 1, the board's kernel, eqota from its
#                     .deb of this checkout, 0.1.0-1 and 0.1.0-2), finished by
#                     lib/finish-image.py with the test device's own files:
#                     eqota.conf in root mode polling every 60 s, the root
#                     document, systemd-networkd on QEMU's user network, the
#                     journal copied to the console, the report unit, and
#                     the stand-in for a product's application that the
#                     health check asks systemd about (guest/systemd/)
#   r1-unhealthy.tar  (prepare_sd_unhealthy) r1 whose application
#                     configuration keeps the application
#                     (guest/systemd/eqota-test-app) from starting
#   keys/             TEST keys made at run time: root, release, timestamp
#   repo/             root 1, channel stable: r1 and r2 published in image mode
#   repo-unhealthy/   (prepare_sd_unhealthy) root 1, channel stable: r1 and
#                     r1-unhealthy
#   factory.img       slot A provisioned with r1 by `eqota provision` on the
#                     host, then the board's disk (build-image.sh)
# The images themselves are cached (EQ_CACHE_DIR/images-BOARD); the keys,
# and with them everything after the images, are made for this work folder.

sd_scenarios="daemon"

# The eqota.conf of the test device: the board's own, with the repository
# the harness forwards to, root-mode trust, the shortest poll interval and
# a health check.
sd_conf() {
	sed -e 's|^url = .*|url = http://10.0.2.100|' \
		-e 's|^key = .*|root = /etc/eqota/1.root.json|' "$top/boards/$board/eqota.conf"
	printf '\n[daemon]\n# The shortest interval: the test waits for the daemon, not for a timer.\ninterval = 60\njitter = 0\n'
	# The check docs/systemd.md suggests: the product's service is up.
	printf '\n[health]\ncheck = /usr/bin/systemctl is-active --quiet eqota-test-app.service\n'
}

# sd_finish R [unhealthy]: $sd/rR.tar from the cached rR.tar and the
# overlay; with "unhealthy", $sd/rR-unhealthy.tar, whose application
# configuration makes the application refuse to start (the unhealthy
# scenario's release).
sd_finish() {
	local r=$1 variant=${2:-} ov=$sd/overlay g=$top/tests/qemu/guest/systemd out=$sd/r$1${2:+-$2}.tar
	rm -rf "$ov"
	mkdir -p "$ov/etc/eqota" "$ov/etc/systemd/network" "$ov/etc/systemd/journald.conf.d" \
		"$ov/etc/systemd/system/multi-user.target.wants" "$ov/etc/systemd/system/sockets.target.wants" \
		"$ov/etc/systemd/system/network-online.target.wants" "$ov/etc/modules-load.d" "$ov/etc/udev/rules.d" "$ov/usr/local/sbin"
	sd_conf >"$ov/etc/eqota/eqota.conf"
	cp "$sd/repo/root/1.root.json" "$sd/repo/root/1.root.json.sig" "$ov/etc/eqota/"
	install -m 0644 "$g/10-eqota-test.network" "$ov/etc/systemd/network/"
	install -m 0644 "$g/journald-console.conf" "$ov/etc/systemd/journald.conf.d/eqota-test.conf"
	install -m 0644 "$g/60-eqota-test-io-timeout.rules" "$ov/etc/udev/rules.d/"
	install -m 0755 "$g/eqota-test-report" "$ov/usr/local/sbin/"
	install -m 0644 "$g/eqota-test-report.service" "$ov/etc/systemd/system/"
	install -m 0755 "$g/eqota-test-app" "$ov/usr/local/sbin/"
	install -m 0644 "$g/eqota-test-app.service" "$ov/etc/systemd/system/"
	if [ "$variant" = unhealthy ]; then
		echo 'ready = no' >"$ov/etc/eqota-test-app.conf"
	else
		echo 'ready = yes' >"$ov/etc/eqota-test-app.conf"
	fi
	# What `systemctl enable` links for systemd-networkd and the report.
	local u=/lib/systemd/system
	ln -s "$u/systemd-networkd.service" "$ov/etc/systemd/system/dbus-org.freedesktop.network1.service"
	ln -s "$u/systemd-networkd.service" "$ov/etc/systemd/system/multi-user.target.wants/"
	ln -s "$u/systemd-networkd.socket" "$ov/etc/systemd/system/sockets.target.wants/"
	ln -s "$u/systemd-networkd-wait-online.service" "$ov/etc/systemd/system/network-online.target.wants/"
	ln -s ../eqota-test-report.service "$ov/etc/systemd/system/multi-user.target.wants/"
	mkdir -p "$ov/etc/systemd/system/boot-complete.target.requires"
	ln -s ../eqota-test-app.service "$ov/etc/systemd/system/multi-user.target.wants/"
	ln -s ../eqota-test-app.service "$ov/etc/systemd/system/boot-complete.target.requires/"
	# fw_cfg carries the harness's inputs; nothing loads its driver otherwise.
	echo qemu_fw_cfg >"$ov/etc/modules-load.d/eqota-test.conf"
	python3 "$top/tests/qemu/lib/finish-image.py" "$imgs/r$r.tar" "$out" "$ov" \
		--remove etc/eqota/release.pub || hdie "finishing image ${out##*/} failed"
	# The finished image is the built one plus the overlay, bit for bit
	# elsewhere (owners, modes, file capabilities, hard links, device
	# nodes): checked by the comparer that shares no code with the finisher.
	local ex=() p rest
	while IFS= read -r p; do ex+=(--exclude "$p"); done < <(cd "$ov" && find . -mindepth 1 ! -type d | sed 's|^\./||')
	python3 "$top/tests/tools/imgcmp.py" "$imgs/r$r.tar" "$out" --exclude etc/eqota/release.pub "${ex[@]}" \
		>"$out.cmp" 2>&1 || true
	# What may remain: the overlay's own new folders.
	rest=$(sed '$d' "$out.cmp" | while IFS= read -r p; do
		case "$p" in *': extra in B (B has dir)') [ -d "$ov/${p%%: *}" ] && continue ;; esac
		echo "$p"
	done)
	[ -z "$rest" ] || { echo "$rest" | head -20 >&2; hdie "finished image ${out##*/} differs from $imgs/r$r.tar beyond the overlay ($out.cmp)"; }
	rm -rf "$ov"
}

# sd_pub RELEASE KEY [REPO DEBS]: publish $sd/RELEASE.tar with its packages
# ($imgs/RELEASE-debs, or $imgs/DEBS-debs), signed by $sd/keys/KEY.key, to
# $sd/repo (or $sd/REPO, with its own store).
sd_pub() {
	local repo=$sd/${3:-repo} debs=$imgs/${4:-$1}-debs
	# The warnings name every set-user-ID program of Debian's packages: kept
	# in the log, the summary printed.
	"$gen" -q publish --repo "$repo" --board "$board" --channel stable --release "$1" \
		--packages "$debs" --image "$sd/$1.tar" --image-devices \
		--key "$sd/keys/$2.key" --timestamp-key "$sd/keys/timestamp.key" \
		--trusted-root "$sd/keys/pinned.root.json" --store "$repo.db" \
		--level "${EQ_QEMU_ZSTD_LEVEL:-9}" --expires 3650 >"$sd/publish-$1.log" 2>&1 ||
		{ tail -20 "$sd/publish-$1.log" >&2; hdie "publishing $1 failed ($sd/publish-$1.log)"; }
	grep -E '^(published|image:) ' "$sd/publish-$1.log" >&2 || true
}

sd_factory() { # slot A holds r1 (eqota provision on the host), then the disk image
	local f=$sd/factory rc=0 mib
	hlog "systemd images: provisioning slot A with r1, the factory image"
	rm -rf "$f"
	httpd_start "$sd/repo" "$f/logs"
	simdevice_make "$f" "$HTTPD_URL" "$board" "$sd/repo/root/1.root.json"
	"$agent" --config "$f/eqota.conf" -q provision --slot A --release 1 || rc=$?
	httpd_stop
	[ $rc = 0 ] || hdie "provision of slot A from the systemd image failed (exit $rc)"
	# Both slots hold the larger image with room for the journal and
	# eqota's records, in whole 64 MiB.
	mib=$(du -sm "$sd/r1.tar" "$sd/r2.tar" | sort -n | tail -1 | cut -f1)
	mib=$(((mib * 13 / 10 + 64 + 63) / 64 * 64))
	# The data partition holds an update's downloads and its largest
	# temporary payload (perl's modules, 18 MiB), beside eqota's state:
	# the board's 64 MiB were too few (59 MiB needed, 49.9 MiB free).
	"$top/boards/$board/build-image.sh" --out "$sd/factory.img" --rootfs-a "$f/A" --slot-mib "$mib" \
		--data-mib 192 >/dev/null
	rm -rf "$f/A"
}

prepare_sd() {
	sd=$bwork/sd
	imgs=${EQ_CACHE_DIR:-$top/.cache}/images-$board
	mkdir -p "$sd"
	local t0=$SECONDS
	step_done sd-images || rm -f "$bwork/.stamp-sd-repo"
	step_done sd-repo || rm -f "$bwork/.stamp-sd-unhealthy"
	if ! step_done sd-images; then
		hlog "systemd images: building or reusing $imgs (tests/tools/mkimages.sh)"
		local rc=0
		EQ_IMAGE_EQOTA_BUILD=$bwork/build-$arch "$top/tests/tools/mkimages.sh" "${imgs%/*}" board "$board" \
			>"$bwork/mkimages.log" 2>&1 || rc=$?
		[ $rc = 0 ] || { tail -20 "$bwork/mkimages.log" >&2; hdie "building the systemd images failed (exit $rc, $bwork/mkimages.log)"; }
		rm -rf "$sd/keys" "$sd/repo"
		mkdir -p "$sd/keys"
		local k
		for k in root release release2 timestamp; do "$gen" keygen --out "$sd/keys/$k" >/dev/null; done
		"$gen" -q root init --repo "$sd/repo" --key "$sd/keys/root.key" --root-pub "$sd/keys/root.pub" \
			--release-pub "$sd/keys/release.pub" --timestamp-pub "$sd/keys/timestamp.pub" >/dev/null
		cp "$sd/repo/root/1.root.json" "$sd/keys/pinned.root.json"
		sd_finish 1
		sd_finish 2
		step_mark sd-images
	fi
	if ! step_done sd-repo; then
		hlog "systemd images: publishing r1, the factory image, a new release key, r2 (image mode, root mode)"
		rm -rf "$sd/repo/boards" "$sd/repo.db"
		find "$sd/repo/root" -name '*.root.json*' ! -name '1.root.json*' -delete
		sd_pub r1 release
		sd_factory
		# Between the two updates the release key is rotated, as after a
		# suspected leak: root 2 (signed by the root key the image pins)
		# trusts release2 instead of release, and r2 is signed by release2
		# alone. The device walks from its pinned root 1 to root 2 itself.
		# The factory is made before: under root 2, r1's manifest (signed by
		# the old key only) is refused, as a device must refuse it.
		"$gen" -q root rotate --repo "$sd/repo" --trusted-root "$sd/keys/pinned.root.json" --key "$sd/keys/root.key" \
			--release-pub "$sd/keys/release2.pub" >"$sd/rotate.log" 2>&1 ||
			{ cat "$sd/rotate.log" >&2; hdie "rotating the release key failed ($sd/rotate.log)"; }
		sd_pub r2 release2
		step_mark sd-repo
	fi
	hlog "systemd images prepared in $((SECONDS - t0)) s"
}

# prepare_sd_unhealthy: what `unhealthy --systemd` boots beside the factory
# image, made when that scenario first runs: $sd/r1-unhealthy.tar and its
# repository, r1 and then r1-unhealthy under root 1 (the device's pinned
# root, no rotation).
prepare_sd_unhealthy() {
	step_done sd-unhealthy && return 0
	hlog "systemd images: r1-unhealthy and its repository"
	sd_finish 1 unhealthy
	rm -rf "$sd/repo-unhealthy" "$sd/repo-unhealthy.db"
	mkdir -p "$sd/repo-unhealthy/root"
	cp "$sd/repo/root/1.root.json" "$sd/repo/root/1.root.json.sig" "$sd/repo-unhealthy/root/"
	sd_pub r1 release repo-unhealthy
	sd_pub r1-unhealthy release repo-unhealthy r1
	step_mark sd-unhealthy
}
