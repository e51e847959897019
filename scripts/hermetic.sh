#!/usr/bin/env bash
# Runs a command (the test suite, a benchmark, a campaign) so that it cannot change the machine.
#
#   scripts/hermetic.sh [--label NAME] [--time-limit SECONDS] -- COMMAND [ARGS...]
#
# 1. Removes what an interrupted run of an older version of the suite left on the machine:
#    its test accounts (puff-it-*, puff-rc-*, puff-bench, puff-race*, puff-sweep*, ...) and
#    its temporary PAM services (/etc/pam.d/sshd-puff-*, puff-bench-*, puff-vg-*).
# 2. Records the machine's state: account and group names, every /etc/pam.d entry (name, mode,
#    owner, content), every /etc/shadow line, and the trees under /etc/puff and /var/lib/puff.
# 3. Runs COMMAND in a private mount namespace in which /etc, /var/lib, /var/log and /usr/local
#    are copy-on-write overlays of the machine's own (upper layers in a temp directory), with no
#    /etc/puff, /var/lib/puff or installed Puff tools and services (make install's): accounts, passwords, PAM services and stores that COMMAND
#    makes exist only there and vanish with the namespace. PUFF_HERMETIC=1 tells the suite
#    it runs inside (TestUsers refuses to add an account otherwise).
# 4. Kills what COMMAND left running in the namespace (a daemon a test failed to stop), and
#    with --time-limit, a COMMAND still running after SECONDS: it prints what was running
#    (the process tree) and fails with exit 124, so a hang is a report, not a silent stall.
# 5. Records the state again and fails (exit 70) when anything differs, printing the difference.
# 6. Gives COMMAND a temp directory of its own (PUFF_TEST_TMPDIR, mode 1777 like /tmp, where the
#    suite makes its temp directories) and fails (exit 70) when COMMAND left anything in it: a
#    run leaves no /tmp/puff-* behind. Only this run's directory is looked at, so other suites
#    running at the same time on the machine cannot make this one fail.
#
# The namespace is entered with unshare(1); the overlays need root and overlayfs.
set -euo pipefail

label=hermetic
time_limit=0
while [ $# -gt 0 ]; do
    case "$1" in
        --label) label=$2; shift 2 ;;
        --time-limit) time_limit=$2; shift 2 ;;
        --) shift; break ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--label NAME] [--time-limit SECONDS] -- COMMAND [ARGS...]" >&2; exit 64; }
case "$time_limit" in ''|*[!0-9]*) echo "$0: --time-limit takes whole seconds" >&2; exit 64 ;; esac
[ "$(id -u)" = 0 ] || { echo "$0: must run as root (it mounts overlays in a private namespace)" >&2; exit 77; }

if [ "${PUFF_HERMETIC_INSIDE:-}" = 1 ]; then
    # Already inside (make test calling a campaign, say): nothing more to isolate.
    exec "$@"
fi

# Account names the suite, the benchmarks and the campaigns use; puff-demo is the demo's
# documented account and stays.
test_account='^(puff-it-[a-z0-9-]+|puff-rc-[a-z0-9-]+|puff-bench|puff-race[a-z0-9-]*|puff-sweep[a-z0-9-]*|puff-timing[a-z0-9-]*|puff-vg[a-z0-9-]*|puff-tsan[a-z0-9-]*|puff-lock-[a-z0-9-]+|puff-deb-[a-z0-9-]+)$'

