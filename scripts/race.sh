#!/usr/bin/env bash
# make race: N processes released at once into pam_authenticate on one user (puff-race),
# through Puff and through Debian's pam_faillock, from a missing and from an existing
# counter file; prints how many attempts each one counted. Needs root (as a login does).
#
#   PUFF_MODULE  the module (default build/pam_puff.so)
#   PUFF_BIN     where puff-race and puff-enroll are (default: swift build --show-bin-path)
#   RACE_COUNTS  the N values (default "64 200")
set -euo pipefail
cd "$(dirname "$0")/.."
module=${PUFF_MODULE:-$PWD/build/pam_puff.so}
bin=${PUFF_BIN:-$(swift build --show-bin-path)}
counts=${RACE_COUNTS:-64 200}
user=puff-race-user

created_user=0
if ! getent passwd "$user" >/dev/null; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
    created_user=1
fi
work=$(mktemp -d /tmp/puff-race-XXXXXX)
cleanup() {
    rm -rf "$work"
    if [ "$created_user" = 1 ]; then userdel "$user" 2>/dev/null || true; fi
}
trap cleanup EXIT
chmod 0755 "$work"

# A fresh Puff store and pam_faillock tally directory with their services, per scenario.
setup() {
    local deny=$1
    rm -rf "$work/s"
    mkdir -p -m 0700 "$work/s/etc" "$work/s/state"
    mkdir -p -m 0755 "$work/s/pam.d" "$work/s/faillock"
    printf 'kdf_ops = 1\nkdf_mem_kib = 8\n' >"$work/s/etc/puff.conf"
    chmod 0600 "$work/s/etc/puff.conf"
    : >"$work/s/faillock.conf"
    echo "auth required $module dir=$work/s/etc state_dir=$work/s/state conf=$work/s/etc/puff.conf nodelay deny=$deny" \
        >"$work/s/pam.d/puff-race"
    local options="dir=$work/s/faillock deny=$deny conf=$work/s/faillock.conf"
    # pam_deny (wrong) or pam_permit (right) stands in for the password check.
    for check in deny permit; do
        cat >"$work/s/pam.d/faillock-$check" <<EOF
auth requisite pam_faillock.so preauth $options
auth [success=1 default=bad] pam_$check.so
auth [default=die] pam_faillock.so authfail $options
auth sufficient pam_faillock.so authsucc $options
EOF
    done
    printf '604917\n' | "$bin/puff-enroll" passcode --user "$user" --type digits6 --stdin \
        --dir "$work/s/etc" --state-dir "$work/s/state" --conf "$work/s/etc/puff.conf" >/dev/null
    rm -f "$work/s/state/$user"   # enrollment creates the counter file; start without one
}

race() {  # service reply count -> "<successes> <auth errors> <missing> <slowest ms>"
    "$bin/puff-race" --confdir "$work/s/pam.d" --service "$1" --user "$user" --reply "$2" --count "$3" |
        awk '$1 == "CODE" && $2 == 0 { ok = $3 } $1 == "CODE" && $2 == 7 { bad = $3 }
             $1 == "MISSING" { missing = $2 } $1 == "TIME" { sub("max_ms=", "", $2); ms = $2 }
             END { printf "%d %d %d %d\n", ok, bad, missing, ms }'
}

puff_count() {
    "$bin/puff-enroll" status --json --user "$user" \
        --dir "$work/s/etc" --state-dir "$work/s/state" --conf "$work/s/etc/puff.conf" |
        sed -n 's/.*"failures": \([0-9]*\).*/\1/p'
}

faillock_count() {
    faillock --dir "$work/s/faillock" --user "$user" | grep -cE ' [VI]$' || true
}

printf '%-34s %-26s %-26s\n' "scenario" "puff" "pam_faillock"
status=0
for n in $counts; do
    for start in missing existing; do
        setup 1000000
        before=0 fbefore=0
        if [ "$start" = existing ]; then
            race puff-race 111333 1 >/dev/null
            race faillock-deny x 1 >/dev/null
            before=$(puff_count) fbefore=$(faillock_count)
        fi
        read -r _ pbad pmissing pms < <(race puff-race 111333 "$n")
        read -r _ fbad fmissing fms < <(race faillock-deny x "$n")
        counted=$(( $(puff_count) - before ))
        fcounted=$(( $(faillock_count) - fbefore ))
        printf '%-34s %-26s %-26s\n' "N=$n wrong, $start file" \
            "$counted/$n counted (${pms} ms)" "$fcounted/$n counted (${fms} ms)"
        if [ "$counted" != "$n" ] || [ "$pbad" != "$n" ] || [ "$pmissing" != 0 ]; then status=1; fi
    done
done
setup 3
read -r pok _ pmissing pms < <(race puff-race 604917 32)
read -r fok _ fmissing fms < <(race faillock-permit x 32)
printf '%-34s %-26s %-26s\n' "32 right, deny=3" "$pok/32 succeeded (${pms} ms)" "$fok/32 succeeded (${fms} ms)"
if [ "$pok" != 32 ] || [ "$(puff_count)" != 0 ]; then status=1; fi
[ "$status" = 0 ] && echo "puff: every attempt counted, every process got its PAM code" || echo "puff: MISMATCH"
exit "$status"
