#!/usr/bin/env bash
# Power cuts at random instants of every phase (issue 17): a simulated
# device (dir slots, the file bootloader, eq-simboot as the boot script)
# goes from release 1 to release 2, and eqota is SIGKILLed at an instant
# drawn from one of the phases of the whole cycle:
#   download   `update` from a cold download cache over a throttled link
#              (the other phases use a fast one)
#   install    `update` with every object already downloaded
#   switch     `update`, after its "telling the bootloader" line: the
#              bootloader write and the state file after it
#   health     the first boot's `mark-good`, anywhere (mostly the check)
#   commit     `mark-good`, after the health check ended: the commit
#   rollback   `mark-good` on a failing health check, after the check
#              ended: the rollback's two bootloader writes and the state
# After each kill the device is powered on again: half the time eqota is
# first restarted in the same boot (a daemon restart: `mark-good`, then
# `update`), then it reboots (eq-simboot), runs `mark-good` and `update`,
# until it runs release 2 committed (a rollback kill: first back on
# release 1 with release 2 recorded as failed, then `update --retry` with a
# passing check). After every kill and every boot: each slot in the boot
# order is a complete release (its files equal a reference copy), the
# booted slot is complete and `eqota verify` passes, and the update is
# finished within a bounded number of boots (not lost).
# Environment: EQ_KILL_COUNT (60), EQ_KILL_SEED (random; printed, to replay
# a run), EQ_CACHE_DIR (Debian packages from scripts/fetch-debs.sh; without
# them generated tar packages of similar sizes).
# Usage: agent_killpoints.sh EQOTA EQOTA_GEN EQ_SIMBOOT SOURCE_DIR
set -Eeuo pipefail
. "$4/tests/integration/lib/agent-test.sh" agent_killpoints "$@"
kills=${EQ_KILL_COUNT:-60}
seed=${EQ_KILL_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "agent_killpoints: EQ_KILL_SEED=$seed EQ_KILL_COUNT=$kills (set both to replay the draws)"
cache=${EQ_CACHE_DIR:-$src/.cache}/debs
t_start=$(date +%s)

# The helper: one Python process (a co-process: Python starts slowly on a
# busy machine) that takes a request per line, its words separated by
# \x1f, and answers with one line.
cat >"$w/kp.py" <<'PY'
import hashlib, json, os, random, signal, stat, subprocess, sys, threading, time

def kill(log, marker, delay, *cmd):
    """Runs cmd, its stderr to log; SIGKILLs it delay s after its start (no
    marker) or after a stderr line holding marker. Answers OUTCOME T_MARK
    T_END: OUTCOME "killed", or "exit:RC" when it ended before the instant."""
    delay = float(delay)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen, mark = threading.Event(), [None]
    def reader():
        with open(log, "wb") as f:
            for line in p.stderr:
                f.write(line)
                f.flush()
                if marker and mark[0] is None and marker.encode() in line:
                    mark[0] = time.monotonic() - t0
                    seen.set()
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    start = 0.0
    if marker:
        while not seen.wait(0.002):
            if p.poll() is not None:
                t.join(2)  # the lines it wrote before it ended
                break
        start = mark[0] if mark[0] is not None else 0.0
    outcome = None
    try:
        p.wait(timeout=max(0.0, t0 + start + delay - time.monotonic()))
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGKILL)
        outcome = "killed"
    rc = p.wait()
    t_end = time.monotonic() - t0
    if outcome is None:
        t.join(2)
    if outcome is None or rc != -signal.SIGKILL:
        outcome = "exit:%d" % rc
    return "%s %s %.6f" % (outcome, "-" if mark[0] is None else "%.6f" % mark[0], t_end)

HASHES = {}

