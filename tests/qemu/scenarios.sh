# shellcheck shell=bash
# run.sh and harness.sh set the variables these scenarios read:
# shellcheck disable=SC2154
# The end-to-end scenarios, one function each, sourced by tests/qemu/run.sh
# (which provides qboot, qline, pass, fail, $bwork, $sdir, $disk).

# json_get JSON PYTHON-EXPR: evaluates EXPR with the parsed JSON as j.
json_get() { python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null || true; }

# jlog BOOT: the serial log of BOOT without carriage returns.
jlog() { tr -d '\r' <"$sdir/$1.log"; }

# status_of BOOT: the last `eqota status --json` line the guest printed.
status_of() { qline "$1" 'status ' | tail -1; }

# expect_boot BOOT SLOT: the guest came up on SLOT and eqota confirmed it.
expect_boot() {
	local got
	got=$(qline "$1" 'booted slot=' | sed 's/ .*//' | tail -1)
	if [ "$got" = "$2" ]; then pass "$1: booted slot $2"; else fail "$1: booted slot '${got:-none}', expected $2 (log $sdir/$1.log)"; fi
}
expect_line() { # expect_line BOOT TEXT: the guest printed "EQTEST TEXT"
	# Not "qline | grep -q": an early exit of grep would fail the pipeline
	# (SIGPIPE under pipefail).
	if qline "$1" '' | grep -xF "$2" >/dev/null; then pass "$1: $2"; else fail "$1: no 'EQTEST $2' in $sdir/$1.log"; fi
}
# expect_status BOOT PYTHON-CONDITION DESCRIPTION: on the status JSON as j.
expect_status() {
	local s
	s=$(status_of "$1")
	if [ -n "$s" ] && [ "$(json_get "$s" "bool($2)")" = True ]; then
		pass "$1: $3"
	else
		fail "$1: $3: status was ${s:-missing}"
	fi
}

# Packages whose .deb differs between two package folders, by file name
# (name_version_arch): what the update must download, worked out without
# eqota.
changed_packages() {
	comm -3 <(ls "$1" | LC_ALL=C sort) <(ls "$2" | LC_ALL=C sort) | sed 's/^\t//; s/_.*//' | LC_ALL=C sort -u
}

# Packages whose object or delta the server sent, from the access log and
# the channel's current manifest: fetched_packages CHANNEL [REPOSITORY].
fetched_packages() {
	httpd_log_flush
	python3 - "${2:-$bwork/repo}/boards/$board/$1/manifest.json" "$HTTPD_ACCESS_LOG" <<-'EOF'
		import json, sys
		m = json.load(open(sys.argv[1]))
		owner = {}
		for p in m["packages"]:
		    owner["/" + p["object"]["path"]] = p["name"]
		    for d in p.get("deltas", []):
		        owner["/" + d["path"]] = p["name"]
		names = set()
		for line in open(sys.argv[2]):
		    f = line.split(" ")
		    if len(f) >= 4 and f[1].startswith(("/objects/", "/deltas/")) and f[2] in ("200", "206"):
		        names.add(owner.get(f[1], "?" + f[1]))
		print("\n".join(sorted(names)))
	EOF
}
fetched_bytes() {
	httpd_log_flush
	awk '$2 ~ /^\/(objects|deltas)\// && ($3 == 200 || $3 == 206) { s += $4 } END { print s + 0 }' "$HTTPD_ACCESS_LOG"
}

# ---- 1. happy path --------------------------------------------------------------
scenario_happy() {
	httpd_start "$bwork/repo" "$sdir/logs"
	local predicted plan want got
	predicted=$("$gen" diff --repo "$bwork/repo" --board "$board" --channel stable --from r1 --to r2 --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["download_bytes"])')

	qboot 1-update update --isolation-probe
	expect_boot 1-update A
	expect_line 1-update "forward reached"
	expect_line 1-update "host-direct blocked"
	expect_line 1-update "mark-good rc=0"
	plan=$(qline 1-update 'plan ' | tail -1)
	got=$(json_get "$plan" 'j["download_bytes"]')
	if [ -n "$got" ] && [ "$got" = "$predicted" ]; then
		pass "1-update: the device plans $got bytes, as eqota-gen diff predicts"
	else
		fail "1-update: the device plans '${got}' bytes, eqota-gen diff predicts $predicted"
	fi
	expect_line 1-update "update rc=3"
	got=$(fetched_bytes)
	if [ "$got" = "$predicted" ]; then
		pass "1-update: the server sent $got bytes of objects and deltas, the plan's number"
	else
		fail "1-update: the server sent $got bytes of objects and deltas, the plan said $predicted"
	fi
	want=$(changed_packages "$bwork/pkgs/r1" "$bwork/pkgs/r2")
	got=$(fetched_packages stable)
	if [ -n "$want" ] && [ "$got" = "$want" ]; then
		pass "1-update: downloaded only the changed packages: $(echo "$got" | tr '\n' ' ')"
	else
		fail "1-update: downloaded '$(echo "$got" | tr '\n' ' ')', changed are '$(echo "$want" | tr '\n' ' ')'"
	fi
	expect_status 1-update 'j["bootloader"]["trial"] == "B" and j["bootloader"]["order"][0] == "B"' "slot B is on trial"

	qboot 2-newslot status
	expect_boot 2-newslot B
	expect_line 2-newslot "mark-good rc=0"
	expect_status 2-newslot 'j["booted"] == "B" and j["slots"]["B"]["release"] == "r2" and j["bootloader"]["trial"] is None and j["bootloader"]["order"] == ["B", "A"]' \
		"release r2 in slot B is committed, A stays the fallback"

	qboot 3-again status
	expect_boot 3-again B
	expect_status 3-again 'j["booted"] == "B" and j["bootloader"]["left"]["B"] >= 1 and j["failed"] is None' \
		"a further boot stays on B"
	httpd_stop
}

