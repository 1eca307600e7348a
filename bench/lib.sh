# shellcheck shell=bash
# Shared by the benches: peak memory of a command.

# _anon_peak PID CHILD: the highest RssAnon (KiB) seen while PID runs, of PID
# itself (CHILD=0) or of its first child (CHILD=1, PID being /usr/bin/time).
# Sampled with shell builtins, so a peak shorter than a sample is missed;
# anonymous memory only, not the page cache of mapped files.
_anon_peak() {
	local pid=$1 child=$2 max=0 a k v c
	while kill -0 "$pid" 2>/dev/null; do
		c=$pid
		if [ "$child" = 1 ]; then
			c=
			read -r c _ 2>/dev/null <"/proc/$pid/task/$pid/children" || true
			[ -n "$c" ] || continue
		fi
		a=0
		while read -r k v _; do [ "$k" = RssAnon: ] && a=$v; done 2>/dev/null <"/proc/$c/status" || true
		[ "${a:-0}" -gt "$max" ] && max=$a
	done
	echo "$max"
}

# peak_anon CMD...: runs CMD (output discarded), prints its peak anonymous
# memory in bytes.
peak_anon() {
	"$@" >/dev/null &
	local pid=$! kib
	kib=$(_anon_peak "$pid" 0)
	wait "$pid"
	echo $((kib * 1024))
}

# measure CMD...: runs CMD (output discarded, exit status ignored), prints
# "seconds peak_rss_kib peak_anon_kib".
measure() {
	local t
	t=$(mktemp)
	/usr/bin/time -f '%e %M' -o "$t" "$@" >/dev/null 2>&1 &
	local tp=$! kib
	kib=$(_anon_peak "$tp" 1)
	wait "$tp" || true
	echo "$(tail -n 1 "$t") $kib"
	rm -f "$t"
}