remove_leftovers() {
    local name removed=""
    for name in $(cut -d: -f1 /etc/passwd | grep -E "$test_account" || true); do
        userdel "$name" >/dev/null 2>&1 || true
        removed="$removed $name"
    done
    for name in $(cut -d: -f1 /etc/group | grep -E "$test_account" || true); do
        groupdel "$name" >/dev/null 2>&1 || true
    done
    local service dir
    for service in /etc/pam.d/sshd-puff-* /etc/pam.d/puff-bench-* /etc/pam.d/puff-vg-*; do
        [ -e "$service" ] || [ -L "$service" ] || continue
        rm -f "$service"
        removed="$removed $service"
    done
    # Older versions of the suite made empty /etc/puff and /var/lib/puff mount points and left
    # them; they go when empty and no Puff is installed (make install and the package make them).
    if ! ls /usr/lib/*/security/pam_puff.so /usr/local/sbin/puff-enroll /usr/sbin/puff-enroll >/dev/null 2>&1; then
        for dir in /etc/puff /var/lib/puff; do
            if [ -d "$dir" ] && [ ! -L "$dir" ] && rmdir "$dir" 2>/dev/null; then removed="$removed $dir"; fi
        done
    fi
    if [ -n "$removed" ]; then
        echo "$label: removed what an earlier interrupted run left:$removed"
    fi
}

# The state the guard compares, on stdout. Shadow lines carry hashes; the snapshot lives in a
# root-only temp directory and is removed at the end.
snapshot() {
    echo "# accounts"; cut -d: -f1 /etc/passwd | sort
    echo "# groups"; cut -d: -f1 /etc/group | sort
    echo "# shadow"; sort /etc/shadow
    echo "# /etc/pam.d"
    (cd /etc/pam.d && find . -mindepth 1 -printf '%p %y %m %u:%g %l\n' | sort)
    (cd /etc/pam.d && find . -mindepth 1 -type f -exec sha256sum {} + | sort -k2)
    local tree
    for tree in /etc/puff /var/lib/puff; do
        echo "# $tree"
        if [ -e "$tree" ] || [ -L "$tree" ]; then
            find "$tree" -printf '%p %y %m %u:%g %s %l\n' | sort
            find "$tree" -type f -exec sha256sum {} + | sort -k2
        else
            echo "(absent)"
        fi
    done
}

work=$(mktemp -d "/tmp/puff-$label-XXXXXX")
chmod 700 "$work"
run_tmp=$(mktemp -d "/tmp/puff-$label-tmp-XXXXXX")
chmod 1777 "$run_tmp"
cleanup() {
    # The namespace is gone once its last process exited; a straggler (a daemon a test
    # failed to stop) is killed so the upper layers can be removed.
    rm -rf "$work" "$run_tmp" 2>/dev/null || true
}
trap cleanup EXIT

remove_leftovers
snapshot > "$work/before"

mkdir -p "$work/etc/upper" "$work/etc/work" "$work/lib/upper" "$work/lib/work" "$work/log/upper" "$work/log/work" \
    "$work/local/upper" "$work/local/work"
inner='
set -e
w=$1; shift
mount -t overlay puff-etc -o "lowerdir=/etc,upperdir=$w/etc/upper,workdir=$w/etc/work" /etc
mount -t overlay puff-lib -o "lowerdir=/var/lib,upperdir=$w/lib/upper,workdir=$w/lib/work" /var/lib
mount -t overlay puff-log -o "lowerdir=/var/log,upperdir=$w/log/upper,workdir=$w/log/work" /var/log
mount -t overlay puff-local -o "lowerdir=/usr/local,upperdir=$w/local/upper,workdir=$w/local/work" /usr/local
# Nothing an installation (make install) left may be seen by the command: no store, no
# installed tools or helper, no installed Puff services.
rm -rf /etc/puff /var/lib/puff
rm -f /usr/local/sbin/puff-* /usr/local/bin/puff-* /etc/pam.d/puff-enroll /etc/pam.d/puff-lock /etc/pam.d/puff-pad
export PUFF_HERMETIC=1 PUFF_HERMETIC_INSIDE=1 PUFF_TEST_TMPDIR=$1
shift
exec "$@"
'
# Every process of the namespace: those in its mount namespace and their descendants (a test
# may enter a namespace of its own below it).
namespace_processes() {
    local ns=$1 pid
    local -A seen=()
    for pid in $(ps -e -o pid=); do
        [ "$(readlink "/proc/$pid/ns/mnt" 2>/dev/null)" = "$ns" ] && seen[$pid]=1
    done
    local grew=1
    while [ "$grew" = 1 ]; do
        grew=0
        while read -r pid ppid; do
            if [ -n "${seen[$ppid]:-}" ] && [ -z "${seen[$pid]:-}" ]; then seen[$pid]=1; grew=1; fi
        done < <(ps -e -o pid=,ppid=)
    done
    # Zombies are already gone (their parent reaps them).
    for pid in "${!seen[@]}"; do
        case "$(ps -o stat= -p "$pid" 2>/dev/null)" in Z*|'') ;; *) echo "$pid" ;; esac
    done | tr '\n' ' ' | sed 's/ $//'
}

status=0
unshare --mount --propagation private --kill-child /bin/bash -c "$inner" hermetic "$work" "$run_tmp" "$@" &
runner=$!
# The namespace, named by the first process in it (unshare's child).
ns=
for _ in $(seq 100); do
    # (ps finds nothing until unshare has forked: not an error.)
    init=$(ps -o pid= --ppid "$runner" | head -n 1 | tr -d ' ' || true)
    if [ -n "$init" ]; then ns=$(readlink "/proc/$init/ns/mnt" 2>/dev/null || true); fi
    [ -z "$ns" ] || [ "$ns" = "$(readlink /proc/self/ns/mnt)" ] || break
    ns=
    kill -0 "$runner" 2>/dev/null || break
    sleep 0.05
done
watchdog=
if [ "$time_limit" -gt 0 ]; then
    (
        # Polls each second, so it never outlives the run by more than that.
        for _ in $(seq "$time_limit"); do
            sleep 1
            kill -0 "$runner" 2>/dev/null || exit 0
        done
        echo "$label: FAIL: still running after $time_limit s; killed. What was running:" >&2
        pids=$([ -z "$ns" ] || namespace_processes "$ns")
        [ -z "$pids" ] || ps -o pid,ppid,stat,etime,wchan:24,args --forest -p "${pids// /,}" | cut -c 1-240 >&2 || true
        touch "$work/timed-out"
        [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
        kill -KILL "$runner" 2>/dev/null || true
    ) &
    watchdog=$!
fi
wait "$runner" || status=$?
if [ -n "$watchdog" ]; then
    kill "$watchdog" 2>/dev/null || true
    wait "$watchdog" 2>/dev/null || true
fi
[ ! -e "$work/timed-out" ] || status=124
# What outlived the command in its namespace.
stragglers=$([ -z "$ns" ] || namespace_processes "$ns")
if [ -n "$stragglers" ]; then
    echo "$label: killing what was left running in the namespace:" >&2
    ps -o pid,args -p "${stragglers// /,}" | cut -c 1-240 >&2 || true
    kill -KILL $stragglers 2>/dev/null || true
fi

snapshot > "$work/after"
if ! diff -u "$work/before" "$work/after" > "$work/diff"; then
    echo "$label: FAIL: the machine's state changed during the run (accounts, /etc/shadow, /etc/pam.d, /etc/puff or /var/lib/puff):" >&2
    # Shadow lines are shown by account name only: no hash reaches the log.
    sed -E 's/^([-+][^:# ]+):.*/\1:<shadow entry>/' "$work/diff" | grep -E '^[-+][^-+]' >&2 || true
    [ "$status" != 0 ] || status=70
else
    echo "$label: machine state unchanged (accounts, /etc/shadow, /etc/pam.d, /etc/puff, /var/lib/puff)"
fi
left=$(cd "$run_tmp" && find . -mindepth 1 -maxdepth 1 -printf '%f\n' | sort)
if [ -n "$left" ]; then
    echo "$label: FAIL: the run left these in its temp directory (PUFF_TEST_TMPDIR; /tmp without it):" >&2
    echo "$left" | sed 's/^/    /' >&2
    [ "$status" != 0 ] || status=70
else
    echo "$label: no temp directory left behind"
fi
exit "$status"
