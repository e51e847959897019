#!/usr/bin/env bash
# make killsweep: kill Puff with SIGKILL at every point where it touches its files, then
# check that nothing is torn, lost or rolled back. Needs root and strace.
#
# Phase 1, strace: for each operation and each of openat, flock, write, pwrite64, fsync,
# fdatasync, linkat and renameat, `strace -f -e inject=SYSCALL:signal=SIGKILL:when=K` for K = 1 up to one past the
# number of such calls the operation makes (the dynamic loader's openat calls included),
# counted first with `strace -f -c`. The K values are taken from the last call backwards,
# round-robin over (operation, syscall), so a bound still reaches the module's own calls.
# Phase 2: the operation runs untraced and gets `kill -9` after a random delay.
#
# Operations: a wrong passcode, the right passcode and the right gesture through libpam
# (puff-pam-harness, pam_start_confdir), and `puff-enroll passcode --stdin` and
# `puff-enroll gesture --stdin` changing the record.
#
# After every run: the counter file decodes (by hand and through `puff-enroll status
# --json`), the record is the old one byte for byte or the new one (the new secret works,
# the replaced one does not, the other factor still does), the picture matches it (an old
# record beside the new picture is a violation: the enrollment stages the picture and moves
# it into place only after the record is saved, and the next login finishes that), and the
# counter equals the last counter write that completed before the kill (strace's log), so
# it never goes down except by a success, and an attempt killed after its count was written
# stays counted. Untraced kills check failures ∈ {before, before+1} (or 0 after a success).
#
#   KILL_ITERATIONS  total runs (default 1000); a quarter at least go to phase 2
#   PUFF_SWEEP_TPM=1 the same with the host key sealed in swtpm (scripts/sweep-common.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
iterations=${KILL_ITERATIONS:-1000}
source scripts/sweep-common.sh

scenarios=(auth-wrong auth-right auth-gesture enroll-passcode enroll-gesture)
syscalls=(openat flock write pwrite64 fsync fdatasync linkat renameat)
# Tpm mode (PUFF_SWEEP_TPM=1): also the helper's and puff-enroll's talk to the TPM.
[ "$tpm_mode" = 1 ] && syscalls+=(connect sendto)
declare -A calls runs killed outcomes
violations=0
counted_then_killed=0
started=$SECONDS

violation() {
    violations=$((violations + 1))
    echo "VIOLATION: $*"
}

# The failure count of the last counter that was committed in strace log $1 (strace -y), or
# $2 if none: a counter written in place (a pwrite64 of "puff-tally …" into the counter file)
# counts once the call returned whole; a new file (a write of "puff-tally …", the first write
# or one replacing an older version's file) once its rename completed.
last_counter_write() {
    local value
    value=$(awk -v counter="<$counter>" '
        /pwrite64\(/ && index($0, counter) && /"puff-tally [0-9]+\\nfailures [0-9]+\\n/ && / = 512$/ {
            line = $0; sub(/.*\\nfailures /, "", line); sub(/\\n.*/, "", line); committed = line; next }
        /[^p]write\([0-9]+.*"puff-tally [0-9]+\\nfailures [0-9]+\\n/ {
            line = $0; sub(/.*\\nfailures /, "", line); sub(/\\n.*/, "", line); pending = line; next }
        /renameat2?\(.*= 0$/ { if (pending != "") committed = pending; pending = ""; next }
        END { print committed }' "$1")
    echo "${value:-$2}"
}

# Checks the files after one interrupted run of scenario $1 ($2 describes the run): the
# counter decodes, the picture is intact, the record is the old or the new one.
check_store() {
    local scenario=$1 what=$2
    counter_file_ok || violation "$what: counter file does not decode: $(tr -d '\0' <"$counter" | head -c 200 | tr '\n' ' ')"
    local state
    state=$(record_state "$scenario")
    case $state in
        BAD*) violation "$what: $state" ;;
        mixed-picture) violation "$what: old record beside the new picture" ;;
        *) outcomes[$scenario.$state]=$(( ${outcomes[$scenario.$state]:-0} + 1 )) ;;
    esac
}

# Phase 1 plan: count each syscall per operation with an untraced-by-injection run.
for scenario in "${scenarios[@]}"; do
    run_operation "$scenario" strace -f -qq -c -o "$work/count"
    for sc in "${syscalls[@]}"; do
        n=$(awk -v sc="$sc" '$NF == sc { print $4 }' "$work/count")
        calls[$scenario.$sc]=${n:-0}
    done
    # A real change must be undone before the next count.
    record_state "$scenario" >/dev/null
done
plan=()
max_k=0
for key in "${!calls[@]}"; do [ "${calls[$key]}" -gt "$max_k" ] && max_k=${calls[$key]}; done
for ((offset = 0; offset <= max_k; offset++)); do
    for scenario in "${scenarios[@]}"; do
        for sc in "${syscalls[@]}"; do
            n=${calls[$scenario.$sc]}
            k=$((n + 1 - offset))
            [ "$k" -ge 1 ] && plan+=("$scenario $sc $k")
        done
    done
