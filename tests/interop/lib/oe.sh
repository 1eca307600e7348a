# shellcheck shell=bash
# oe.sh: the setup the OpenEmbedded-Core interop tests share
# (meta_eqota_oecore.sh parses, meta_eqota_build.sh builds).
#
# Source it, then:
#   skip REASON...           prints "SKIP: REASON" and exits 77 (CTest's skip)
#   oe_need_trees            skips unless EQ_BITBAKE_DIR holds an
#                            openembedded/bitbake tree and EQ_OECORE_DIR an
#                            openembedded-core tree
#   oe_need_tools WHAT HINT TOOL...
#                            skips naming the TOOLs the host lacks ("WHAT
#                            needs these host tools: ... (Debian: apt-get
#                            install HINT)")
#   oe_need_locale           skips without the en_US.UTF-8 locale OE-Core needs
#   oe_setup NAME TREE...    BitBake refuses to run as root: sets $user (as
#                            root eqota-bb, created if missing) and as_user
#                            CMD...; makes the work folder $w
#                            (/tmp/NAME.XXXXXX), removed at exit after the
#                            BitBake server started there is stopped (the
#                            script defines bb CMD, which runs CMD in
#                            $w/build as $user); skips unless $user can read
#                            every TREE
# The PASS/FAIL lines come from tests/integration/lib/check.sh, sourced first.

skip() {
  echo "SKIP: $*"
  exit 77
}

oe_need_trees() {
  [ -n "${EQ_BITBAKE_DIR:-}" ] && [ -x "$EQ_BITBAKE_DIR/bin/bitbake" ] ||
    skip "set EQ_BITBAKE_DIR to an openembedded/bitbake tree (see docs/yocto.md)"
  [ -n "${EQ_OECORE_DIR:-}" ] && [ -f "$EQ_OECORE_DIR/meta/conf/layer.conf" ] ||
    skip "set EQ_OECORE_DIR to an openembedded/openembedded-core tree (see docs/yocto.md)"
}

oe_need_tools() {
  local what=$1 hint=$2 missing='' t
  shift 2
  for t in "$@"; do
    command -v "$t" >/dev/null || missing="$missing $t"
  done
  [ -z "$missing" ] || skip "$what needs these host tools:$missing (Debian: apt-get install $hint)"
}

oe_need_locale() {
  locale -a 2>/dev/null | grep -qi '^en_US.utf-\?8$' || skip "OE-Core needs the en_US.UTF-8 locale (Debian: locales, locale-gen)"
}

as_user() { if [ "$(id -u)" = 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi; }

oe_cleanup() {
  # The BitBake server this test started, and nothing else.
  [ -f "$w/build/bitbake.lock" ] && bb "bitbake --kill-server" >/dev/null 2>&1 || true
  rm -rf "$w"
}

oe_setup() {
  local name=$1 t
  shift
  user=$(id -un)
  if [ "$(id -u)" = 0 ]; then
    user=eqota-bb
    id "$user" >/dev/null 2>&1 || useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$user"
  fi
  w=$(mktemp -d "/tmp/$name.XXXXXX")
  chmod 755 "$w"
  trap oe_cleanup EXIT
  for t in "$@"; do
    as_user test -r "$t" || skip "$user cannot read $t"
  done
}