# ---- 2. the health check fails in the new slot ------------------------------------
scenario_unhealthy() {
	httpd_start "$bwork/repo" "$sdir/logs"
	qboot 1-update update --channel unhealthy
	expect_boot 1-update A
	expect_line 1-update "update rc=3"

	qboot 2-newslot status --channel unhealthy
	expect_boot 2-newslot B
	expect_line 2-newslot "mark-good rc=4"
	expect_status 2-newslot 'j["bootloader"]["order"] == ["A"] and j["bootloader"]["trial"] is None and j["failed"]["number"] == 2' \
		"B failed its health checks: marked bad, A primary again, the failure recorded"

	qboot 3-back update --channel unhealthy
	expect_boot 3-back A
	expect_line 3-back "mark-good rc=0"
	expect_status 3-back 'j["booted"] == "A" and j["slots"]["A"]["release"] == "r1" and j["failed"]["number"] == 2 and "health" in j["failed"]["reason"]' \
		"back on r1 in A; status reports the failed update"
	# The failed release is not installed again until a newer one appears.
	expect_line 3-back "update rc=0"
	expect_status 3-back 'j["bootloader"]["order"] == ["A"] and j["state"]["phase"] == "idle"' "the failed release is not retried"
	httpd_stop
}

# The same on the systemd images (run.sh --systemd): the release breaks the
# product's application (its configuration), the health check a product
# writes (systemctl is-active of the application's unit, docs/systemd.md)
# fails in eqota-confirm.service, which marks the slot bad and reboots; the
# daemon on the old slot then leaves the failed release alone.
scenario_unhealthy_sd() {
	local repo=$sd/repo-unhealthy
	prepare_sd_unhealthy
	httpd_start "$repo" "$sdir/logs"
	# A fresh timestamp, as a publisher's cron keeps it (a prepared
	# repository may be older than its 24 hours).
	"$gen" -q timestamp --repo "$repo" --board "$board" --channel stable --trusted-root "$sd/keys/pinned.root.json" \
		--key "$sd/keys/timestamp.key" >"$sdir/timestamp.log" 2>&1 || { cat "$sdir/timestamp.log"; hdie "refreshing the timestamp failed"; }

	qboot 1-daemon daemon --timeout 900
	expect_boot 1-daemon A
	expect_line 1-daemon "unit eqota-test-app.service active"
	if [ "$qrc" = 0 ] && jlog 1-daemon | grep -a 'eqota\[[0-9]*\]: .*telling the bootloader to try it once' >/dev/null; then
		pass "1-daemon: eqota.service installed r1-unhealthy by itself and rebooted into it"
	else
		fail "1-daemon: no install and reboot by eqota.service (QEMU exit $qrc)"
	fi

	# Slot B on trial: the application refuses its configuration, the
	# check fails, eqota-confirm.service marks B bad and reboots. That boot
	# ends before the report: its journal on the console is the evidence.
	qboot 2-trial status
	local j
	j=$(jlog 2-trial)
	if grep -a 'Command line:.* eqota\.slot=B' <<<"$j" >/dev/null; then pass "2-trial: booted slot B"; else fail "2-trial: did not boot slot B"; fi
	if grep -a "eqota-test-app: /etc/eqota-test-app.conf does not say 'ready = yes'" <<<"$j" >/dev/null &&
		grep -a 'Failed to start eqota-test-app.service' <<<"$j" >/dev/null; then
		pass "2-trial: the release's application failed to start (systemd)"
	else
		fail "2-trial: no failed start of eqota-test-app.service in the journal"
	fi
	if grep -a "eqota\[[0-9]*\]: .*release 2 in slot B: health check failed: health check '/usr/bin/systemctl is-active --quiet eqota-test-app.service' failed with exit status [1-9][0-9]*; rolling back to slot A" <<<"$j" >/dev/null; then
		pass "2-trial: eqota-confirm.service ran the health check, which failed, and rolled back to slot A"
	else
		fail "2-trial: no failed health check and roll-back to slot A from eqota-confirm.service"
	fi
	if [ "$qrc" = 0 ] && grep -a 'reboot: Restarting system' <<<"$j" >/dev/null; then
		pass "2-trial: eqota-confirm.service rebooted the device"
	else
		fail "2-trial: the boot did not end with a reboot (QEMU exit $qrc)"
	fi

	qboot 3-back status --fw "waitlog=failed on this device before"
	expect_boot 3-back A
	expect_line 3-back "confirm active/success exit=0"
	expect_line 3-back "unit eqota-test-app.service active"
	expect_status 3-back 'j["booted"] == "A" and j["slots"]["A"]["release"] == "r1" and j["bootloader"]["order"] == ["A"] and j["failed"]["number"] == 2 and "health" in j["failed"]["reason"]' \
		"back on r1 in A; status reports release 2 failed its health check"
	expect_line 3-back "waitlog found"
	if jlog 3-back | grep -a "eqota\[[0-9]*\]: .*release 'r1-unhealthy' (number 2) failed on this device before: not installed again" >/dev/null &&
		! jlog 3-back | grep -a 'telling the bootloader to try it once' >/dev/null; then
		pass "3-back: the daemon's poll leaves the failed release alone and says why"
	else
		fail "3-back: no 'failed on this device before' from eqota.service, or it installed again"
	fi
	httpd_stop
}

