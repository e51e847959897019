#!/usr/bin/env bash
# make bench: figures, not tests. Prints medians of whole-process pamtester runs:
#   1. pam_permit vs pam_puff with argon2id at its minimum cost: the module's own overhead;
#   2. pam_puff at the default cost vs pam_unix with the system's yescrypt.
# pamtester only reads /etc/pam.d, so the benchmark writes /etc/pam.d/puff-bench-* service
# files, and gives the puff-bench account a system password for pam_unix: `make bench` runs it
# through scripts/hermetic.sh, so both exist only in a private copy-on-write /etc that vanishes
# with the run. It refuses to run outside it. It uses a scratch Puff store.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-100}
MODULE=$PWD/build/pam_puff.so
ENROLL=$PWD/build/puff-enroll
USER_NAME=puff-bench
[ "${PUFF_HERMETIC:-}" = 1 ] || { echo "bench.sh: run it with make bench (it sets a system password only in a private /etc)" >&2; exit 64; }
PASSCODE=604917
id "$USER_NAME" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER_NAME"
echo "$USER_NAME:$PASSCODE-unix" | chpasswd   # a yescrypt hash made by the system's own chpasswd

WORK=$(mktemp -d /tmp/puff-bench-XXXXXX)
chmod 755 "$WORK"
SERVICES=()
cleanup() { rm -rf "$WORK"; for s in "${SERVICES[@]}"; do rm -f "/etc/pam.d/$s"; done; }
trap cleanup EXIT
mkdir -m 700 "$WORK/min" "$WORK/default" "$WORK/state"

service() {  # service NAME LINE: a temporary /etc/pam.d file
  echo "$2" > "/etc/pam.d/$1"
  SERVICES+=("$1")
}
median_ms() {  # median_ms SERVICE SECRET: median wall time of RUNS pamtester processes
  local times=() start end
  for _ in $(seq "$RUNS"); do
    start=$(date +%s%N)
    # A here-string, not a pipe: pam_permit reads nothing, and under pipefail an echo killed by
    # SIGPIPE would fail the run.
    pamtester "$1" "$USER_NAME" authenticate <<<"$2" >/dev/null 2>&1 || { echo "pamtester $1 failed" >&2; exit 1; }
    end=$(date +%s%N)
    times+=($(( (end - start) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f", m/1000}'
}

printf 'kdf_ops = 1\nkdf_mem_kib = 8\n' > "$WORK/min/puff.conf"; chmod 600 "$WORK/min/puff.conf"
: > "$WORK/default/puff.conf"; chmod 600 "$WORK/default/puff.conf"
echo "$PASSCODE" | "$ENROLL" passcode --user "$USER_NAME" --stdin --dir "$WORK/min" --state-dir "$WORK/state" --conf "$WORK/min/puff.conf" >/dev/null
echo "$PASSCODE" | "$ENROLL" passcode --user "$USER_NAME" --stdin --dir "$WORK/default" --state-dir "$WORK/state" --conf "$WORK/default/puff.conf" >/dev/null

service puff-bench-permit "auth required pam_permit.so"
service puff-bench-min "auth required $MODULE dir=$WORK/min state_dir=$WORK/state conf=$WORK/min/puff.conf nodelay"
service puff-bench-default "auth required $MODULE dir=$WORK/default state_dir=$WORK/state conf=$WORK/default/puff.conf nodelay"
service puff-bench-unix "auth required pam_unix.so nodelay"

echo "pamtester whole-process medians over $RUNS runs each ($(nproc) cores):"
printf '  %-44s %8s ms\n' "pam_permit" "$(median_ms puff-bench-permit x)"
printf '  %-44s %8s ms\n' "pam_puff, argon2id at minimum cost (t=1, 8 KiB)" "$(median_ms puff-bench-min $PASSCODE)"
printf '  %-44s %8s ms\n' "pam_puff, default cost (t=1, 64 MiB)" "$(median_ms puff-bench-default $PASSCODE)"
printf '  %-44s %8s ms\n' "pam_unix, system yescrypt ($(getent shadow $USER_NAME | cut -d'$' -f2,3 | tr -d '\n'))" "$(median_ms puff-bench-unix $PASSCODE-unix)"
"$ENROLL" remove --user "$USER_NAME" --dir "$WORK/min" --state-dir "$WORK/state" --conf "$WORK/min/puff.conf" >/dev/null
