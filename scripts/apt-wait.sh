# shellcheck shell=bash
# Sourced by the scripts that install or fetch Debian packages.
# eq_apt_get ARGS...: apt-get (through $sudo when set) that waits, up to ten
# minutes, while another apt-get or dpkg holds apt's locks: on a fresh
# machine apt's daily timer may run, and two QEMU boards prepare at once.
# dpkg's frontend lock is waited for by apt itself (DPkg::Lock::Timeout);
# the package lists' lock is not, so that case is retried here.
eq_apt_get() {
	local i rc log
	log=$(mktemp)
	for i in $(seq 120); do
		rc=0
		DEBIAN_FRONTEND=noninteractive ${sudo:-} apt-get -o DPkg::Lock::Timeout=600 "$@" 2>"$log" || rc=$?
		if [ "$rc" -ne 0 ] && grep -q 'Could not get lock\|Unable to lock' "$log"; then
			[ "$i" -eq 1 ] && echo "apt-get: waiting for another apt-get or dpkg to finish" >&2
			sleep 5
			continue
		fi
		break
	done
	grep -v '^W: Download is performed unsandboxed' "$log" >&2 || true
	rm -f "$log"
	return "$rc"
}