# ---- 3. the new slot hangs before eqota runs --------------------------------------
scenario_hang() {
	httpd_start "$bwork/repo" "$sdir/logs"
	qboot 1-update update --channel hang
	expect_boot 1-update A
	expect_line 1-update "update rc=3"

	# B's init arms the watchdog and never gets further; nothing from the
	# harness ends that boot. The watchdog resets the guest and the boot
	# script tries B again while it has trial attempts left (the board's
	# try-attempts), then falls back to A. qboot boots again after a reset,
	# as the reset does on hardware, once per call: the first attempt of a
	# call is kept in 2-hangN.reset.log, the next boot in 2-hangN.log.
	local tries hangs=0 i=0 f
	tries=$(sed -n 's/^try-attempts = \([1-9]\)$/\1/p' "$top/boards/$board/eqota.conf")
	tries=${tries:-2}
	while [ $i -le "$tries" ]; do
		i=$((i + 1))
		qboot "2-hang$i" status --channel hang --timeout 240
		for f in "$sdir/2-hang$i.reset.log" "$sdir/2-hang$i.log"; do
			[ -f "$f" ] && tr -d '\r' <"$f" | grep -ax 'EQTEST hanging on purpose' >/dev/null &&
				grep -aq 'softdog: Initiating system reboot' "$f" && hangs=$((hangs + 1))
		done
		qline "2-hang$i" 'booted slot=' | grep '^A ' >/dev/null && break
	done
	if [ "$hangs" = "$tries" ]; then
		pass "2-hang: slot B hung in each of its $tries trial boots and the watchdog reset it each time"
	else
		fail "2-hang: $hangs hangs of slot B ended by the watchdog, expected $tries, one per trial attempt (see $sdir/2-hang*.log)"
	fi
	expect_boot "2-hang$i" A
	expect_status "2-hang$i" 'j["booted"] == "A" and "B" not in j["bootloader"]["order"] and j["failed"]["number"] == 2' \
		"the boot counter brought the device back to A without any human action; the failure is recorded"

	qboot 3-again status --channel hang
	expect_boot 3-again A
	expect_line 3-again "mark-good rc=0"
	httpd_stop
}

# ---- 4. power cuts -------------------------------------------------------------------
# Each cut kills QEMU (SIGKILL: no flush, no unmount) at a point of the
# update; the next boot must come up on a complete slot. The download cuts
# are made while a download is half done: badhttp.py (mode stall) sends
# half of each object's first GET and then holds, and the harness cuts a
# few seconds later, when eqota has had time to sync what it received. The
# next attempt must ask only for the rest (Range).
pc_cuts=0 pc_unbootable=0

# pc_cut NAME STEP QBOOT-OPTIONS...: one boot cut at the point the options
# name; returns 1 when the point never came (the boot ended by itself).
pc_cut() {
	local name=$1 step=$2
	shift 2
	qboot "cut-$name" "$step" "$@"
	[ "$qrc" = 137 ] || return 1
	pc_cuts=$((pc_cuts + 1))
}
# pc_after NAME: the boot after a cut must come up on a complete slot that
# eqota can vouch for (confirmed, or rolled back to).
pc_after() {
	qboot "after-$1" status
	local slot
	slot=$(qline "after-$1" 'booted slot=' | sed 's/ .*//' | tail -1)
	if [ -n "$slot" ] && qline "after-$1" '' | grep -E '^mark-good rc=(0|4)$' >/dev/null; then
		pass "after-$1: cut during $1, the next boot came up on slot $slot"
	else
		pc_unbootable=$((pc_unbootable + 1))
		fail "after-$1: no complete slot came up after the cut (log $sdir/after-$1.log)"
	fi
}

