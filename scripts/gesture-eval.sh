#!/usr/bin/env bash
# make gesture-eval: figures, not a test. Runs gesture-eval (the workload tables of issue 23
# through the real enroller and matcher for three seeds, and the ROC curve as SVG), then
# replays a smaller set of its attempts through libpam: each of the nine gestures is enrolled
# with the real puff-enroll --stdin from one simulated owner's drawings (define, confirm, once
# more, one more: the lines it asks for) into a scratch store (for the existing account
# "nobody"; nothing outside the scratch directory is written), and every attempt is sent by
# the PAM harness (pam_start_confdir, a service file in the scratch directory) to
# build/pam_puff.so. The module's verdicts must agree with the matcher's.
set -euo pipefail
cd "$(dirname "$0")/.."
EVAL=${EVAL:-.build/release/gesture-eval}
ENROLL=${PUFF_BIN:?}/puff-enroll
HARNESS=${PUFF_BIN:?}/puff-pam-harness
MODULE=$PWD/build/pam_puff.so
ATTEMPTS=${EVAL_ATTEMPTS:-504}
WIRE_ATTEMPTS=${EVAL_WIRE_ATTEMPTS:-20}
USER_NAME=nobody

WORK=$(mktemp -d /tmp/puff-gesture-eval-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/wire" "$WORK/pam.d" build

status=0
"$EVAL" --attempts "$ATTEMPTS" --svg build/gesture-roc.svg --wire "$WORK/wire" --wire-attempts "$WIRE_ATTEMPTS" || status=$?

source scripts/gesture-replay.sh
replay_through_libpam g debug
echo
echo "libpam replay through build/pam_puff.so: $((agree + disagree)) attempts (genuine σ 1 %, shoulder-surfers, genuine in"
echo "  puff-pad declaring its cells, video-studiers declaring 30×30 px cells, in turn),"
echo "  accepted $accepted, refused $refused; agreement with the matcher: $agree of $((agree + disagree))"
exit "$status"
