#!/usr/bin/env bash
# make gesture-real: figures, not a test. Real drawings as the ground truth (issue 35): the $1
# unistroke logs (../shared/data/dollar1_xml_logs.tar.gz, beside the repository; never copied
# into it) are extracted to a scratch directory and run through gesture-eval --dollar1 (the real
# enroller and matcher): the hand's variation, then the goal rows for each placement and size.
# Then one gesture a person is enrolled with the real puff-enroll --stdin (the drawings the
# enroller took) and its attempts (later repetitions, other speeds, other people) are sent
# through libpam to build/pam_puff.so: the module's verdicts must agree with the matcher's.
# Signatures written in two sessions with skilled forgeries (SVC2004, docs/dev/gesture-format.md)
# are measured the same way when SVC2004=DIR names their extracted Task1 or Task2 folder (never
# part of the project; without it: nothing measured), and ten people's are replayed through libpam.
# Multistroke symbols drawn with a finger or a stylus (MMG) are measured when MMG=DIR names the
# folder of their CSV conversion (likewise never part of the project; without it: nothing).
#   SCALES=1,1.5,2 AIMS=exact,recorded,0.4,0.8 (the table's placements)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DOLLAR1:-../shared/data/dollar1_xml_logs.tar.gz}
EVAL=${EVAL:-.build/release/gesture-eval}
ENROLL=${PUFF_BIN:?}/puff-enroll
HARNESS=${PUFF_BIN:?}/puff-pam-harness
MODULE=$PWD/build/pam_puff.so
USER_NAME=nobody
SIGNATURES=${SVC2004:-../shared/data/svc2004}
status=0
if [ -d "$SIGNATURES" ]; then
  WORK=$(mktemp -d /tmp/puff-gesture-real-XXXXXX)
  trap 'rm -rf "$WORK"' EXIT
  mkdir -p "$WORK/wire" "$WORK/pam.d"
  "$EVAL" --svc2004 "$SIGNATURES" --scales "${SCALES:-1,1.5,2}" --aims "${AIMS:-exact,0.4,0.8}"
  "$EVAL" --svc2004 "$SIGNATURES" --scales 1 --aims 0.4 --wire "$WORK/wire"
  source scripts/gesture-replay.sh
  replay_through_libpam s
  report_replay "SVC2004 signatures" "later first-session signatures, the second session and five skilled forgeries, of ten people"
  rm -rf "$WORK"
else
  echo "gesture-real: SVC2004 signatures absent ($SIGNATURES; set SVC2004=DIR, see docs/dev/gesture-format.md): nothing measured"
fi
MULTISTROKES=${MMG:-../shared/data/mmg}
if [ -d "$MULTISTROKES" ]; then
  "$EVAL" --mmg "$MULTISTROKES"
else
  echo "gesture-real: MMG multistroke symbols absent ($MULTISTROKES; set MMG=DIR, see docs/dev/gesture-format.md): nothing measured"
fi
if [ ! -f "$DATA" ]; then
  echo "gesture-real: $DATA is absent (the \$1 logs are not part of the project; see /work/shared/data/README.md): nothing measured"
  exit "$status"
fi
WORK=$(mktemp -d /tmp/puff-gesture-real-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/data" "$WORK/wire" "$WORK/pam.d"
tar -xzf "$DATA" -C "$WORK/data"

"$EVAL" --dollar1 "$WORK/data" --scales "${SCALES:-1,1.5,2}" --aims "${AIMS:-exact,recorded,0.4,0.8}"
"$EVAL" --dollar1 "$WORK/data" --scales 1 --aims 0.4 --wire "$WORK/wire"

source scripts/gesture-replay.sh
replay_through_libpam r
report_replay "real drawings" "later repetitions with pixels and through puff-pad's cells, 5 slow, 5 fast, 2 of each other person, per person"
exit "$status"