done
strace_budget=$((iterations - iterations / 4))
[ "${#plan[@]}" -lt "$strace_budget" ] && strace_budget=${#plan[@]}
random_budget=$((iterations - strace_budget))

echo "syscalls per operation (strace -f -c):"
for scenario in "${scenarios[@]}"; do
    line="  $scenario:"
    for sc in "${syscalls[@]}"; do line+=" $sc=${calls[$scenario.$sc]}"; done
    echo "$line"
done
echo "phase 1: ${strace_budget} of ${#plan[@]} strace kill points; phase 2: ${random_budget} random kill -9"

for ((i = 0; i < strace_budget; i++)); do
    read -r scenario sc k <<<"${plan[$i]}"
    before=$(failures)
    run_operation "$scenario" strace -f -qq -y -s 64 -o "$work/log" -e trace=write,pwrite64,renameat,renameat2,"$sc" \
        -e inject="$sc":signal=SIGKILL:when="$k"
    status=$?
    runs[$scenario.$sc]=$(( ${runs[$scenario.$sc]:-0} + 1 ))
    [ "$status" = 137 ] && killed[$scenario.$sc]=$(( ${killed[$scenario.$sc]:-0} + 1 ))
    what="$scenario $sc when=$k (exit $status)"
    # The counter before the record check: the check's own logins move it.
    after=$(failures)
    if [ "${scenario#auth}" != "$scenario" ]; then
        expected=$(last_counter_write "$work/log" "$before")
    else
        expected=$before
    fi
    if [ "$status" = 137 ] && [ "$expected" = $((before + 1)) ]; then counted_then_killed=$((counted_then_killed + 1)); fi
    [ "$after" = "$expected" ] || violation "$what: failures $before -> $after, expected $expected (reproduce: $(operation "$scenario") under strace -f -e inject=$sc:signal=SIGKILL:when=$k)"
    check_store "$scenario" "$what"
done

# Phase 2: untraced runs killed after a random delay within the operation's own duration
# (measured here, untraced).
declare -A duration
for scenario in "${scenarios[@]}"; do
    spent=0
    for _ in 1 2 3; do
        t0=${EPOCHREALTIME/./}
        run_operation "$scenario"
        spent=$((spent + ${EPOCHREALTIME/./} - t0))
        record_state "$scenario" >/dev/null
    done
    duration[$scenario]=$((spent / 3))
done
echo "untraced durations (µs): $(for s in "${scenarios[@]}"; do printf '%s=%s ' "$s" "${duration[$s]}"; done)"
for ((i = 0; i < random_budget; i++)); do
    scenario=${scenarios[$((RANDOM % ${#scenarios[@]}))]}
    delay=$(( (RANDOM * 32768 + RANDOM) % (duration[$scenario] + 1) ))
    before=$(failures)
    input=/dev/null
    [ -f "$work/input.$scenario" ] && input=$work/input.$scenario
    read -r -a command <<<"$(operation "$scenario")"
    [ "$scenario" = auth-gesture ] && command+=("$old_gesture")
    "${command[@]}" <"$input" >/dev/null 2>&1 &
    pid=$!
    sleep "$(printf '%d.%06d' $((delay / 1000000)) $((delay % 1000000)))"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    status=$?
    after_run
    runs[$scenario.kill-9]=$(( ${runs[$scenario.kill-9]:-0} + 1 ))
    [ "$status" = 137 ] && killed[$scenario.kill-9]=$(( ${killed[$scenario.kill-9]:-0} + 1 ))
    after=$(failures)
    what="$scenario kill -9 after ${delay} µs (exit $status)"
    case $scenario in
        auth-wrong) accepted="$before $((before + 1))" ;;
        auth-right | auth-gesture) accepted="0 $before $((before + 1))" ;;
        *) accepted="$before" ;;
    esac
    [[ " $accepted " == *" $after "* ]] || violation "$what: failures $before -> $after, accepted: $accepted"
    check_store "$scenario" "$what"
done

total=$((strace_budget + random_budget))
echo
printf '%-16s %-9s %6s %7s\n' operation syscall runs killed
for scenario in "${scenarios[@]}"; do
    for sc in "${syscalls[@]}" kill-9; do
        [ -n "${runs[$scenario.$sc]:-}" ] && printf '%-16s %-9s %6d %7d\n' "$scenario" "$sc" "${runs[$scenario.$sc]}" "${killed[$scenario.$sc]:-0}"
    done
done
echo "records afterwards:"
for key in $(printf '%s\n' "${!outcomes[@]}" | sort); do echo "  $key: ${outcomes[$key]}"; done
echo "attempts killed after their count was written (still counted): $counted_then_killed"
echo "stale temp files left by killed replaces (never read): $(stale_temps)"
echo "killsweep: $total runs in $((SECONDS - started)) s, $violations violations"
[ "$violations" = 0 ]
