# shellcheck shell=bash
# httpd.sh: a real HTTP server for integration tests (STYLE 33).
#
# Source it, then:
#   httpd_start DIR LOGDIR   serve DIR with Debian's lighttpd on 127.0.0.1
#                            at a free port picked now; LOGDIR gets the
#                            config, error.log and access.log. Exports
#                              HTTPD_PORT        the port
#                              HTTPD_PID         lighttpd's PID (ours)
#                              HTTPD_ACCESS_LOG  the access log path
#                              HTTPD_URL         http://127.0.0.1:$HTTPD_PORT
#                            Optional: HTTPD_EXTRA_CONF holds lighttpd lines
#                            to add (e.g. a bandwidth limit), HTTPD_PORT_WANTED
#                            a port to reuse (a restarted server).
#   httpd_stop               stops the server started by httpd_start (by
#                            its PID only) and waits for it to go.
#   httpd_free_port          prints a port that was free a moment ago.
#   httpd_collector_conf URL-PATH FILE CGI
#                            prints the lighttpd lines (for HTTPD_EXTRA_CONF)
#                            that run the report collector CGI (the built
#                            eqota-report.cgi, beside eqota-gen) at
#                            URL-PATH, appending to FILE.
#   httpd_log_flush          makes lighttpd write out its access log now
#                            (it buffers lines for up to 4 s): SIGHUP to
#                            HTTPD_PID, then a short wait. Programs that
#                            read the log can do the same.
#
# One access-log line per request, fields separated by one space:
#   METHOD URL-PATH STATUS BODY-BYTES-SENT RANGE-HEADER BYTES-IN BYTES-OUT
# e.g. "GET /objects/ab12... 206 4096 bytes=1000- 151 4339" and "-" for no
# Range. BYTES-IN and BYTES-OUT count the request and the answer with their
# headers: what the exchange cost on the wire above TCP.
# Tests measure the bytes a device fetched from this log, so keep the
# format and the function names stable.
#
# ETag and Last-Modified are on (lighttpd's defaults), so are keep-alive
# and Range. The caller should `trap httpd_stop EXIT`. Only 127.0.0.1 is
# bound. lighttpd is installed with apt-get when missing and we are root
# (scripts/setup.sh lists it).

httpd_collector_conf() {
	cat <<CONF
server.modules += ( "mod_alias", "mod_cgi", "mod_setenv" )
alias.url = ( "$1" => "$3" )
\$HTTP["url"] == "$1" {
  cgi.assign = ( "" => "" )
  setenv.add-environment = ( "EQOTA_REPORTS" => "$2" )
}
CONF
}

httpd_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Waits until 127.0.0.1:$1 accepts a connection or pid $2 is gone.
httpd_wait_port_() {
	local port=$1 pid=$2
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || return 1
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	return 1
}

httpd_start() {
	local dir=$1 logdir=$2 try port
	if [ -z "$dir" ] || [ -z "$logdir" ]; then
		echo "httpd_start: usage: httpd_start DIR LOGDIR" >&2
		return 2
	fi
	if ! command -v lighttpd >/dev/null 2>&1 && [ -x /usr/sbin/lighttpd ]; then
		PATH=$PATH:/usr/sbin
	fi
	if ! command -v lighttpd >/dev/null 2>&1; then
		if [ "$(id -u)" -ne 0 ]; then
			echo "httpd_start: lighttpd missing: apt-get install lighttpd" >&2
			return 1
		fi
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends lighttpd >&2 || return 1
	fi
	dir=$(cd "$dir" && pwd) || return 1
	mkdir -p "$logdir" && logdir=$(cd "$logdir" && pwd) || return 1
	for try in 1 2 3 4 5 6 7 8 9 10; do
		if [ -n "${HTTPD_PORT_WANTED:-}" ] && [ "$try" -le 5 ]; then
			port=$HTTPD_PORT_WANTED
		else
			port=$(httpd_free_port) || return 1
		fi
		cat >"$logdir/lighttpd.conf" <<CONF
server.document-root = "$dir"
server.bind = "127.0.0.1"
server.port = $port
server.use-ipv6 = "disable"
server.modules = ( "mod_accesslog" )
server.errorlog = "$logdir/error.log"
accesslog.filename = "$logdir/access.log"
accesslog.format = "%m %U %>s %b %{Range}i %I %O"
mimetype.assign = ( "" => "application/octet-stream" )
index-file.names = ( )
dir-listing.activate = "disable"
# A file replaced within the same second (a republish, a new timestamp)
# must be served with its new content: lighttpd's stat cache would serve the
# old length and bytes.
server.stat-cache-engine = "disable"
${HTTPD_EXTRA_CONF:-}
CONF
		lighttpd -D -f "$logdir/lighttpd.conf" >>"$logdir/lighttpd.out" 2>&1 &
		HTTPD_PID=$!
		if httpd_wait_port_ "$port" "$HTTPD_PID"; then
			export HTTPD_PORT=$port HTTPD_PID HTTPD_ACCESS_LOG="$logdir/access.log"
			export HTTPD_URL="http://127.0.0.1:$port"
			return 0
		fi
		# most likely someone took the port between the pick and the bind
		# (or the old server's socket is still closing)
		sleep 0.2
		kill "$HTTPD_PID" 2>/dev/null || true
		wait "$HTTPD_PID" 2>/dev/null || true
		HTTPD_PID=
	done
	echo "httpd_start: lighttpd did not start; see $logdir/error.log $logdir/lighttpd.out" >&2
	return 1
}

httpd_log_flush() {
	# lighttpd buffers access-log lines for up to 4 s; SIGHUP (reopen the
	# logs) writes them out at once
	if [ -n "${HTTPD_PID:-}" ]; then
		kill -HUP "$HTTPD_PID" 2>/dev/null || return 1
		# then until the log stops growing (at most 2 s): the lines of a
		# burst may come out in more than one write
		local prev=-1 cur
		for _ in $(seq 20); do
			sleep 0.1
			cur=$(stat -c %s "$HTTPD_ACCESS_LOG" 2>/dev/null || echo 0)
			[ "$cur" = "$prev" ] && break
			prev=$cur
		done
	fi
}

httpd_stop() {
	# lighttpd exits 143 on SIGTERM; callers may run under set -e
	if [ -n "${HTTPD_PID:-}" ]; then
		kill "$HTTPD_PID" 2>/dev/null || true
		wait "$HTTPD_PID" 2>/dev/null || true
		HTTPD_PID=
	fi
	return 0
}
