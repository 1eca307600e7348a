# shellcheck shell=bash
# simdevice.sh: a simulated device for tests, the demo and benchmarks: two
# directory slots, a file-backed bootloader environment and a kernel command
# line in a file (what eq-simboot writes), all under one folder.
#
# Source it, then:
#   simdevice_make DIR URL BOARD KEY [SECTION.KEY=VALUE ...]
#       creates DIR/A, DIR/B and DIR/data and writes DIR/eqota.conf for a
#       device of BOARD on channel stable that trusts KEY (a .pub file, or
#       an installed root document when it ends in .root.json: root mode)
#       and polls URL. Each SECTION.KEY=VALUE adds a line to that section
#       ("repository.retries=1", "health.check=/bin/true"); the sections
#       are written once each, so the strict INI parser sees no repeats.
#       An empty VALUE leaves the line out (callers pass optional ones).
#   simdevice_eq DIR EQOTA ARGS...
#       runs EQOTA with DIR's config and DIR/boot_id as the kernel's boot id
#       (the EQ_TEST_BOOT_ID_FILE hook)
#   simdevice_boot DIR SIMBOOT
#       a simulated reboot: a new boot id, then the bootloader's choice
#       (SIMBOOT, eq-simboot) written to DIR/cmdline
#   simdevice_running DIR EQOTA
#       prints the release number the booted slot holds

simdevice_make() {
	local dir=$1 url=$2 board=$3 key=$4
	shift 4
	mkdir -p "$dir/A" "$dir/B" "$dir/data"
	local -A extra=()
	local kv sec order=(repository slots bootloader paths health daemon update report persist)
	for kv in "$@"; do
		sec=${kv%%.*}
		case " ${order[*]} " in *" $sec "*) ;; *)
			echo "simdevice_make: unknown section in '$kv'" >&2; return 2 ;;
		esac
		kv=${kv#*.}
		[ -n "${kv#*=}" ] || continue
		extra[$sec]+="${kv%%=*} = ${kv#*=}"$'\n'
	done
	{
		local trust=key
		case "$key" in *.root.json) trust=root ;; esac
		printf '[repository]\nurl = %s\nboard = %s\nchannel = stable\n%s = %s\n%s' \
			"$url" "$board" "$trust" "$key" "${extra[repository]:-}"
		printf '[slots]\ntype = dir\nA = %s/A\nB = %s/B\n%s' "$dir" "$dir" "${extra[slots]:-}"
		printf '[bootloader]\nbackend = file\npath = %s/bootenv\ncmdline = %s/cmdline\n%s' \
			"$dir" "$dir" "${extra[bootloader]:-}"
		printf '[paths]\ndata = %s/data\n%s' "$dir" "${extra[paths]:-}"
		for sec in health daemon update report persist; do
			[ -z "${extra[$sec]:-}" ] || printf '[%s]\n%s' "$sec" "${extra[$sec]}"
		done
	} > "$dir/eqota.conf"
}

simdevice_eq() {
	local dir=$1 eqota=$2
	shift 2
	EQ_TEST_BOOT_ID_FILE=$dir/boot_id "$eqota" --config "$dir/eqota.conf" "$@"
}

simdevice_boot() {
	cat /proc/sys/kernel/random/uuid >"$1/boot_id"
	"$2" --env "$1/bootenv" --cmdline "$1/cmdline" >/dev/null
}

simdevice_running() {
	simdevice_eq "$1" "$2" status --json |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["slots"][d["booted"]]["number"])'
}

# simdevice_notify_listen SOCKET LOG: a stand-in for systemd's NOTIFY_SOCKET
# in the background: each datagram the daemon sends becomes one line of LOG,
# "MONOTONIC-SECONDS FIELDS" (newlines as " | "). Sets SIMDEVICE_NOTIFY_PID;
# returns 1 when the socket does not appear within 10 s.
simdevice_notify_listen() {
	python3 - "$1" "$2" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        m = s.recv(4096).decode(errors="replace")
        log.write("%.3f %s\n" % (time.monotonic(), m.replace("\n", " | ")))
PY
	# shellcheck disable=SC2034 # read by the scripts that source this file
	SIMDEVICE_NOTIFY_PID=$!
	local i
	for ((i = 0; i < 100; i++)); do [ -S "$1" ] && return 0; sleep 0.1; done
	return 1
}
