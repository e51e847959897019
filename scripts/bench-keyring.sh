#!/usr/bin/env bash
# make bench, part 6 (also alone: scripts/hermetic.sh -- bash scripts/bench-keyring.sh): what the
# login keyring (keyring = yes) adds to a login, in pairs run alternately in one process tree:
#   - the release: a passcode login with keyring = yes and a copy kept (one more argon2id, at
#     the record's cost, and the copy opened), against the same login with keyring off;
#   - the capture: the system password typed at Puff's prompt in the "Puff, else the password"
#     stack (Puff counts it, pam_unix accepts it, authsucc takes the failure back and, with
#     keyring = yes, seals it: one crypto_box_seal and one durable file write), against the same
#     login with keyring off.
# At argon2id's minimum cost and at the default cost. pamtester wall time, RUNS pairs each.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${PUFF_HERMETIC:-}" = 1 ] || { echo "bench-keyring.sh: run it through scripts/hermetic.sh" >&2; exit 64; }
RUNS=${RUNS:-100}
MODULE=${BENCH_MODULE:-$PWD/build/pam_puff.so}
ENROLL=${BENCH_ENROLL:-$PWD/build/puff-enroll}
USER_NAME=puff-bench-kr
PASSCODE=604917
PASSWORD=Sys-Pass-4217

WORK=$(mktemp -d /tmp/puff-bench-kr-XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
id "$USER_NAME" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER_NAME"
echo "$USER_NAME:$PASSWORD" | chpasswd

median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) {print "-"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }
quartiles() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) {print "-"; exit} printf "%.2f-%.2f", a[int((NR+3)/4)], a[int((3*NR+3)/4)]}'; }
now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }
run_us() {  # run_us SERVICE SECRET: wall time of one pamtester process, in microseconds
  local start end
  start=$(now_us)
  pamtester "$1" "$USER_NAME" authenticate <<<"$2" >"$WORK/pamtester.out" 2>&1 \
    || { echo "pamtester $1 failed:" >&2; cat "$WORK/pamtester.out" >&2; exit 1; }
  end=$(now_us)
  echo $(( end - start ))
}
ms() { printf '%s\n' "$@" | median | awk '{printf "%.2f", $1 / 1000}'; }

store() {  # store NAME COST-LINES KEYRING(yes|no): a store with the user enrolled, and its services
  local dir=$WORK/$1
  mkdir -m 700 "$dir" "$dir.state"
  printf '%skeyring = %s\n' "$2" "$3" > "$dir/puff.conf"; chmod 600 "$dir/puff.conf"
  echo "$PASSCODE" | "$ENROLL" passcode --user "$USER_NAME" --stdin --dir "$dir" --state-dir "$dir.state" --conf "$dir/puff.conf" >/dev/null
  local line="$MODULE dir=$dir state_dir=$dir.state conf=$dir/puff.conf nodelay"
  echo "auth required $line" > "/etc/pam.d/puff-bench-kr-$1"
  printf '%s\n' "auth [success=2 default=ignore] $line nullok_prompt" \
    "auth [success=1 default=ignore] pam_unix.so nullok try_first_pass" "auth requisite pam_deny.so" \
    "auth required pam_permit.so" "auth optional $line authsucc" > "/etc/pam.d/puff-bench-kr-$1-else"
  # One password login: with keyring = yes it keeps the copy the passcode logins then open.
  run_us "puff-bench-kr-$1-else" "$PASSWORD" >/dev/null
}

pair() {  # pair LABEL OFF-SERVICE ON-SERVICE SECRET
  local off=() on=() ratios=() a b
  for _ in $(seq "$RUNS"); do
    a=$(run_us "$2" "$4"); b=$(run_us "$3" "$4")
    off+=("$a") on+=("$b") ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN {print b / a}')")
  done
  local deltas=()
  for i in "${!off[@]}"; do deltas+=("$(( on[i] - off[i] ))"); done
  printf '  %-44s off %7s ms  on %7s ms  +%6s ms a login (median of pair differences); on/off %sx (quartiles %s)\n' \
    "$1" "$(ms "${off[@]}")" "$(ms "${on[@]}")" "$(ms "${deltas[@]}")" \
    "$(printf '%s\n' "${ratios[@]}" | median | awk '{printf "%.2f", $1}')" "$(printf '%s\n' "${ratios[@]}" | quartiles)"
}

echo "The login keyring (keyring = yes) against keyring off (pamtester, $RUNS alternating pairs each, $(nproc) cores):"
for cost in min default; do
  if [ "$cost" = min ]; then lines=$'kdf_ops = 1\nkdf_mem_kib = 8\n'; label="minimum cost (t=1, 8 KiB)"
  else lines=""; label="default cost (t=1, 64 MiB)"; fi
  store "$cost-off" "$lines" no
  store "$cost-on" "$lines" yes
  [ -s "$WORK/$cost-on/keyring/$USER_NAME" ] || { echo "no copy was kept in $WORK/$cost-on" >&2; exit 1; }
  pair "release: passcode login, $label" "puff-bench-kr-$cost-off" "puff-bench-kr-$cost-on" "$PASSCODE"
  pair "capture: password at Puff's prompt, $label" "puff-bench-kr-$cost-off-else" "puff-bench-kr-$cost-on-else" "$PASSWORD"
done