scenario_powercut() {
	httpd_start "$bwork/repo" "$sdir/logs"
	local bad_port bad_pid bad_log=$sdir/logs/stall.log points=0
	bad_port=$(httpd_free_port)
	python3 "$top/tests/integration/lib/badhttp.py" stall "$bad_port" "$bwork/repo" \
		--lifetime 900 --max-requests 2000 --log "$bad_log" &
	bad_pid=$!

	# 1, 2: during a download, twice: the second attempt resumes the first
	# object and is cut in the middle of the next one.
	local i
	for i in 1 2; do
		points=$((points + 1))
		if pc_cut "download$i" update --port "$bad_port" --kill-log "$bad_log" --kill-on ' stalled$' --kill-delay 3; then
			pc_after "download$i"
		else
			fail "cut-download$i: no download stalled (QEMU exit $qrc)"
		fi
		cp "$bad_log" "$bad_log.$i"
		: > "$bad_log" # badhttp.py appends (O_APPEND): the next cut waits for a new stall
	done
	kill "$bad_pid" 2>/dev/null || true
	wait "$bad_pid" 2>/dev/null || true
	if awk '$3 == 206 && $5 ~ /^bytes=[1-9]/' "$bad_log.2" | grep . >/dev/null; then
		pass "the interrupted download resumed: $(awk '$3 == 206 { print $2, $5; exit }' "$bad_log.2")"
	else
		fail "no resumed download (206 with a Range from a nonzero offset) in $bad_log.2"
	fi

	# 3: while the inactive slot is being filled.
	points=$((points + 1))
	if pc_cut install update --kill-on 'install: 1[0-9]/[0-9]+ packages'; then
		pc_after install
	else
		fail "cut-install: the install never got to package 10 (QEMU exit $qrc)"
	fi

	# 4: at the bootloader environment write (the message comes just before
	# it). Then 5: the first boot after it, before the kernel starts; when
	# the write did not happen, that boot is slot A, which installs again,
	# and the next one is cut.
	points=$((points + 1))
	pc_cut switch update --kill-on 'telling the bootloader to try it once' ||
		fail "cut-switch: the install never reached the switch (QEMU exit $qrc)"
	points=$((points + 1))
	local tries=0
	until pc_cut first-boot update-retry --kill-on 'Kernel command line:.*eqota\.slot=B'; do
		tries=$((tries + 1))
		[ $tries -lt 2 ] || break
	done
	if [ "$qrc" = 137 ]; then pc_after first-boot; else fail "cut-first-boot: slot B was never booted"; fi
	# The cut spent one of the trial's attempts; with the board's second
	# one (try-attempts = 2) the update is not lost: B comes up and commits.
	expect_boot after-first-boot B
	expect_status after-first-boot 'j["booted"] == "B" and j["slots"]["B"]["release"] == "r2" and j["bootloader"]["trial"] is None and j["failed"] is None' \
		"the cut during the first boot of slot B did not lose release r2: B's second trial boot committed it"

	# 6: while eqota confirms the new slot. The device is back at the
	# factory state (r1 in slot A) so that there is a trial to cut.
	points=$((points + 1))
	cp --sparse=always "$bwork/factory.img" "$disk"
	rm -f "$disk.vars"
	qboot prep-confirm update
	if qline prep-confirm '' | grep -x "update rc=3" >/dev/null &&
		pc_cut confirm status --kill-on 'EQTEST booted slot=B' --kill-delay 0.3; then
		pc_after confirm
	else
		fail "cut-confirm: no trial of slot B to cut (see $sdir/prep-confirm.log)"
	fi

	# Whatever the cuts left, an update now succeeds and commits.
	if ! status_of after-confirm | grep -q '"booted":"B"'; then
		qboot final-update update-retry
		expect_line final-update "update rc=3"
	fi
	qboot final-boot status
	expect_boot final-boot B
	expect_line final-boot "mark-good rc=0"
	expect_status final-boot 'j["booted"] == "B" and j["slots"]["B"]["release"] == "r2" and j["bootloader"]["trial"] is None' \
		"after all cuts release r2 is installed and committed"
	echo "power cuts: $pc_cuts at $points points, unbootable outcomes: $pc_unbootable"
	[ $pc_cuts -ge $points ] && pass "$pc_cuts power cuts at $points points" || fail "only $pc_cuts cuts at $points points"
	[ $pc_unbootable = 0 ] && pass "0 unbootable outcomes" || fail "$pc_unbootable unbootable outcomes"
	httpd_stop
}

# ---- 4b. power cuts at random instants ------------------------------------------
# A campaign (--cuts N --seed S): each cut kills QEMU at a random instant
# of one update, from the power-on of the old slot to the confirmation of
# the new one; then the device boots again as often as it needs (each boot:
# confirm, `eqota verify`, one `eqota update` as the daemon's poll would
# make it, without --retry) and must end on release r2, committed. An
# uninterrupted reference update, timed line by line, splits the update
# into phases; each cut draws a phase, then an instant inside it, so that
# short phases (the bootloader write) get their share of cuts. A cut that
# lands later than drawn (the guest ran faster) is counted in the phase the
# serial log shows it reached.
#
# Outcomes that must not happen: a boot that does not come up on a complete
# slot that verifies (no "booted slot=", a mark-good that neither confirms
# nor notices a rollback, or `eqota verify` failing), and an update lost
# (after 4 boots the device is not on r2 committed).
#
# The device runs with try-attempts = --try-attempts (default 2, eqota's
# default and the boards'): with 1, a cut during the first boot of the new
# slot is what a slot that never comes up looks like, and the release is
# rolled back and recorded as failed (docs/reliability.md).
pcr_phases=(
	"boot-old|1|"                                 # power-on, firmware, kernel, init on r1
	"confirm-check|1|EQTEST step: mark-good"      # confirm the old slot, verify it, fetch and check the manifest
	"download-install|1|EQTEST plan "             # downloads and the build of slot B
	"switch|1|telling the bootloader to try"      # the bootloader write, the state, shutdown
	"boot-new|2|"                                 # power-on into the trial slot, kernel, init on r2
	"health-confirm|2|EQTEST step: mark-good"     # health check, commit in the bootloader and the state
	"after-confirm|2|EQTEST mark-good rc="        # verify, status, shutdown
)

