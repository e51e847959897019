#!/usr/bin/env bash
# make gesture-real: figures, not a test. Real drawings as the ground truth (issue 35): the $1
# unistroke logs (../shared/data/dollar1_xml_logs.tar.gz, beside the repository; never copied
# into it) are extracted to a scratch directory and run through gesture-eval --dollar1 (the real
# enroller and matcher): the hand's variation, then the goal rows for each placement and size.
# Then one gesture a person is enrolled with the real puff-enroll --stdin (the drawings the
# enroller took) and its attempts (later repetitions, other speeds, other people) are sent
# through libpam to build/pam_puff.so: the module's verdicts must agree with the matcher's.
#   SCALES=1,1.5,2 AIMS=exact,recorded,0.4,0.8 (the table's placements)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DOLLAR1:-../shared/data/dollar1_xml_logs.tar.gz}
EVAL=${EVAL:-.build/release/gesture-eval}
ENROLL=${PUFF_BIN:?}/puff-enroll
HARNESS=${PUFF_BIN:?}/puff-pam-harness
MODULE=$PWD/build/pam_puff.so
USER_NAME=nobody
if [ ! -f "$DATA" ]; then
  echo "gesture-real: $DATA is absent (the \$1 logs are not part of the project; see /work/shared/data/README.md): nothing measured"
  exit 0
fi
WORK=$(mktemp -d /tmp/puff-gesture-real-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/data" "$WORK/wire" "$WORK/pam.d"
tar -xzf "$DATA" -C "$WORK/data"

"$EVAL" --dollar1 "$WORK/data" --scales "${SCALES:-1,1.5,2}" --aims "${AIMS:-exact,recorded,0.4,0.8}"
"$EVAL" --dollar1 "$WORK/data" --scales 1 --aims 0.4 --wire "$WORK/wire"

# A 1000×750 PNG (one grey colour) for puff-enroll, which reads the picture's size.
python3 - "$WORK/picture.png" <<'PY'
import struct, sys, zlib
width, height = 1000, 750
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)) \
    + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
PY

status=0; agree=0; disagree=0; accepted=0; refused=0
for enroll in "$WORK"/wire/r*.enroll; do
  name=$(basename "$enroll" .enroll)
  store=$WORK/store-$name
  mkdir -m 700 "$store" "$store-state"
  printf 'deny = 0\ngesture_tries = 0\n' > "$store/puff.conf"; chmod 600 "$store/puff.conf"
  "$ENROLL" gesture --user "$USER_NAME" --picture "$WORK/picture.png" --stdin \
    --dir "$store" --state-dir "$store-state" --conf "$store/puff.conf" < "$enroll" >/dev/null 2>"$WORK/enroll.err" || {
    echo "puff-enroll refused the drawings of $name: $(cat "$WORK/enroll.err")"; status=1; continue; }
  echo "auth required $MODULE dir=$store state_dir=$store-state conf=$store/puff.conf nodelay" > "$WORK/pam.d/puff-eval"
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
echo "libpam replay of real drawings through build/pam_puff.so (aim σ 0.4 %, 1×): $((agree + disagree)) attempts"
echo "  (later repetitions, 5 slow, 5 fast, 2 of each other person, per person), accepted $accepted, refused $refused;"
echo "  agreement with the matcher: $agree of $((agree + disagree))"
[ "$disagree" -eq 0 ] || status=1
exit "$status"
