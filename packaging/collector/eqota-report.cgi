#!/bin/sh
# eqota-report.cgi: receives the reports eqota devices POST ([report] url,
# docs/fleet.md "Reports") and appends each as one line to a JSON-lines
# file for `eqota-gen fleet --reports FILE`. A CGI program for lighttpd
# (mod_cgi), Apache or any server that runs CGI; needs only /bin/sh,
# coreutils and flock (util-linux).
#
#   EQOTA_REPORTS   the file to append to (default
#                   /var/lib/eqota-reports/reports.jsonl); the server's
#                   user must be able to write it and its folder
#
# It takes a POST of 2..4096 bytes on one line that starts like a report
# and answers 204; anything else gets a 4xx and is not stored. It does not
# check more than that: `eqota-gen fleet` checks every line it reads and
# counts what is not a report, so a device or anyone else who can reach
# this URL cannot make the summary lie about other devices' lines.
set -u
out=${EQOTA_REPORTS:-/var/lib/eqota-reports/reports.jsonl}
reply() {
	printf 'Status: %s\r\nContent-Type: text/plain\r\n\r\n%s\n' "$1" "$2"
	exit 0
}
[ "${REQUEST_METHOD:-}" = POST ] || reply "405 Method Not Allowed" "POST one eqota report"
len=${CONTENT_LENGTH:-}
case $len in '' | *[!0-9]*) reply "411 Length Required" "a Content-Length is needed" ;; esac
[ "$len" -ge 2 ] && [ "$len" -le 4096 ] || reply "413 Payload Too Large" "a report is 2 to 4096 bytes"
tmp=$(mktemp) || reply "500 Internal Server Error" "no temporary file"
trap 'rm -f "$tmp"' EXIT
head -c "$len" >"$tmp"
[ "$(wc -c <"$tmp")" -eq "$len" ] || reply "400 Bad Request" "the body is shorter than its Content-Length"
# One line, and the start of a report: a stored line must never split in two.
[ "$(tr -cd '\n\r\000' <"$tmp" | wc -c)" -eq 0 ] || reply "400 Bad Request" "a report is one line"
[ "$(head -c 26 "$tmp")" = '{"schema":"eqota-report/1"' ] || reply "400 Bad Request" "not an eqota report"
# Appends are whole lines: one writer at a time.
if ! flock "$out.lock" sh -c 'cat "$1" >>"$2" && echo >>"$2"' sh "$tmp" "$out"; then
	reply "500 Internal Server Error" "cannot append to the report file"
fi
printf 'Status: 204 No Content\r\n\r\n'
