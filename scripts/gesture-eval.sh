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

# A 1000×750 PNG (one grey colour) for puff-enroll, which reads the picture's size.
python3 - "$WORK/picture.png" <<'EOF'
import struct, sys, zlib
width, height = 1000, 750
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)) \
    + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
EOF

agree=0; disagree=0; accepted=0; refused=0
for enroll in "$WORK"/wire/g*.enroll; do
  name=$(basename "$enroll" .enroll)
  store=$WORK/store-$name
  mkdir -m 700 "$store" "$store-state"
  # No lockout and no gesture limit: the replay sends many wrong gestures on purpose.
  printf 'deny = 0\ngesture_tries = 0\n' > "$store/puff.conf"; chmod 600 "$store/puff.conf"
  "$ENROLL" gesture --user "$USER_NAME" --picture "$WORK/picture.png" --stdin \
    --dir "$store" --state-dir "$store-state" --conf "$store/puff.conf" < "$enroll" >/dev/null 2>"$WORK/enroll.err" || {
    echo "puff-enroll refused the drawings of $name: $(cat "$WORK/enroll.err")"; status=1; continue; }
  echo "auth required $MODULE dir=$store state_dir=$store-state conf=$store/puff.conf nodelay debug" > "$WORK/pam.d/puff-eval"
  while read -r expected line; do
    if "$HARNESS" --confdir "$WORK/pam.d" --service puff-eval --user "$USER_NAME" --reply "$line" >/dev/null 2>&1; then
      got=pass; accepted=$((accepted + 1))
    else
      got=fail; refused=$((refused + 1))
    fi
    if [ "$got" = "$expected" ]; then agree=$((agree + 1)); else disagree=$((disagree + 1)); echo "disagreement on $name: matcher $expected, libpam $got"; fi
  done < "$WORK/wire/$name.attempts"
done
echo
echo "libpam replay through build/pam_puff.so: $((agree + disagree)) attempts (genuine σ 1 %, shoulder-surfers, genuine in"
echo "  puff-pad declaring its cells, video-studiers declaring 30×30 px cells, in turn),"
echo "  accepted $accepted, refused $refused; agreement with the matcher: $agree of $((agree + disagree))"
[ "$disagree" -eq 0 ] || status=1
exit "$status"