def treesum(root):
    """A digest of a slot: every path with type, mode, owner, size, content
    hash, link target and device number, eqota's records included (a slot
    is complete with them). File hashes are kept by inode, size and mtime:
    the snapshots are restored as hard links, and eqota never writes a
    slot's file in place (it empties the target first)."""
    if not os.path.isdir(root):
        return "none"
    h = hashlib.sha256()
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            p = os.path.join(d, name)
            st = os.lstat(p)
            line = [os.path.relpath(p, root), oct(st.st_mode), str(st.st_uid), str(st.st_gid)]
            if stat.S_ISREG(st.st_mode):
                key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
                if key not in HASHES:
                    with open(p, "rb") as f:
                        HASHES[key] = hashlib.sha256(f.read()).hexdigest()
                line += [str(st.st_size), HASHES[key]]
            elif stat.S_ISLNK(st.st_mode):
                line.append(os.readlink(p))
            elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                line.append(str(st.st_rdev))
            h.update(("\0".join(line) + "\n").encode("utf-8", "surrogateescape"))
    return h.hexdigest()

REFS = {}

def ref(name, root):
    REFS[name] = treesum(root)
    return REFS[name]

def release(dev, slot):
    """The reference release slot holds, or "incomplete"."""
    got = treesum(os.path.join(dev, slot))
    return next((k for k, v in REFS.items() if v == got), "incomplete")

def order(dev):
    """Every slot the boot order names must hold a complete release."""
    env = {}
    try:
        with open(os.path.join(dev, "bootenv")) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                env[k] = v
    except FileNotFoundError:
        return "no bootloader environment"
    bad = [s for s in env.get("BOOT_ORDER", "").split() if release(dev, s) == "incomplete"]
    if not bad:
        return "ok"
    return "slot %s in the boot order holds no complete release (%s)" % (
        " ".join(bad), " ".join("%s=%s" % kv for kv in sorted(env.items())))

def status(doc):
    """BOOTED NUMBER PHASE ORDER[0] TRIAL FAILED from `status --json`."""
    try:
        s = json.loads(doc)
    except ValueError:
        return "? ? ? ? ? ?"
    b = s.get("booted")
    bl = s.get("bootloader") or {}
    num = ((s.get("slots") or {}).get(b) or {}).get("number")
    return "%s %s %s %s %s %s" % (b, num, (s.get("state") or {}).get("phase"), (bl.get("order") or ["-"])[0],
                                  bl.get("trial") or "-", (s.get("failed") or {}).get("number") or "-")

def plan(seed, n, *phases):
    """The draws: a phase, the instant as a fraction of it, and whether
    eqota restarts in the same boot first; one line per kill, "|" between."""
    r = random.Random(int(seed))
    return "|".join("%s %.6f %s" % (r.choice(phases), r.random(), r.choice(["power", "restart"]))
                    for _ in range(int(n)))

CMDS = {"kill": kill, "ref": ref, "release": release, "order": order, "status": status, "plan": plan}
for req in sys.stdin:
    words = req.rstrip("\n").split("\x1f")
    try:
        out = CMDS[words[0]](*words[1:])
    except Exception as e:  # the test reads the answer; a crash would hang it
        out = "error: %r" % e
    sys.stdout.write(out.replace("\n", " ") + "\n")
    sys.stdout.flush()
PY
coproc KP { exec python3 -u "$w/kp.py"; }
bg+=("$KP_PID")
# kp WORD...: one request to the helper; the answer in $kpo.
kp() {
  local IFS=$'\x1f'
  printf '%s\n' "$*" >&"${KP[1]}"
  IFS= read -r kpo <&"${KP[0]}" || { echo "agent_killpoints: the helper died" >&2; exit 1; }
  [[ $kpo != error:* ]] || { echo "agent_killpoints: helper: $kpo" >&2; exit 1; }
}

# ---- two releases: release 2 changes three packages (deltas) and adds three
# (full objects, about 4 MB to download)
"$gen" keygen --out k >/dev/null
mkdir -p p1 p2
if [ -d "$cache/release2" ]; then
  mapfile -t small < <(cd "$cache/release1" && ls -L -S -r -- *.deb |
    awk '!/^(libcurl4|zlib1g|libexpat1|openssl|libgnutls30|util-linux)_/ && n++ < 40')
  for f in "${small[@]}"; do ln -s "$cache/release1/$f" p1/; ln -s "$cache/release1/$f" p2/; done
  for n in libcurl4 zlib1g libexpat1; do
    ln -s "$cache/release1/${n}_"*.deb p1/
    ln -s "$cache/release2/${n}_"*.deb p2/
  done
  for n in openssl libgnutls30 util-linux; do ln -s "$cache/release2/${n}_"*.deb p2/; done
