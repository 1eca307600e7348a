# shellcheck shell=bash
# archive.sh: for tests that download Debian packages from the package
# archive when their cache lacks them. Without the network such a test
# cannot run, which is a skip; with it, a download that fails is a failure.
#   archive_need PKG   returns when the archive apt would fetch PKG from
#                      answers; otherwise exits 77 (a CTest skip) saying why
# The probe goes through curl, which honours http_proxy like apt does
# (http_proxy=http://127.0.0.1:9 simulates an offline machine).
archive_need() {
	local url
	url=$(apt-get download --print-uris "$1" 2>/dev/null | sed -n "1s/^'\([^']*\)'.*/\1/p")
	if [ -z "$url" ]; then
		echo "SKIP: apt knows no package $1 to download (no package lists: run apt-get update)"
		exit 77
	fi
	if ! curl -sS -o /dev/null --head --max-time 20 "$url" 2>/dev/null; then
		echo "SKIP: the package archive is unreachable (${url%%/pool/*}): the packages this test needs are not in its cache"
		exit 77
	fi
}
