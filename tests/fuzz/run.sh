#!/bin/sh
# Fuzzes one libFuzzer target for a fixed time (the fuzz-run.<name> tests of
# an EQ_FUZZ build, and bench/fuzz-campaign.sh).
#   run.sh TARGET SECONDS WORKDIR CORPUS_DIR...
# New inputs go to WORKDIR/corpus (the seed folders are only read); a crash,
# leak, timeout or out-of-memory input is saved as WORKDIR/crash-* (or
# leak-*, timeout-*, oom-*), and the script fails naming it. The libFuzzer
# log is WORKDIR/fuzz.log; its final statistics are printed. EQ_FUZZ_ARGS
# (eq_add_fuzz_target's FUZZ_ARGS) adds libFuzzer options.
set -u
if [ $# -lt 3 ]; then
  echo "usage: $0 TARGET SECONDS WORKDIR [CORPUS_DIR...]" >&2
  exit 2
fi
target=$1 secs=$2 work=$3
shift 3
mkdir -p "$work/corpus" || exit 1
rm -f "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* "$work/fuzz.log"
seeds=
for d in "$@"; do
  [ -d "$d" ] && seeds="$seeds $d"
done
# -timeout: one input may take 10 s (a hang is a finding), -rss_limit_mb:
# a run away allocation is one too. ASan's leak check stays on.
# shellcheck disable=SC2086
"$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" ${EQ_FUZZ_ARGS:-} "$work/corpus" $seeds >"$work/fuzz.log" 2>&1
rc=$?
grep -E '^(stat::|#[0-9]+ *DONE)' "$work/fuzz.log"
found=$(ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null)
if [ -n "$found" ] || [ $rc -ne 0 ]; then
  echo "FUZZ FAILURE in $(basename "$target") (exit $rc); input(s):"
  for f in $found; do echo "  $f"; done
  echo "reproduce: $target $found"
  echo "--- last lines of $work/fuzz.log"
  tail -n 60 "$work/fuzz.log"
  exit 1
fi
echo "$(basename "$target"): no crash in ${secs} s"