# pcr_window STAMPS INDEX: "START END" in seconds of phase INDEX in a boot
# timed by qboot --stamps: from its marker (0 for power-on) to the next
# phase's marker in the same boot, or to the last line of the boot.
pcr_window() {
	local stamps=$1 i=$2 b m j nb nm start end
	IFS='|' read -r _ b m <<<"${pcr_phases[$i]}"
	if [ -z "$m" ]; then start=0; else start=$(grep -F -m1 -- "$m" "$stamps" | cut -d' ' -f1); fi
	end=$(tail -1 "$stamps" | cut -d' ' -f1)
	j=$((i + 1))
	if [ $j -lt ${#pcr_phases[@]} ]; then
		IFS='|' read -r _ nb nm <<<"${pcr_phases[$j]}"
		[ "$nb" != "$b" ] || end=$(grep -F -m1 -- "$nm" "$stamps" | cut -d' ' -f1)
	fi
	echo "${start:-} ${end:-}"
}

# pcr_reached LOG BOOT: the last phase of boot BOOT whose marker is in LOG.
pcr_reached() {
	local log=$1 b=$2 i name pb m last=''
	for i in "${!pcr_phases[@]}"; do
		IFS='|' read -r name pb m <<<"${pcr_phases[$i]}"
		[ "$pb" = "$b" ] || continue
		if [ -z "$m" ] || tr -d '\r' <"$log" | grep -aF -- "$m" >/dev/null; then last=$name; fi
	done
	echo "$last"
}

# pcr_boot_ok NAME: the boot came up on a slot, eqota confirmed it or
# noticed the fallback, and the slot it confirmed verifies.
pcr_boot_ok() {
	local rc
	qline "$1" 'booted slot=' | grep . >/dev/null || return 1
	rc=$(qline "$1" 'mark-good rc=' | tail -1)
	case "$rc" in
	4) return 0 ;;
	0) [ "$(qline "$1" 'verify rc=' | tail -1)" = 0 ] ;;
	*) return 1 ;;
	esac
}

# pcr_done NAME: after boot NAME the device runs r2 in B, committed.
pcr_done() {
	local st
	st=$(status_of "$1")
	[ -n "$st" ] && [ "$(json_get "$st" 'j["booted"] == "B" and j["slots"]["B"]["release"] == "r2" and j["bootloader"]["trial"] is None and j["state"]["phase"] == "idle"')" = True ]
}

