# Sourced by scripts/gesture-eval.sh and scripts/gesture-real.sh: the part of their replay that
# is the same. Needs WORK (with wire/ and pam.d/ in it), ENROLL, HARNESS, MODULE and USER_NAME.

# A 1000×750 PNG of one grey colour at $1, for puff-enroll, which decodes the picture.
write_grey_picture() {
    python3 - "$1" <<'PY'
import struct, sys, zlib
width, height = 1000, 750
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)) \
    + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
PY
}

# replay_through_libpam PREFIX [MODULE ARGUMENT...]: enrolls each $WORK/wire/PREFIX*.enroll with
# the real puff-enroll --stdin into a scratch store of its own, then sends each line of its
# .attempts file ("pass|fail WIRE") through the PAM harness to build/pam_puff.so. Counts into
# accepted, refused, agree and disagree; sets status=1 on a refused enrollment or any
# disagreement with the matcher.
replay_through_libpam() {
    local prefix=$1 enroll name store expected line got
    shift
    accepted=0; refused=0; agree=0; disagree=0
    write_grey_picture "$WORK/picture.png"
    for enroll in "$WORK"/wire/"$prefix"*.enroll; do
        name=$(basename "$enroll" .enroll)
        store=$WORK/store-$name
        mkdir -m 700 "$store" "$store-state"
        # No lockout and no gesture limit: the replay sends many wrong gestures on purpose.
        printf 'deny = 0\ngesture_tries = 0\n' > "$store/puff.conf"; chmod 600 "$store/puff.conf"
        "$ENROLL" gesture --user "$USER_NAME" --picture "$WORK/picture.png" --stdin \
            --dir "$store" --state-dir "$store-state" --conf "$store/puff.conf" < "$enroll" >/dev/null 2>"$WORK/enroll.err" || {
            echo "puff-enroll refused the drawings of $name: $(cat "$WORK/enroll.err")"; status=1; continue; }
        echo "auth required $MODULE dir=$store state_dir=$store-state conf=$store/puff.conf nodelay $*" > "$WORK/pam.d/puff-eval"
        while read -r expected line; do
            if "$HARNESS" --confdir "$WORK/pam.d" --service puff-eval --user "$USER_NAME" --reply "$line" >/dev/null 2>&1; then
                got=pass; accepted=$((accepted + 1))
            else
                got=fail; refused=$((refused + 1))
            fi
            if [ "$got" = "$expected" ]; then
                agree=$((agree + 1))
            else
                disagree=$((disagree + 1)); echo "disagreement on $name: matcher $expected, libpam $got"
            fi
        done < "$WORK/wire/$name.attempts"
    done
    [ "$disagree" -eq 0 ] || status=1
}

# The replay's summary: report_replay WHAT WHICH-ATTEMPTS (the counts of the last replay).
report_replay() {
    echo
    echo "libpam replay of $1 through build/pam_puff.so (aim σ 0.4 %, 1×): $((agree + disagree)) attempts"
    echo "  ($2), accepted $accepted, refused $refused;"
    echo "  agreement with the matcher: $agree of $((agree + disagree))"
}
