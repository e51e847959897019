#!/usr/bin/env bash
# The file system calls of one login through the module, per scenario: a right passcode, a
# right gesture and a wrong passcode, each one pam_authenticate of puff-pam-harness (real
# libpam, pam_start_confdir) traced with strace from the module's load to the end. Figures,
# not a test: `make login-syscalls` (through scripts/hermetic.sh: the account exists only in
# a private /etc). VERBOSE=1 lists the calls.
#
# Columns: openat/open calls (shared libraries, ld.so.cache and libpam's own reads of its
# service files left out), how many of them start a walk at "/", fsync/fdatasync, renames
# and links; then every system call of the whole harness process (strace -f -c: its own
# start-up and libpam's included, so only differences between modules mean anything).
#
#   PUFF_MODULE           the module (default build/pam_puff.so)
#   PUFF_BASELINE_MODULE  another build of it, measured beside it on the same store (e.g.
#                         main's, to see what a change costs a file-mode login)
#   PUFF_BIN              where puff-pam-harness and puff-enroll are (default: swift build --show-bin-path)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${PUFF_HERMETIC:-}" = 1 ] || { echo "login-syscalls.sh: run it through scripts/hermetic.sh (it adds an account)" >&2; exit 64; }
module=${PUFF_MODULE:-$PWD/build/pam_puff.so}
bin=${PUFF_BIN:-$(swift build --show-bin-path)}
harness=$bin/puff-pam-harness
enroll=$bin/puff-enroll
picture=$PWD/Tests/Fixtures/picture-400x300.png
user=puff-syscalls
passcode=604917
gesture="puff-gesture:1:400x300:p 50,50 250,50;t 300,200;t 100,250"

work=$(mktemp -d /tmp/puff-syscalls-XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"
id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
mkdir -m 0700 "$work/etc" "$work/state"
mkdir -m 0755 "$work/pam.d"
printf 'kdf_ops = 1\nkdf_mem_kib = 8\n' >"$work/etc/puff.conf"
chmod 0600 "$work/etc/puff.conf"
store=(--dir "$work/etc" --state-dir "$work/state" --conf "$work/etc/puff.conf")
printf '%s\n' "$passcode" | "$enroll" passcode --user "$user" --type digits6 --stdin "${store[@]}" >/dev/null
printf '%s\n%s\n' "$gesture" "$gesture" | "$enroll" gesture --user "$user" --picture "$picture" --stdin "${store[@]}" >/dev/null
service() {  # service NAME MODULE: a PAM service with MODULE on the store
    echo "auth required $2 dir=$work/etc state_dir=$work/state conf=$work/etc/puff.conf nodelay deny=1000000" \
        >"$work/pam.d/$1"
}
service puff-syscalls "$module"

row() {  # row LABEL REPLY [SERVICE MODULE]
    local trace=$work/trace service=${3:-puff-syscalls} module=${4:-$module}
    strace -f -qq -e trace=openat,open,fsync,fdatasync,rename,renameat,renameat2,link,linkat -o "$trace" \
        "$harness" --confdir "$work/pam.d" --service "$service" --user "$user" --quiet --reply "$2" >/dev/null 2>&1 || true
    local all
    strace -f -c -o "$work/count" \
        "$harness" --confdir "$work/pam.d" --service "$service" --user "$user" --quiet --reply "$2" >/dev/null 2>&1 || true
    all=$(awk '$NF == "total" {print $4}' "$work/count")
    local calls
    calls=$(awk -v module="\"$module\"" 'index($0, module) {seen = 1; next}
        seen && !/\.so(\.[0-9]+)*"|ld\.so\.cache|"\/proc\/filesystems"/ && !index($0, "/pam.d")' "$trace")
    local opens walks syncs renames
    opens=$(grep -cE ' (openat|open)\(' <<<"$calls" || true)
    walks=$(grep -cE '"/", O_' <<<"$calls" || true)
    syncs=$(grep -cE ' (fsync|fdatasync)\(' <<<"$calls" || true)
    renames=$(grep -cE ' (rename|renameat2?|link|linkat)\(' <<<"$calls" || true)
    printf '  %-30s %7s %9s %7s %15s %9s\n' "$1" "$opens" "$walks" "$syncs" "$renames" "$all"
    if [ -n "${VERBOSE:-}" ]; then sed 's/^[0-9]* */      /' <<<"$calls"; fi
}
echo "One pam_authenticate through $(basename "$module") (minimum KDF cost), file system calls after its load:"
printf '  %-30s %7s %9s %7s %15s %9s\n' "scenario" "openat" "from \"/\"" "fsync" "rename/linkat" "all calls"
row "right passcode" "$passcode"
row "right gesture" "$gesture"
row "wrong passcode" 111333
if [ -n "${PUFF_BASELINE_MODULE:-}" ]; then
    service puff-syscalls-baseline "$PUFF_BASELINE_MODULE"
    echo "The same through the baseline $PUFF_BASELINE_MODULE:"
    row "right passcode" "$passcode" puff-syscalls-baseline "$PUFF_BASELINE_MODULE"
    row "right gesture" "$gesture" puff-syscalls-baseline "$PUFF_BASELINE_MODULE"
    row "wrong passcode" 111333 puff-syscalls-baseline "$PUFF_BASELINE_MODULE"
fi