else
  python3 - p1 p2 <<'PY'
import io, random, sys, tarfile
def pkg(out, name, ver, size, seed):
    body = random.Random(seed).randbytes(size)
    with tarfile.open("%s/%s_%s.tar" % (out, name, ver), "w", format=tarfile.PAX_FORMAT) as t:
        for d in ("usr", "usr/share", "usr/share/" + name):
            i = tarfile.TarInfo(d); i.type, i.mode = tarfile.DIRTYPE, 0o755; t.addfile(i)
        for k in range(4):
            i = tarfile.TarInfo("usr/share/%s/part%d" % (name, k)); i.mode, i.size = 0o644, size // 4
            t.addfile(i, io.BytesIO(body[k * (size // 4):(k + 1) * (size // 4)]))
for r, out in ((1, sys.argv[1]), (2, sys.argv[2])):
    for k in range(40):
        pkg(out, "small%02d" % k, "1", 4096 * (k + 1), k)
    for k, n in enumerate(("curl", "zlib", "expat")):
        pkg(out, n, str(r), 200000, 100 + k + (r - 1) * 10)
    if r == 2:
        for k, n in enumerate(("openssl", "gnutls", "util")):
            pkg(out, n, "2", 1400000, 200 + k)
PY
fi
P=(--board b --channel stable --key k.key --store store.db --level 3)
"$gen" -q publish --repo repo "${P[@]}" --release r1 --packages p1 >/dev/null
mkdir -p logs
# Two servers of the repository: a throttled link for the download phase
# (the downloads take seconds), a fast one for everything else.
mkdir -p logs-slow
HTTPD_EXTRA_CONF='connection.kbytes-per-second = 2048' httpd_start "$w/repo" "$w/logs-slow"
slow_url=$HTTPD_URL
bg+=("$HTTPD_PID")
httpd_start "$w/repo" "$w/logs"

# The health check: 0.1 s, a marker line on stderr (eqota passes it on),
# then passes or fails as $w/health says.
cat >"$w/check" <<EOF
#!/bin/sh
sleep 0.1
echo "eq-killpoints: health check over" >&2
[ "\$(cat "$w/health")" = pass ]
EOF
chmod +x "$w/check"
echo pass >"$w/health"
d=$w/dev
# The default number of attempts for a slot on trial (2): with one, a
# power cut during the trial boot, before the commit lands, spends it, and
# the release is recorded as failed (docs/reliability.md); with the
# default, a cut must not lose the update.
simdevice_make "$d" "$HTTPD_URL" b "$w/k.pub" repository.retries=1 repository.retry-delay-ms=100 \
  "health.check=$w/check" health.timeout=10
eq() { simdevice_eq "$d" "$eqota" "$@"; }
eq provision --slot A >/dev/null 2>&1
simdevice_boot "$d" "$simboot"
"$gen" -q publish --repo repo "${P[@]}" --release r2 --packages p2 >/dev/null
kp ref r1 "$d/A"
cp -a "$d" "$w/s-download"       # release 1 committed, release 2 published, nothing downloaded
cp -a "$d" "$w/s-slow"           # the same, on the throttled link
sed -i "s|^url = .*|url = $slow_url|" "$w/s-slow/eqota.conf"

# A snapshot back as the device: the slots as hard links (eqota empties a
# target slot by unlinking, and never writes a slot's file in place), the
# rest copied.
restore() {
  rm -rf "$d"; mkdir "$d"
  local f
  for f in "$w/s-$1"/*; do
    case ${f##*/} in A | B) cp -al "$f" "$d/" ;; *) cp -a "$f" "$d/" ;; esac
  done
}
st_is() { # WANT: `status --json` in short (kp status) equals WANT
  local j
  j=$(eq status --json 2>/dev/null) || true
  kp status "$j"
  [ "$kpo" = "$1" ]
}
dev_eq=(env EQ_TEST_BOOT_ID_FILE="$d/boot_id" "$eqota" --config "$d/eqota.conf")

# ---- the cycle once without a kill: the references and the snapshots
restore download
httpd_log_flush; : >"$HTTPD_ACCESS_LOG"
rc=0; eq update >/dev/null 2>&1 || rc=$?
[ $rc -eq 3 ] && st_is "A 1 trying B B -" || fail "update: exit $rc, status $kpo"
kp ref r2 "$d/B"
# The install phase starts with every object of release 2 downloaded.
httpd_log_flush
cp -a "$w/s-download" "$w/s-install"
awk '$1 == "GET" && $3 == 200 && $2 ~ /^\/(objects|deltas)\// {print $2}' "$HTTPD_ACCESS_LOG" | sort -u >"$w/fetched"
n_fetched=0 dl_bytes=0
while read -r p; do
  sha=$(sha256sum "$w/repo$p" | cut -c1-64)
  cp "$w/repo$p" "$w/s-install/data/downloads/$sha"
  n_fetched=$((n_fetched + 1)) dl_bytes=$((dl_bytes + $(stat -c %s "$w/repo$p")))
done <"$w/fetched"
[ "$n_fetched" -ge 4 ] || fail "the update downloaded only $n_fetched objects"
restore install
rc=0; eq update >/dev/null 2>&1 || rc=$?
kp release "$d" B
[ $rc -eq 3 ] && [ "$kpo" = r2 ] || fail "update with the objects downloaded: exit $rc, slot B $kpo"
booted() { sed -n 's/^eqota.slot=//p' "$d/cmdline"; }
simdevice_boot "$d" "$simboot"
[ "$(booted)" = B ] || fail "the device did not boot slot B"
cp -a "$d" "$w/s-trial"          # booted into release 2 on trial, before mark-good
rc=0; eq mark-good >/dev/null 2>&1 || rc=$?
[ $rc -eq 0 ] && st_is "B 2 idle B - -" || fail "mark-good: exit $rc, status $kpo"
restore trial
echo fail >"$w/health"
rc=0; eq mark-good >/dev/null 2>&1 || rc=$?
[ $rc -eq 4 ] && st_is "B 2 idle A - 2" || fail "mark-good, failing check: exit $rc, status $kpo"
[ "$fails" -eq 0 ] || { echo "the cycle without a kill failed"; exit 1; }
echo pass >"$w/health"

# ---- the narrowest window, made certain: a kill after the bootloader was
# told to try slot B and before the state file says "trying". The state
# write that follows the bootloader's (the update's last rename) fails
# here, through strace's fault injection; then eqota starts again in the
# same boot, as the daemon does after a crash. The trial must wait for the
# reboot, not count as a slot that never came up (which records release 2
# as failed and loses the update).
if command -v strace >/dev/null && strace -f -qq -o /dev/null /bin/true 2>/dev/null; then
  # the state file is written with rename(2); strace counts each call
  restore install
  strace -f -qq -e trace=rename -o "$w/logs/renames" "${dev_eq[@]}" update >/dev/null 2>&1 || true
  n=$(grep -c ' rename(' "$w/logs/renames")
  if tail -1 "$w/logs/renames" | grep -q "\"$d/data/state\""; then
    restore install
    rc=0; strace -f -qq -o /dev/null -e trace=rename -e inject=rename:error=EIO:when="$n" \
      "${dev_eq[@]}" update >"$w/logs/armed.log" 2>&1 || rc=$?
    grep -q "^phase=installed" "$d/data/state" && grep -q "^BOOT_TRIAL=B" "$d/bootenv" ||
      { fail "no state 'installed' with slot B on trial after the failed state write (exit $rc)"; cat "$w/logs/renames" "$w/logs/armed.log"; }
    rc=0; eq mark-good >>"$w/logs/armed.log" 2>&1 || rc=$?
    if [ $rc -eq 0 ] && st_is "A 1 trying B B -"; then
      pass "killed between the bootloader's trial and the state's 'trying': a restart in the same boot waits for the reboot"
    else
      fail "killed between the bootloader's trial and the state's 'trying', a restart in the same boot: exit $rc, status $kpo"
      sed 's/^/    /' "$w/logs/armed.log"
    fi
    rc=0; eq update >>"$w/logs/armed.log" 2>&1 || rc=$?
    if [ $rc -eq 1 ] && grep -q "on trial: reboot into it" "$w/logs/armed.log" && st_is "A 1 trying B B -"; then
      pass "... and an update in that boot does not build slot B again"
    else
      fail "an update in the same boot: exit $rc, status $kpo"
      sed 's/^/    /' "$w/logs/armed.log"
    fi
    simdevice_boot "$d" "$simboot"
    rc=0; eq mark-good >>"$w/logs/armed.log" 2>&1 || rc=$?
    [ $rc -eq 0 ] && st_is "B 2 idle B - -" && pass "... and the reboot commits release 2" ||
      fail "after the reboot: exit $rc, status $kpo"
  else
    fail "the update's last rename is not the state file's: $(tail -1 "$w/logs/renames")"
  fi
else
  echo "SKIP: the window between the bootloader's trial and the state's 'trying' (no working strace)"
fi

# ---- the phases: what runs, from which snapshot, and from which line of
# its stderr on (none: from its start)
phases=(download install switch health commit rollback)
declare -A snap_of=([download]=slow [install]=install [switch]=install [health]=trial [commit]=trial
  [rollback]=trial)
declare -A cmd_of=([download]=update [install]=update [switch]=update [health]=mark-good [commit]=mark-good
  [rollback]=mark-good)
declare -A rc_of=([download]=3 [install]=3 [switch]=3 [health]=0 [commit]=0 [rollback]=4)
declare -A start_marker=([download]="" [install]="" [switch]="telling the bootloader to try it once" [health]=""
  [commit]="eq-killpoints: health check over" [rollback]="eq-killpoints: health check over")
health_of() { [ "$1" = rollback ] && echo fail || echo pass; }
# Each phase timed without a kill, 3 times (the short ones, whose length
# varies most with the disk's fsyncs, 5 times); its window is the shortest
# run, so that nearly every instant drawn in it finds eqota still at work.
declare -A runs_of=([download]=3 [install]=3 [switch]=5 [health]=3 [commit]=5 [rollback]=5)
declare -A window=()
for ph in "${phases[@]}"; do
  for k in $(seq "${runs_of[$ph]}"); do
    restore "${snap_of[$ph]}"
    health_of "$ph" >"$w/health"
    kp kill "$w/logs/timing-$ph-$k.log" "${start_marker[$ph]}" 1e9 "${dev_eq[@]}" "${cmd_of[$ph]}"
    read -r outcome t_mark t_end <<<"$kpo"
    [ "$outcome" = "exit:${rc_of[$ph]}" ] || fail "phase $ph, timing run $k: $outcome, expected exit ${rc_of[$ph]}"
    [ -z "${start_marker[$ph]}" ] || [ "$t_mark" != - ] || fail "phase $ph, timing run $k: no '${start_marker[$ph]}'"
    t=$(awk -v m="$t_mark" -v e="$t_end" -v old="${window[$ph]:-1e9}" \
      'BEGIN { t = (m == "-") ? e : e - m; printf "%.6f", (t < old) ? t : old }')
    window[$ph]=$t
  done
done
echo "release 2: $n_fetched objects and deltas, $dl_bytes bytes to download; the phases (the shortest run):"
for ph in "${phases[@]}"; do
  printf '  %-9s %8.1f ms  (%s%s)\n' "$ph" "$(awk -v t="${window[$ph]}" 'BEGIN{print t * 1000}')" "${cmd_of[$ph]}" \
    "${start_marker[$ph]:+, after \"${start_marker[$ph]}\"}"
done
[ "$fails" -eq 0 ] || { echo "the timing runs failed"; exit 1; }

# ---- the kills
declare -A n_kills n_hit n_incomplete n_lost max_boots
for ph in "${phases[@]}"; do n_kills[$ph]=0 n_hit[$ph]=0 n_incomplete[$ph]=0 n_lost[$ph]=0 max_boots[$ph]=0; done
problem() { echo "  kill $i ($ph at $inst s, $mode): $*"; }
# Every slot in the boot order holds a complete release.
check_order() {
  kp order "$d"
  [ "$kpo" = ok ] && return 0
  problem "$1: $kpo"; incomplete=1
}
max_boots_allowed=5
kp plan "$seed" "$kills" "${phases[@]}"
IFS='|' read -r -a draws <<<"$kpo"
# The phases were timed while other tests loaded the machine; a short
# phase (rollback: two bootloader writes and a state file) can run several
# times faster later. A kill that came too late still measured the phase,
# so the window shrinks to it. A phase that no drawn kill reached gets up to
# max_extra more kills, early in the shrunk window, so that each phase is
# really cut at least once (the checks below hold for these kills too).
max_extra=6
declare -A n_extra=()
for ph in "${phases[@]}"; do n_extra[$ph]=0; done
i=0
while :; do
  if [ $i -ge ${#draws[@]} ]; then
    for ph in "${phases[@]}"; do
      if [ "${n_kills[$ph]}" -ge 5 ] && [ "${n_hit[$ph]}" -eq 0 ] && [ "${n_extra[$ph]}" -lt $max_extra ]; then
        n_extra[$ph]=$((n_extra[$ph] + 1))
        draws+=("$ph 0.$((n_extra[$ph] % 2 * 3 + 2)) power")
      fi
    done
    [ $i -lt ${#draws[@]} ] || break
  fi
  read -r ph frac mode <<<"${draws[$i]}"
  i=$((i + 1))
  restore "${snap_of[$ph]}"
  health_of "$ph" >"$w/health"
  inst=$(awk -v f="$frac" -v t="${window[$ph]}" 'BEGIN{printf "%.4f", f * t}')
  kp kill "$w/logs/kill-$i.log" "${start_marker[$ph]}" "$inst" "${dev_eq[@]}" "${cmd_of[$ph]}"
  read -r outcome t_mark t_end <<<"$kpo"
  n_kills[$ph]=$((n_kills[$ph] + 1))
  if [ "$outcome" = killed ]; then
    n_hit[$ph]=$((n_hit[$ph] + 1))
  elif [ -z "${start_marker[$ph]}" ] || [ "$t_mark" != - ]; then
    window[$ph]=$(awk -v m="$t_mark" -v e="$t_end" -v old="${window[$ph]}" \
      'BEGIN { t = (m == "-") ? e : e - m; printf "%.6f", (t < old) ? t : old }')
  fi
  incomplete=0
  check_order "after the kill"
  if [ "$mode" = restart ]; then
    # eqota started again in the same boot, as the daemon's restart does
    eq mark-good >>"$w/logs/kill-$i.log" 2>&1 || true
    check_order "after a restart's mark-good"
    eq update >>"$w/logs/kill-$i.log" 2>&1 || true
    check_order "after a restart's update"
  fi
  done_=0 retried=0 boots=0 last=-
  while [ $boots -lt $max_boots_allowed ]; do
    boots=$((boots + 1))
    if ! s=$(simdevice_boot "$d" "$simboot" 2>&1); then problem "boot $boots: nothing bootable: $s"; incomplete=1; break; fi
    booted=$(booted)
    kp release "$d" "$booted"
    [ "$kpo" != incomplete ] || { problem "boot $boots: slot $booted is incomplete"; incomplete=1; }
    eq verify >/dev/null 2>&1 || { problem "boot $boots: eqota verify fails on slot $booted"; incomplete=1; }
    check_order "at boot $boots"
    rc=0; eq mark-good >>"$w/logs/kill-$i.log" 2>&1 || rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 4 ] || problem "boot $boots: mark-good exited with $rc"
    check_order "after mark-good at boot $boots"
    if st_is "$booted 2 idle $booted - -"; then done_=1; break; fi
    last=$kpo
    if [ "$ph" = rollback ] && [ $retried -eq 0 ] && [ "$last" = "$booted 1 idle $booted - 2" ]; then
      # rolled back to release 1, release 2 recorded as failed: the check
      # is mended, and release 2 is asked for again
      echo pass >"$w/health"; retried=1
      rc=0; eq update --retry >>"$w/logs/kill-$i.log" 2>&1 || rc=$?
    else
      rc=0; eq update >>"$w/logs/kill-$i.log" 2>&1 || rc=$?
    fi
    [ $rc -eq 0 ] || [ $rc -eq 3 ] || problem "boot $boots: update exited with $rc"
    check_order "after update at boot $boots"
  done
  if [ $done_ -eq 0 ]; then
    n_lost[$ph]=$((n_lost[$ph] + 1))
    problem "not on release 2 committed after $boots boots (booted, release, phase, order[0], trial," \
      "failed: $last); what eqota said:"
    grep -v "up to date" "$w/logs/kill-$i.log" | tail -20 | sed 's/^/    /'
  elif [ "$ph" = rollback ] && [ $retried -eq 0 ]; then
    n_lost[$ph]=$((n_lost[$ph] + 1))
    problem "the failing health check never rolled release 2 back"
  fi
  [ $incomplete -eq 0 ] || n_incomplete[$ph]=$((n_incomplete[$ph] + 1))
  [ $boots -le "${max_boots[$ph]}" ] || max_boots[$ph]=$boots
done

# ---- the table
printf '%-9s %6s %6s %11s %6s %10s\n' phase kills hit incomplete lost "max boots"
tot_k=0 tot_h=0 tot_i=0 tot_l=0
for ph in "${phases[@]}"; do
  printf '%-9s %6d %6d %11d %6d %10d\n' "$ph" "${n_kills[$ph]}" "${n_hit[$ph]}" "${n_incomplete[$ph]}" \
    "${n_lost[$ph]}" "${max_boots[$ph]}"
  tot_k=$((tot_k + n_kills[$ph])) tot_h=$((tot_h + n_hit[$ph]))
  tot_i=$((tot_i + n_incomplete[$ph])) tot_l=$((tot_l + n_lost[$ph]))
done
printf '%-9s %6d %6d %11d %6d\n' total "$tot_k" "$tot_h" "$tot_i" "$tot_l"
echo "(hit: eqota was still running at the instant; incomplete: kills after which the boot order named, or the"
echo " device booted, a slot that is not a complete release, or verify failed; lost: release 2 not committed"
echo " within $max_boots_allowed boots; EQ_KILL_SEED=$seed; $(($(date +%s) - t_start)) s)"
extra=$((${#draws[@]} - kills))
[ "$tot_k" -eq "${#draws[@]}" ] || fail "$tot_k kills of ${#draws[@]}"
[ $extra -eq 0 ] || echo "($extra of the kills were added for phases no drawn kill reached; each phase's window" \
  "shrank to the shortest run a late kill measured)"
[ "$tot_i" -eq 0 ] && pass "no kill left an incomplete slot in the boot order or booted" ||
  fail "$tot_i kills left an incomplete slot in the boot order or booted"
[ "$tot_l" -eq 0 ] && pass "no kill lost the update: release 2 committed within $max_boots_allowed boots every time" ||
  fail "$tot_l kills lost the update"
# Kills that always came too late would test nothing.
for ph in "${phases[@]}"; do
  [ "${n_kills[$ph]}" -lt 5 ] || [ "${n_hit[$ph]}" -gt 0 ] || fail "phase $ph: none of ${n_kills[$ph]} kills hit eqota running"
done
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed (EQ_KILL_SEED=$seed)"; exit 1; }
echo "SIGKILL at ${#draws[@]} instants over every phase: always a complete slot, never a lost update"
