#!/usr/bin/env bash
# make faults: make one system call of Puff fail (ENOSPC, EIO, EACCES) and check that the
# result is a failure, nothing is lost, and the next normal login works. Needs root and strace.
#
# For each operation (a wrong passcode, the right passcode and the right gesture through
# libpam; `puff-enroll passcode --stdin` and `puff-enroll gesture --stdin` changing the
# record) and each of openat, read, pread64, write, pwrite64, fsync, fdatasync, linkat,
# renameat and flock:
# `strace -f -e inject=SYSCALL:error=ERRNO:when=K` for every K from the first call after
# the program's libraries are loaded (after pam_puff.so for the harness) to the last call.
# The runs go from the last call backwards, round-robin over (operation, syscall, errno),
# so a bound still covers every combination and the module's own calls first.
#
# After every run:
#  - a fault on a Puff file (under the store or state directory; strace -y names the file)
#    must not end in PAM_SUCCESS or PAM_IGNORE (a wrong passcode never may), and
#    puff-enroll must exit non-zero;
#  - the counter decodes and did not go down (except to 0 after the right secret);
#  - the record is the old one byte for byte, or for an enrollment the new one (new secret
#    works, replaced one does not, the other factor does), with its picture (an old record
#    beside the new picture is a violation);
#  - the next normal login with the right passcode succeeds.
#
#   FAULT_ITERATIONS  bound on the number of runs (default: all of them)
#   PUFF_SWEEP_TPM=1  the same with the host key sealed in swtpm (scripts/sweep-common.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/sweep-common.sh

scenarios=(auth-wrong auth-right auth-gesture enroll-passcode enroll-gesture)
syscalls=(openat read pread64 write pwrite64 fsync fdatasync linkat renameat flock)
# Tpm mode (PUFF_SWEEP_TPM=1): also the talk to the TPM, which holds the key: a fault there
# counts as one on a Puff file (it must not end in a success either).
# -yy names a socket's addresses ("TCP:[127.0.0.1:...]"), so a fault there is recognised.
names=-y
[ "$tpm_mode" = 1 ] && syscalls+=(connect sendto recvfrom) && names=-yy
errnos=(ENOSPC EIO EACCES)
declare -A first last runs results harmless
violations=0
started=$SECONDS

violation() {
    violations=$((violations + 1))
    echo "VIOLATION: $*"
}

