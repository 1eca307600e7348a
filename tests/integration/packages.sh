#!/usr/bin/env bash
# The Debian packages CPack makes (cmake/EqInstall.cmake, docs/packaging.md),
# from the release build of integration.release_build:
#   - eqota and eqota-gen exist, for this architecture and the build's
#     version, and hold every file a device or a build host needs;
#   - Depends names the package of every library in each program's NEEDED
#     (as dpkg-shlibdeps maps them), plus libcurl4 and e2fsprogs for eqota;
#   - the maintainer scripts are valid sh; the units pass systemd-analyze
#     verify; the manual pages are compressed as policy asks;
#   - as root on a system without eqota installed: dpkg -i installs both,
#     the installed programs run, the units are enabled, and dpkg --purge
#     removes everything again. Elsewhere that part is skipped (exit 77).
# Usage: packages.sh SOURCE_DIR RELEASE_BUILD_DIR
set -Eeuo pipefail
src=$1 b=$2
trap 'echo "packages.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
. "$src/tests/integration/lib/check.sh"
w=$(mktemp -d /tmp/eq-packages.XXXXXX)
installed=""
cleanup() {
  # Only what this script installed, and only if it is still there.
  for p in $installed; do dpkg-query -W "$p" >/dev/null 2>&1 && dpkg --purge "$p" >/dev/null 2>&1 || true; done
  rm -rf "$w"
}
trap cleanup EXIT

arch=$(dpkg --print-architecture)
version=$(sed -n 's/^EQ_VERSION_STRING:STRING=//p' "$b/CMakeCache.txt")
[ -n "$version" ] || { fail "no EQ_VERSION_STRING in $b/CMakeCache.txt"; exit 1; }
deb_agent=$b/packages/eqota_${version}_$arch.deb
deb_gen=$b/packages/eqota-gen_${version}_$arch.deb
for d in "$deb_agent" "$deb_gen"; do
  [ -f "$d" ] || { fail "cpack made no $d (it made: $(ls "$b/packages"))"; exit 1; }
done

# ---- control fields and contents
field() { dpkg-deb -f "$1" "$2"; }
for d in "$deb_agent" "$deb_gen"; do
  n=$(basename "$d")
  [ "$(field "$d" Version)" = "$version" ] && [ "$(field "$d" Architecture)" = "$arch" ] &&
    pass "$n: version $version, architecture $arch" || fail "$n: $(dpkg-deb -f "$d" Version Architecture)"
done
contents() { dpkg-deb -c "$1" | awk '{ print $6 }' | sed 's|^\./|/|'; }
want_agent=(/usr/bin/eqota /lib/systemd/system/eqota.service /lib/systemd/system/eqota-confirm.service
  /usr/share/man/man8/eqota.8.gz /usr/share/man/man5/eqota.conf.5.gz /usr/share/doc/eqota/copyright
  /usr/share/doc/eqota/examples/eqota.conf /usr/share/doc/eqota/agent.md /usr/share/doc/eqota/systemd.md
  /usr/share/doc/eqota/configuration.md /usr/share/bash-completion/completions/eqota
  /usr/share/doc/eqota/json-output.md /usr/share/doc/eqota/schemas/eqota-status-1.schema.json
  /usr/share/doc/eqota/schemas/eqota-check-1.schema.json /usr/share/doc/eqota/schemas/eqota-verify-1.schema.json)
want_gen=(/usr/bin/eqota-gen /usr/share/man/man1/eqota-gen.1.gz /usr/share/doc/eqota-gen/copyright
  /usr/share/doc/eqota-gen/eqota-gen.md /usr/share/bash-completion/completions/eqota-gen
  /usr/share/doc/eqota-gen/schemas/eqota-gen-diff-1.schema.json /usr/share/doc/eqota-gen/schemas/eqota-gen-manifest-1.schema.json
  /usr/share/doc/eqota-gen/fleet.md /usr/libexec/eqota-gen/eqota-report.cgi
  /usr/share/doc/eqota-gen/schemas/eqota-gen-fleet-1.schema.json)
check_files() { # DEB FILE...
  local d=$1 missing="" f list; shift
  list=$(contents "$d")
  for f in "$@"; do grep -qxF "$f" <<<"$list" || missing="$missing $f"; done
  [ -z "$missing" ] && pass "$(basename "$d"): holds all $# files a system needs" ||
    fail "$(basename "$d") lacks:$missing"
}
check_files "$deb_agent" "${want_agent[@]}"
check_files "$deb_gen" "${want_gen[@]}"
contents "$deb_agent" | grep -q eqota-gen && fail "eqota holds files of eqota-gen: $(contents "$deb_agent" | grep eqota-gen)"
contents "$deb_gen" | grep -qE '/eqota$|systemd' && fail "eqota-gen holds device files"

