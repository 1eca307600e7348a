# shellcheck shell=bash
# The end-to-end scenarios, one function each, sourced by tests/qemu/run.sh
# (which provides qboot, qline, pass, fail, $bwork, $sdir, $disk).

# json_get JSON PYTHON-EXPR: evaluates EXPR with the parsed JSON as j.
json_get() { python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null || true; }

# status_of BOOT: the last `eqota status --json` line the guest printed.
status_of() { qline "$1" 'status ' | tail -1; }

# expect_boot BOOT SLOT: the guest came up on SLOT and eqota confirmed it.
expect_boot() {
	local got
	got=$(qline "$1" 'booted slot=' | sed 's/ .*//' | tail -1)
	if [ "$got" = "$2" ]; then pass "$1: booted slot $2"; else fail "$1: booted slot '${got:-none}', expected $2 (log $sdir/$1.log)"; fi
}
expect_line() { # expect_line BOOT TEXT: the guest printed "EQTEST TEXT"
	if qline "$1" '' | grep -qxF "$2"; then pass "$1: $2"; else fail "$1: no 'EQTEST $2' in $sdir/$1.log"; fi
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
# the channel's current manifest.
fetched_packages() {
	httpd_log_flush
	python3 - "$bwork/repo/boards/$board/$1/manifest.json" "$HTTPD_ACCESS_LOG" <<-'EOF'
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

	qboot 1-update update
	expect_boot 1-update A
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