# Where each operation's own work starts: after the harness opens pam_puff.so, or after
# puff-enroll's last shared library is opened.
trace_list=$(IFS=,; echo "${syscalls[*]}")
for scenario in "${scenarios[@]}"; do
    run_operation "$scenario" strace -f -qq "$names" -s 0 -o "$work/count" -e trace="$trace_list"
    record_state "$scenario" >/dev/null
    case $scenario in
        auth-*) marker='pam_puff\.so' ;;
        *) marker='\.so(\.[0-9]+)*", ' ;;
    esac
    marker_line=$(grep -nE "openat\(.*$marker" "$work/count" | tail -n 1 | cut -d: -f1)
    for sc in "${syscalls[@]}"; do
        read -r before_marker total < <(awk -v sc="$sc" -v m="${marker_line:-0}" '
            { name = $2; sub(/\(.*/, "", name) }
            name == sc { n++; if (NR <= m) b = n }
            END { print b + 0, n + 0 }' "$work/count")
        first[$scenario.$sc]=$((before_marker + 1))
        last[$scenario.$sc]=$total
    done
done

plan=()
for ((offset = 0; ; offset++)); do
    added=0
    for scenario in "${scenarios[@]}"; do
        for sc in "${syscalls[@]}"; do
            k=$((last[$scenario.$sc] - offset))
            [ "$k" -ge "${first[$scenario.$sc]}" ] || continue
            for e in "${errnos[@]}"; do plan+=("$scenario $sc $e $k"); added=1; done
        done
    done
    [ "$added" = 1 ] || break
done
budget=${FAULT_ITERATIONS:-${#plan[@]}}
[ "$budget" -gt "${#plan[@]}" ] && budget=${#plan[@]}

echo "calls after loading, per operation (first..last K swept):"
for scenario in "${scenarios[@]}"; do
    line="  $scenario:"
    for sc in "${syscalls[@]}"; do line+=" $sc=${first[$scenario.$sc]}..${last[$scenario.$sc]}"; done
    echo "$line"
done
echo "running $budget of ${#plan[@]} fault injections"

for ((i = 0; i < budget; i++)); do
    read -r scenario sc e k <<<"${plan[$i]}"
    before=$(failures)
    run_operation "$scenario" strace -f -qq "$names" -s 0 -o "$work/log" -e trace="$sc" -e inject="$sc":error="$e":when="$k"
    status=$?
    key="$scenario $sc $e"
    runs[$key]=$(( ${runs[$key]:-0} + 1 ))
    injected=$(grep -m 1 'INJECTED' "$work/log")
    on_store=0
    [[ $injected == *"$work/etc"* || $injected == *"$work/state"* ]] && on_store=1
    [[ "$tpm_mode" = 1 && $injected == *"TCP:"* ]] && on_store=1
    what="$scenario $sc=$e when=$k (exit $status${injected:+, on ${injected%%,*})})"
    reproduce="reproduce: strace -f -y -e inject=$sc:error=$e:when=$k $(operation "$scenario")"
    # The harness exits with the PAM code; puff-enroll with 0 on success.
    tag="exit$status"
    [ -n "$injected" ] || tag="not-reached"
    [ "$on_store" = 1 ] && tag="store:$tag" || tag="other:$tag"
    results[$key]="${results[$key]:-} $tag"
    if [ "$on_store" = 0 ] && [ -n "$injected" ] && [ "$status" = 0 ]; then
        # Which call outside the store could fail without changing the outcome.
        # "read(3</etc/x>" or "openat(AT_FDCWD</cwd>, "/etc/x"": the call and its file.
        target=$(sed -E 's/^[0-9]+ +//; s/^([a-z0-9]+\([^,]*(, "[^"]*")?).*/\1/; s|/proc/[0-9]+/|/proc/PID/|' <<<"$injected")
        harmless[$target]=1
    fi
    case $scenario in
        auth-wrong)
            if [ "$status" = 0 ] || [ "$status" = 25 ]; then violation "$what: wrong passcode got PAM code $status; $reproduce"; fi ;;
        auth-*)
            if [ "$on_store" = 1 ] && { [ "$status" = 0 ] || [ "$status" = 25 ]; }; then
                violation "$what: PAM code $status despite a fault on a Puff file; $reproduce"
            fi ;;
        enroll-*)
            if [ "$on_store" = 1 ] && [ "$status" = 0 ]; then violation "$what: puff-enroll reported success; $reproduce"; fi ;;
    esac
    counter_file_ok || violation "$what: counter file does not decode; $reproduce"
    after=$(failures)
    case $scenario in
        auth-wrong) accepted="$before $((before + 1))" ;;
        auth-*) accepted="0 $before $((before + 1))" ;;
        *) accepted="$before" ;;
    esac
    [[ " $accepted " == *" $after "* ]] || violation "$what: failures $before -> $after, accepted: $accepted; $reproduce"
    state=$(record_state "$scenario")
    case $state in
        BAD*) violation "$what: $state; $reproduce" ;;
        new) [ "$status" != 0 ] && results[$key]+="(new)" ;;
        mixed-picture) violation "$what: old record beside the new picture; $reproduce" ;;
    esac
    next=$(login_code "$old_passcode")
    [ "$next" = 0 ] || violation "$what: the next normal login got PAM code $next; $reproduce"
done

echo
echo "results per operation, syscall and errno (store: the fault hit a Puff file; exitN: the"
echo "harness's PAM code or puff-enroll's status; (new): the change took although reported failed):"
for key in $(printf '%s\n' "${!results[@]}" | sort | tr ' ' '|'); do
    k=${key//|/ }
    printf '  %-32s %3d runs:' "$k" "${runs[$k]}"
    printf '%s\n' ${results[$k]} | sort | uniq -c | awk '{ printf " %s×%s", $1, $2 } END { print "" }'
done
echo "faults outside Puff's files after which the operation still succeeded:"
for target in "${!harmless[@]}"; do echo "  $target"; done | sort
echo "stale temp files left by failed replaces (never read): $(stale_temps)"
echo "faults: $budget runs in $((SECONDS - started)) s, $violations violations"
[ "$violations" = 0 ]