# ---- Depends: the package of every NEEDED library, and the dlopen'ed ones
x=$w/x
mkdir -p "$x/agent" "$x/gen"
dpkg-deb -x "$deb_agent" "$x/agent"
dpkg-deb -x "$deb_gen" "$x/gen"
check_depends() { # DEB PROGRAM EXTRA-PACKAGE...
  local d=$1 prog=$2 deps so lib pkg missing=""; shift 2
  deps=$(field "$d" Depends)
  for so in $(readelf -d "$prog" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
    # awk reads to the end: an early exit would kill ldconfig with SIGPIPE,
    # which pipefail turns into a failure.
    lib=$(ldconfig -p | awk -v so="$so" '$1 == so && !n++ { print $NF }')
    [ -n "$lib" ] || { missing="$missing $so(not on this system)"; continue; }
    pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | sed -n 1p | cut -d: -f1) ||
      pkg=$(dpkg -S "$lib" 2>/dev/null | sed -n 1p | cut -d: -f1) || true
    [ -n "$pkg" ] || { missing="$missing $so(no package)"; continue; }
    grep -qE "(^|, )$pkg( |,|$)" <<<"$deps" || missing="$missing $pkg($so)"
  done
  for pkg in "$@"; do grep -qE "(^|, )$pkg( |,|$)" <<<"$deps" || missing="$missing $pkg"; done
  [ -z "$missing" ] && pass "$(basename "$d"): Depends covers every NEEDED library: $deps" ||
    fail "$(basename "$d"): Depends '$deps' lacks:$missing"
}
check_depends "$deb_agent" "$x/agent/usr/bin/eqota" libcurl4 e2fsprogs
check_depends "$deb_gen" "$x/gen/usr/bin/eqota-gen"
for p in "$x/agent/usr/bin/eqota" "$x/gen/usr/bin/eqota-gen"; do
  file "$p" | grep -q ', stripped' && pass "$(basename "$p") is stripped" || fail "$(basename "$p") is not stripped: $(file "$p")"
  v=$("$p" --version)
  [ "$v" = "$(basename "$p") $version" ] && pass "$(basename "$p") --version: $v" || fail "$(basename "$p") --version: '$v'"
done

# ---- maintainer scripts, manual pages, units
dpkg-deb -e "$deb_agent" "$w/ctl"
for s in postinst prerm postrm; do
  [ -x "$w/ctl/$s" ] && sh -n "$w/ctl/$s" && pass "eqota $s: executable, valid sh" || fail "eqota $s"
done
for m in "$x"/agent/usr/share/man/*/*.gz "$x"/gen/usr/share/man/*/*.gz; do
  gzip -t "$m" && zcat "$m" | head -5 | grep -q '^\.TH' && pass "$(basename "$m"): gzip'ed roff" || fail "$(basename "$m")"
done
if command -v systemd-analyze >/dev/null; then
  # The units as installed, with ExecStart pointing at the extracted
  # program: verify checks that it exists and is executable.
  mkdir -p "$w/units"
  for u in eqota.service eqota-confirm.service; do
    sed "s|/usr/bin/eqota|$x/agent/usr/bin/eqota|" "$x/agent/lib/systemd/system/$u" > "$w/units/$u"
  done
  out=$(systemd-analyze verify --man=no "$w/units/eqota.service" "$w/units/eqota-confirm.service" 2>&1) &&
    pass "systemd-analyze verify: both units are clean" || fail "systemd-analyze verify: $out"
  score=$(systemd-analyze security --offline=true "$w/units/eqota.service" 2>&1 | sed -n 's/.*exposure level for eqota.service: \([0-9.]*\).*/\1/p')
  # 10 is a service with no sandboxing at all; eqota's stays below 6.
  awk -v s="$score" 'BEGIN { exit !(s != "" && s < 6.0) }' &&
    pass "systemd-analyze security: eqota.service exposure $score (below 6)" || fail "eqota.service exposure '$score'"
else
  echo "SKIP: systemd-analyze not installed: the units are not verified"
fi

# ---- install, run and purge on this system
skip=""
[ "$(id -u)" -eq 0 ] || skip="not root: dpkg -i of the packages is not tried"
for p in eqota eqota-gen; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q installed; then
    skip="package $p is already installed on this system: left alone, the install is not tried"
  fi
done
if [ -z "$skip" ]; then
  installed="eqota eqota-gen"
  out=$(dpkg -i "$deb_agent" "$deb_gen" 2>&1) && pass "dpkg -i eqota eqota-gen" || fail "dpkg -i: $out"
  dpkg -L eqota > "$w/dpkg-L"
  for f in "${want_agent[@]}"; do grep -qxF "$f" "$w/dpkg-L" || fail "dpkg -L eqota lacks $f"; done
  [ "$(/usr/bin/eqota --version)" = "eqota $version" ] && [ "$(/usr/bin/eqota-gen --version)" = "eqota-gen $version" ] &&
    pass "the installed programs run" || fail "installed programs: $(/usr/bin/eqota --version 2>&1)"
  [ -d /var/lib/eqota ] && pass "postinst made /var/lib/eqota" || fail "no /var/lib/eqota after install"
  en=$(find /etc/systemd/system -name 'eqota*.service' -type l | sort | tr '\n' ' ')
  grep -q 'multi-user.target.wants/eqota.service' <<<"$en" && grep -q 'eqota-confirm.service' <<<"$en" &&
    pass "postinst enabled both units: $en" || fail "units not enabled: '$en'"
  if command -v systemd-analyze >/dev/null; then
    out=$(systemd-analyze verify --man=no /lib/systemd/system/eqota.service /lib/systemd/system/eqota-confirm.service 2>&1) &&
      pass "systemd-analyze verify of the installed units" || fail "verify installed units: $out"
  fi
  out=$(dpkg --purge eqota eqota-gen 2>&1) && pass "dpkg --purge eqota eqota-gen" || fail "dpkg --purge: $out"
  left=""
  for f in /usr/bin/eqota /usr/bin/eqota-gen /lib/systemd/system/eqota.service /var/lib/eqota; do
    [ -e "$f" ] && left="$left $f"
  done
  left="$left$(find /etc/systemd/system -name 'eqota*' 2>/dev/null | tr '\n' ' ')"
  [ -z "${left// /}" ] && pass "purge left nothing behind" || fail "purge left:$left"
  installed=""
fi

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
if [ -n "$skip" ]; then echo "SKIP: $skip (every other check passed)"; exit 77; fi
echo "all package checks passed"
