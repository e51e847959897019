#!/usr/bin/env bash
# make fuzz: builds every libFuzzer target (Sources/Fuzz/*) with AddressSanitizer and runs
# each one for FUZZ_SECONDS seconds from its committed seed corpus (Fuzz/corpus/<target>).
# Prints executions and crashes per target; exits non-zero when any target crashed or broke
# an invariant. Crash inputs are kept in build/fuzz/<target>/ (replay one with the normal
# build: `.build/debug/fuzz-<target> build/fuzz/<target>/crash-...`).
#
#   FUZZ_SECONDS=60        seconds per target (0: build only)
#   FUZZ_TARGETS="a b"     a subset (names as in Fuzz/corpus)
#   FUZZ_KEEP_CORPUS=1     keep the grown corpus in build/fuzz/<target>/corpus
#
# Notes: SwiftPM hands `--sanitize fuzzer --sanitize address` to the Swift driver as two
# -sanitize= flags and the driver keeps only the last one for compilation, so without the
# explicit `-sanitize=fuzzer,address` the code would get ASan but no coverage
# instrumentation. SWIFT_BACKTRACE=enable=no makes a crash end the process at once (the
# Swift backtracer otherwise waits, and a CI run hangs).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_TARGETS:-"gesture-wire template record options argon2 tally authenticate helper-protocol"}
SWIFT=${SWIFT:-swift}
FLAGS=(--sanitize fuzzer --sanitize address -Xswiftc -sanitize=fuzzer,address -Xswiftc -DPUFF_FUZZ
       --scratch-path .build-fuzz)
export SWIFT_BACKTRACE=enable=no

[ "$(id -u)" = 0 ] || { echo "fuzz.sh: run as root (the authenticate target needs a root-owned store)" >&2; exit 1; }

started=$(date +%s)
for target in $TARGETS; do
  "$SWIFT" build "${FLAGS[@]}" --product "fuzz-$target" 2>&1 | grep -v "Cannot export local symbol" >&2
done
bin=$("$SWIFT" build "${FLAGS[@]}" --show-bin-path)
echo "fuzz build: $(( $(date +%s) - started )) s"
[ "$SECONDS_EACH" -gt 0 ] || exit 0   # libFuzzer reads -max_total_time=0 as "no limit"

# Working corpora and the authenticate target's store live on tmpfs when there is one
# (fsync is cheap there), and go away on exit.
parent=/tmp
[ -d /dev/shm ] && [ -w /dev/shm ] && parent=/dev/shm
WORK=$(mktemp -d "$parent/puff-fuzz-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export PUFF_FUZZ_TMPDIR="$WORK"

declare -A EXECS RESULT
failed=0
for target in $TARGETS; do
  artifacts=build/fuzz/$target
  mkdir -p "$artifacts" "$WORK/$target"
  cp Fuzz/corpus/"$target"/* "$WORK/$target/"
  extra=()
  # The gesture parser has its own 64 KiB limit; let the fuzzer reach it.
  [ "$target" = gesture-wire ] && extra+=(-max_len=70000)
  log=$artifacts/last-run.log
  status=0
  timeout --kill-after=10 $(( SECONDS_EACH + 300 )) \
    "$bin/fuzz-$target" "$WORK/$target" -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
      -timeout=30 -rss_limit_mb=2048 -artifact_prefix="$artifacts/" "${extra[@]}" >"$log" 2>&1 || status=$?
  EXECS[$target]=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ "$status" = 0 ]; then
    RESULT[$target]="0 crashes"
  else
    failed=1
    RESULT[$target]="CRASH (exit $status): $(grep -o "Test unit written to .*" "$log" | head -1)"
    echo "---- fuzz-$target (log: $log)" >&2
    grep -v "^#\|^INFO\|^MS:" "$log" | tail -30 >&2
  fi
  if [ "${FUZZ_KEEP_CORPUS:-0}" = 1 ]; then
    rm -rf "$artifacts/corpus" && cp -r "$WORK/$target" "$artifacts/corpus"
  fi
  printf '  %-14s %12s executions  %s\n' "$target" "${EXECS[$target]:-?}" "${RESULT[$target]}"
done

echo "fuzz summary ($SECONDS_EACH s per target, $(( $(date +%s) - started )) s in all):"
for target in $TARGETS; do
  printf '  %-14s %12s executions  %s\n' "$target" "${EXECS[$target]:-?}" "${RESULT[$target]}"
done
exit "$failed"
