#!/usr/bin/env bash
# make tsan: ThreadSanitizer over a multithreaded PAM host. The module is built with
# `--sanitize thread` (against the toolchain's shared Swift runtime, since the TSan build
# cannot use -static-stdlib) and loaded by the C harness, itself compiled with
# -fsanitize=thread and linked by swiftc (which brings libdispatch and the blocks runtime
# that the TSan runtime refers to) with --export-dynamic, so the module finds the __tsan_*
# entry points in the executable. Each scenario runs TSAN_THREADS threads x TSAN_REPEAT
# transactions; the script fails on any ThreadSanitizer report or unexpected result.
#
# The module must be linked with -z nodelete here as in `make module`: libpam dlcloses it
# at pam_end, and the shared Swift runtime keeps pointers into the unloaded image (a
# crash in swift_conformsToProtocol as soon as two threads load and unload it).
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
TOOLCHAIN=$(dirname "$(dirname "$(command -v "$SWIFT")")")
RUNTIME=$TOOLCHAIN/lib/swift/linux
THREADS=${TSAN_THREADS:-32}
REPEAT=${TSAN_REPEAT:-20}
BIN=${PUFF_BIN:-$PWD/.build/debug}
USER_NAME=puff-vg-user
id "$USER_NAME" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER_NAME"

"$SWIFT" build -c release --product PuffPAM --scratch-path .build-tsan --sanitize thread \
  -Xlinker -z -Xlinker nodelete 2>&1 | grep -E "error|warning: unre|Compiling|Build" | tail -3
MODULE=$PWD/.build-tsan/release/libPuffPAM.so

WORK=$(mktemp -d /tmp/puff-tsan-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"
mkdir -m 700 "$WORK/etc" "$WORK/state" "$WORK/pam.d"
"$TOOLCHAIN/bin/clang" -fsanitize=thread -g -O1 -c Tests/Harness/main.c -o "$WORK/harness.o"
"$TOOLCHAIN/bin/swiftc" -sanitize=thread "$WORK/harness.o" -o "$WORK/harness" -lpam -lpthread \
  -Xlinker --export-dynamic 2>&1 | grep -v "Cannot export local symbol" || true
printf 'kdf_ops = 1\nkdf_mem_kib = 8\n' > "$WORK/etc/puff.conf"
chmod 600 "$WORK/etc/puff.conf"
echo "auth required $MODULE dir=$WORK/etc state_dir=$WORK/state conf=$WORK/etc/puff.conf nodelay deny=0" > "$WORK/pam.d/t"
echo 604917 | "$BIN/puff-enroll" passcode --user "$USER_NAME" --type digits6 --stdin \
  --dir "$WORK/etc" --state-dir "$WORK/state" --conf "$WORK/etc/puff.conf" >/dev/null

failed=0
# scenario REPLY USER EXPECTED-FAILURES
scenario() {
  local out reports
  out=$(LD_LIBRARY_PATH=$RUNTIME TSAN_OPTIONS="halt_on_error=0" "$WORK/harness" --confdir "$WORK/pam.d" \
          --service t --user "$2" --reply "$1" --threads "$THREADS" --repeat "$REPEAT" 2>"$WORK/tsan.log" || true)
  reports=$(grep -c "WARNING: ThreadSanitizer\|ERROR: ThreadSanitizer" "$WORK/tsan.log" || true)
  local verdict=ok
  if [ "$reports" != 0 ] || [ "$out" != "THREADS $THREADS x $REPEAT: $3 not successful" ]; then
    verdict=FAILED; failed=1; head -60 "$WORK/tsan.log" >&2
  fi
  printf '  %-8s %-16s %-36s tsan reports: %s  %s\n' "$1" "$2" "$out" "$reports" "$verdict"
}
all=$(( THREADS * REPEAT ))
echo "ThreadSanitizer, $THREADS threads x $REPEAT pam_start/pam_authenticate/pam_end each:"
scenario 604917 "$USER_NAME" 0
scenario 111111 "$USER_NAME" "$all"
scenario 604917 root "$all"
scenario 604917 puff-tsan-no-such-user "$all"
exit "$failed"