scenario_powercut_random() {
	# The repository behind a 64 KiB/s uplink, so that the downloads (0.4 MB
	# of deltas) take seconds of the update, as on a device in the field.
	local port pid
	port=$(httpd_free_port)
	python3 "$top/tests/integration/lib/badhttp.py" ok "$port" "$bwork/repo" --rate 65536 \
		--lifetime 86400 --max-requests 1000000 --log "$sdir/logs/access.log" &
	pid=$!
	pcr_campaign --port "$port"
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

pcr_campaign() {
	local fw=(--fw "try-attempts=$pc_tries" --fw verify=1 "$@")
	hlog "power-cut campaign: $pc_ncuts cuts, seed $pc_seed, try-attempts $pc_tries"
	echo "seed: $pc_seed (tests/qemu/run.sh --board $board --scenario powercut-random --cuts $pc_ncuts --seed $pc_seed --try-attempts $pc_tries)"

	# The reference: one update without a cut, timed. The disk after its
	# first boot (slot B built and on trial) is where cuts in the second
	# boot start from.
	qboot ref-1 update "${fw[@]}" --stamps "$sdir/ref-1.stamps"
	qline ref-1 '' | grep -x "update rc=3" >/dev/null || { fail "ref-1: the reference update did not install r2"; return; }
	cp --sparse=always "$disk" "$sdir/trial.img"
	qboot ref-2 status "${fw[@]}" --stamps "$sdir/ref-2.stamps"
	if pcr_boot_ok ref-2 && pcr_done ref-2; then pass "reference update: r2 installed, confirmed and verified"; else
		fail "ref-2: the reference update did not end on r2 committed"; return; fi
	local i name b m win start end n=${#pcr_phases[@]}
	local -a ws we
	for i in "${!pcr_phases[@]}"; do
		IFS='|' read -r name b m <<<"${pcr_phases[$i]}"
		win=$(pcr_window "$sdir/ref-$b.stamps" "$i")
		read -r start end <<<"$win"
		if [ -z "$start" ] || [ -z "$end" ]; then fail "reference boot $b: no marker '$m' of phase $name"; return; fi
		ws[i]=$start we[i]=$end
		printf '  phase %-17s boot %s  %6.2f .. %6.2f s\n' "$name" "$b" "$start" "$end"
	done

	# The draws: a phase and a fraction of it per line, from Python's
	# generator (bash's $RANDOM, drawn twice per cut, skews the phases: one
	# of seven got half its share).
	local -a draw
	mapfile -t draw < <(python3 -c 'import random, sys
r = random.Random(int(sys.argv[1]))
for _ in range(int(sys.argv[3])):
    print(r.randrange(int(sys.argv[2])), "%.4f" % r.random())' "$pc_seed" "$n" $((pc_ncuts * 3)))
	local cut=0 draws=0 incomplete=0 lost=0 boots=0 rolledback=0
	local -A pcut=() pbad=() plost=()
	while [ $cut -lt "$pc_ncuts" ] && [ $draws -lt $((pc_ncuts * 3)) ]; do
		local frac delay kill=()
		read -r i frac <<<"${draw[draws]}"
		draws=$((draws + 1))
		IFS='|' read -r name b m <<<"${pcr_phases[$i]}"
		delay=$(awk -v s="${ws[i]}" -v e="${we[i]}" -v f="$frac" 'BEGIN { printf "%.2f", (e - s) * f }')
		if [ -z "$m" ]; then kill=(--kill-after "$delay"); else kill=(--kill-on "$m" --kill-delay "$delay"); fi
		if [ "$b" = 1 ]; then cp --sparse=always "$bwork/factory.img" "$disk"; else cp --sparse=always "$sdir/trial.img" "$disk"; fi
		local step=update c=c$((cut + 1))
		[ "$b" = 1 ] || step=status
		qboot "$c" "$step" "${fw[@]}" "${kill[@]}"
		if [ "$qrc" != 137 ]; then
			hlog "draw $draws ($name + $delay s): the boot ended by itself (exit $qrc) before the instant; drawing again"
			continue
		fi
		cut=$((cut + 1))
		local reached
		reached=$(pcr_reached "$sdir/$c.log" "$b")
		pcut[$reached]=$((${pcut[$reached]:-0} + 1))
		# Power on again until the update is done, at most 4 boots.
		local k ok=1 done=0 last=''
		for k in 1 2 3 4; do
			boots=$((boots + 1))
			last=$c-$k
			qboot "$last" update "${fw[@]}"
			pcr_boot_ok "$last" || { ok=0; break; }
			[ "$(qline "$last" 'mark-good rc=' | tail -1)" != 4 ] || rolledback=$((rolledback + 1))
			if pcr_done "$last"; then done=1; break; fi
		done
		if [ $ok = 0 ]; then
			incomplete=$((incomplete + 1)) pbad[$reached]=$((${pbad[$reached]:-0} + 1))
			fail "$c: cut in $reached (drawn: $name + $delay s); boot $last did not come up on a complete, verified slot (log $sdir/$last.log)"
		elif [ $done = 0 ]; then
			lost=$((lost + 1)) plost[$reached]=$((${plost[$reached]:-0} + 1))
			fail "$c: cut in $reached (drawn: $name + $delay s); after 4 boots the device is not on r2 committed (last status: $(status_of "$last"))"
		else
			echo "$c: cut in $reached (drawn: $name + $delay s), on r2 committed after $k boot(s)"
		fi
	done
	[ $cut = "$pc_ncuts" ] || fail "only $cut of $pc_ncuts cuts landed in $draws draws"
	echo
	printf '%-17s %5s %11s %5s\n' phase cuts incomplete lost
	for i in "${!pcr_phases[@]}"; do
		IFS='|' read -r name _ _ <<<"${pcr_phases[$i]}"
		printf '%-17s %5s %11s %5s\n' "$name" "${pcut[$name]:-0}" "${pbad[$name]:-0}" "${plost[$name]:-0}"
	done
	echo "power cuts: $cut (seed $pc_seed, try-attempts $pc_tries), boots after them: $boots, rollbacks: $rolledback, on an incomplete slot: $incomplete, updates lost: $lost"
	[ $incomplete = 0 ] && pass "$cut random power cuts: 0 boots on an incomplete or unverified slot" || fail "$incomplete cuts left an incomplete slot"
	[ $lost = 0 ] && pass "$cut random power cuts: 0 updates lost" || fail "$lost updates lost"
}

# ---- 5. a tampered repository ---------------------------------------------------------
scenario_tampered() {
	# A copy of the repository in which every file of one changed package
	# (its object and its deltas) has one byte changed, as a compromised
	# mirror would serve it.
	local t=$sdir/repo victim
	cp -al "$bwork/repo" "$t"
	victim=$(changed_packages "$bwork/pkgs/r1" "$bwork/pkgs/r2" | grep -x 'libssl3' || true)
	[ -n "$victim" ] || victim=$(changed_packages "$bwork/pkgs/r1" "$bwork/pkgs/r2" | head -1)
	python3 - "$t" "$board" "$victim" <<-'EOF'
		import json, os, shutil, sys
		repo, board, name = sys.argv[1:]
		m = json.load(open(f"{repo}/boards/{board}/stable/manifest.json"))
		p = next(p for p in m["packages"] if p["name"] == name)
		for rel in [p["object"]["path"]] + [d["path"] for d in p.get("deltas", [])]:
		    f = os.path.join(repo, rel)
		    data = bytearray(open(f, "rb").read())
		    data[len(data) // 2] ^= 0x01
		    os.unlink(f)  # a hard link to the real repository: replace, don't edit
		    open(f, "wb").write(data)
	EOF
	httpd_start "$t" "$sdir/logs"
	qboot 1-update update
	expect_boot 1-update A
	expect_line 1-update "update rc=1"
	if tr -d '\r' < "$sdir/1-update.log" | grep -a "$victim" | grep -ai "sha-256\|hash" >/dev/null; then
		pass "1-update: the error names the tampered package's hash"
	else
		fail "1-update: no hash error naming '$victim' in $sdir/1-update.log"
	fi
	expect_status 1-update 'j["booted"] == "A" and j["bootloader"]["order"] == ["A"] and j["bootloader"]["trial"] is None' \
		"nothing was handed to the bootloader"
	qboot 2-reboot status
	expect_boot 2-reboot A
	expect_status 2-reboot 'j["slots"]["A"]["release"] == "r1" and j["booted"] == "A"' "the device keeps running release r1"
	httpd_stop
}

# ---- 6. a KVM that QEMU cannot use --------------------------------------------------
# Forces a KVM setting that QEMU refuses on every host (an accelerator
# property that does not exist), the way a host refuses -cpu host: the
# probe must answer no, and a boot forced onto it must run under TCG and
# say so. Then the board's own KVM setting, forced: on a host without a
# usable KVM that boot falls back too, on one with KVM it runs there.
# kvm_verdict PICKED FORCED FELL_BACK WHY ARGS: the accel scenario's boot
# forced onto KVM, judged against what the host claimed before it. PICKED:
# accel_pick's answer (kvm when the probe found KVM usable, or when
# EQ_QEMU_ACCEL=kvm says so); FORCED: 1 when EQ_QEMU_ACCEL chose it;
# FELL_BACK: 1 when the boot failed under KVM and ran again under TCG; WHY:
# QEMU's message; ARGS: the board's KVM arguments. A host claimed to have
# KVM that then fails the board's boot, or a probe that said "no KVM" on a
# host where KVM ran the boot, fails: either way every boot there runs
# under the wrong accelerator. Without KVM the fallback is all there is to
# see, and it is printed.
kvm_verdict() {
	local picked=$1 forced=$2 fell=$3 why=$4 args=$5 by="the KVM probe"
	[ "$forced" = 1 ] && by="EQ_QEMU_ACCEL=$picked"
	if [ "$fell" = 1 ] && [ "$picked" = kvm ]; then
		fail "2-board-kvm: $by claimed KVM usable, but the board's boot failed under it ($why) and ran under TCG"
	elif [ "$fell" = 1 ]; then
		echo "info: 2-board-kvm: no usable KVM here ($why); the boot ran under TCG, as $by said"
	elif [ "$picked" = kvm ]; then
		pass "2-board-kvm: the board's KVM setting ($args) ran the boot, as $by said"
	elif [ "$forced" = 1 ]; then
		echo "info: 2-board-kvm: the board's KVM setting ($args) ran the boot ($by chose TCG for the others)"
	else
		fail "2-board-kvm: the KVM probe said no usable KVM, but the board's KVM setting ($args) ran the boot: the probe is wrong (tests/qemu/lib/harness.sh accel_probe)"
	fi
}

scenario_accel() {
	local broken='-accel kvm,eqota-broken-setting=on' why
	httpd_start "$bwork/repo" "$sdir/logs"
	if EQ_QEMU_KVM_ARGS=$broken accel_probe kvm; then
		fail "the KVM probe accepted '$broken', which QEMU refuses"
	else
		pass "the KVM probe runs the boot's own accelerator arguments and refuses '$broken'"
	fi

	accel=kvm
	EQ_QEMU_KVM_ARGS=$broken qboot 1-broken status
	why=$(kvm_reason "$sdir/1-broken.kvm.log.stderr")
	if [ "$qkvmfalls" = 1 ] && [ "$accel" = tcg ] && echo "$why" | grep -qi kvm; then
		pass "1-broken: QEMU refused KVM ($why); the boot ran again under TCG"
	else
		fail "1-broken: no fallback to TCG (fallbacks $qkvmfalls, accelerator now $accel, QEMU said: $why)"
	fi
	expect_boot 1-broken A
	expect_line 1-broken "mark-good rc=0"

	# What this host claims before the boot: the probe's answer (cached
	# since run.sh asked), or EQ_QEMU_ACCEL.
	local picked fell=0
	picked=$(accel_pick)
	accel=kvm
	qboot 2-board-kvm status
	[ "$qkvmfalls" = 2 ] && fell=1
	kvm_verdict "$picked" "${EQ_QEMU_ACCEL:+1}" "$fell" "$(kvm_reason "$sdir/2-board-kvm.kvm.log.stderr")" "$(accel_args kvm)"
	expect_boot 2-board-kvm A
	expect_line 2-board-kvm "mark-good rc=0"
	httpd_stop
}

# ---- 7. the device as it ships: systemd, the daemon, root-mode trust -------------
# The board's systemd image (lib/sdimage.sh): nothing here calls eqota.
# eqota.service finds r2 at its first poll, installs it into slot B and
# reboots; eqota-confirm.service confirms B at the next boot. The report
# unit prints what systemd and `eqota status --json` say, and the journal
# reaches the console.
scenario_daemon() {
	httpd_start "$sd/repo" "$sdir/logs"
	local predicted got mid1 mid2 diffjson=$sdir/diff.json
	"$gen" diff --repo "$sd/repo" --board "$board" --channel stable --from r1 --to r2 --json >"$diffjson"
	predicted=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"]["download_bytes"])' "$diffjson")
	# The timestamp is refreshed now, as a publisher's cron does (it
	# expires after 24 hours, and a prepared repository may be older):
	# the device must take this version, signed after prepare, not the
	# one publish wrote.
	local tsfile=$sd/repo/boards/$board/stable/timestamp.json tsv0 tsv
	tsv0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$tsfile")
	"$gen" -q timestamp --repo "$sd/repo" --board "$board" --channel stable --trusted-root "$sd/keys/pinned.root.json" \
		--key "$sd/keys/timestamp.key" >"$sdir/timestamp.log" 2>&1 || { cat "$sdir/timestamp.log"; hdie "refreshing the timestamp failed"; }
	tsv=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$tsfile")
	[ "$tsv" -gt "$tsv0" ] || hdie "the refreshed timestamp has version $tsv, publish wrote $tsv0"

	qboot 1-daemon daemon --timeout 900 --isolation-probe
	expect_boot 1-daemon A
	expect_line 1-daemon "forward reached"
	expect_line 1-daemon "host-direct blocked"
	expect_line 1-daemon "confirm active/success exit=0"
	expect_status 1-daemon 'j["booted"] == "A" and j["slots"]["A"]["release"] == "r1"' "the factory image runs r1 in slot A"
	if tr -d '\r' <"$sdir/1-daemon.log" | grep -a 'eqota\[[0-9]*\]: .*telling the bootloader to try it once' >/dev/null; then
		pass "1-daemon: eqota.service installed the release by itself and switched the bootloader (journal)"
	else
		fail "1-daemon: no 'telling the bootloader to try it once' from eqota.service in the journal"
	fi
	if [ "$qrc" = 0 ] && tr -d '\r' <"$sdir/1-daemon.log" | grep -a 'reboot: Restarting system' >/dev/null; then
		pass "1-daemon: the daemon rebooted the device"
	else
		fail "1-daemon: the boot did not end with a reboot (QEMU exit $qrc)"
	fi
	# A running system writes some of its image's files (systemd-update-utmp:
	# /var/log/wtmp). A package or component whose files the device changed
	# cannot be a delta's base or be kept: the device fetches its full
	# object and says so. The bytes must be the plan's with exactly those
	# swapped, and every object or delta sent must be one of the two.
	local falls want
	falls=$(tr -d '\r' <"$sdir/1-daemon.log" |
		sed -n "s/.*eqota\[[0-9]*\]: warning: package '\([^']*\)': .*downloading the full object.*/\1/p" | LC_ALL=C sort -u)
	[ -z "$falls" ] || echo "info: 1-daemon: the device fetched the full objects of: $(echo "$falls" | tr '\n' ' ')"
	want=$(python3 - "$diffjson" "$sd/repo/boards/$board/stable/manifest.json" "$falls" <<-'PY'
		import json, sys
		d = json.load(open(sys.argv[1]))
		m = json.load(open(sys.argv[2]))
		falls = set(sys.argv[3].split())
		size = {p["name"]: p["object"]["size"] for p in m["packages"]}
		total = d["totals"]["download_bytes"]
		for p in d["packages"]:
		    if p["name"] in falls and p["state"] in ("changed", "added"):
		        total -= p["bytes"]
		print(total + sum(size[n] for n in falls if n in size))
	PY
	)
	got=$(fetched_bytes)
	if [ "$got" = "$want" ]; then
		pass "1-daemon: the server sent $got bytes of objects and deltas: the plan's $predicted, with the full objects of what the device changed itself"
	else
		fail "1-daemon: the server sent $got bytes of objects and deltas, expected $want (eqota-gen diff: $predicted; fallbacks: ${falls:-none})"
	fi
	local extra
	extra=$(LC_ALL=C comm -13 <( (python3 -c 'import json,sys; print("\n".join(p["name"] for p in json.load(open(sys.argv[1]))["packages"] if p["state"] in ("changed","added")))' "$diffjson"; echo "$falls") | LC_ALL=C sort -u) \
		<(fetched_packages stable "$sd/repo"))
	if [ -z "$extra" ]; then
		pass "1-daemon: only the changed packages and components were fetched: $(fetched_packages stable "$sd/repo" | tr '\n' ' ')"
	else
		fail "1-daemon: fetched beyond the plan: $(echo "$extra" | tr '\n' ' ')"
	fi

	qboot 2-newslot status
	expect_boot 2-newslot B
	expect_line 2-newslot "confirm active/success exit=0"
	expect_status 2-newslot 'j["booted"] == "B" and j["slots"]["B"]["release"] == "r2" and j["bootloader"]["trial"] is None and j["bootloader"]["order"] == ["B", "A"]' \
		"eqota-confirm.service committed r2 in slot B, A stays the fallback"
	# Trust as shipped: the image pins root 1, whose release key signed r1;
	# r2 is signed by the key root 2 put in its place (prepare_sd).
	expect_status 2-newslot "j['trust']['root_version'] == 2 and j['trust']['timestamp_version'] == $tsv" \
		"the device walked from its pinned root 1 to root 2 (new release key) and took the timestamp refreshed during the run (version $tsv)"
	# r2 added chrony: its account and its enabled service come with the
	# image (image components), and systemd starts it on the first boot.
	expect_line 1-daemon "unit chrony.service inactive"
	expect_line 2-newslot "unit chrony.service active"
	expect_line 2-newslot "unit ssh.service active"
	local keys1 keys2
	keys1=$(qline 1-daemon 'hostkey ' | LC_ALL=C sort)
	keys2=$(qline 2-newslot 'hostkey ' | LC_ALL=C sort)
	if [ "$(echo "$keys1" | grep -c .)" -ge 3 ] && [ "$keys1" = "$keys2" ]; then
		pass "2-newslot: the device kept the ssh host keys it made at its first boot: $(echo "$keys2" | tr '\n' ' ')"
	else
		fail "2-newslot: ssh host keys before the update: '$(echo "$keys1" | tr '\n' ' ')', after: '$(echo "$keys2" | tr '\n' ' ')'"
	fi
	mid1=$(qline 1-daemon 'machine-id ' | tail -1)
	mid2=$(qline 2-newslot 'machine-id ' | tail -1)
	if [ -n "$mid1" ] && [ "$mid1" != uninitialized ] && [ "$mid1" = "$mid2" ]; then
		pass "2-newslot: the device kept its own machine id $mid1"
	else
		fail "2-newslot: machine id '$mid2' after the update, '$mid1' before"
	fi
	# eqota's own view of the device: the id its reports carry, which the
	# staged rollout's bucket hashes too (docs/fleet.md). Computed here
	# from the machine id without eqota's code.
	local rid1 rid2 want
	rid1=$(status_of 1-daemon | python3 -c 'import json,sys; print(json.load(sys.stdin)["device"])' 2>/dev/null)
	rid2=$(status_of 2-newslot | python3 -c 'import json,sys; print(json.load(sys.stdin)["device"])' 2>/dev/null)
	want=$(python3 -c 'import hashlib,sys; print(hashlib.sha256(b"eqota-report-id-1\0" + sys.argv[1].encode()).hexdigest()[:32])' "$mid2")
	if [ "$rid1" = "$want" ] && [ "$rid2" = "$want" ]; then
		pass "2-newslot: the device's report id (and so its rollout bucket) is unchanged: $rid2"
	else
		fail "2-newslot: report id '$rid1' before the update, '$rid2' after, '$want' from the machine id"
	fi
	httpd_stop
}
