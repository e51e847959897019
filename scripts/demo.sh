#!/usr/bin/env bash
# A real demo of Puff through real libpam, in a throwaway directory: nothing under /etc,
# /var/lib or /etc/pam.d is touched. It creates one demo account (puff-demo) if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
MODULE=$PWD/build/pam_puff.so
# `make demo` builds these (PUFF_BIN: the debug build's directory).
BIN=${PUFF_BIN:-$(swift build --show-bin-path)}
ENROLL=$BIN/puff-enroll
HARNESS=$BIN/puff-pam-harness
for tool in "$MODULE" "$ENROLL" "$HARNESS"; do
    [ -e "$tool" ] || { echo "$0: $tool is missing: run make demo" >&2; exit 1; }
done
USER_NAME=puff-demo
id "$USER_NAME" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER_NAME"

WORK=$(mktemp -d /tmp/puff-demo-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"
mkdir -m 700 "$WORK/etc" "$WORK/state" && mkdir -m 755 "$WORK/pam.d"
printf 'deny = 3\nunlock_time = 10m\n' > "$WORK/etc/puff.conf" && chmod 600 "$WORK/etc/puff.conf"
STORE=(--dir "$WORK/etc" --state-dir "$WORK/state" --conf "$WORK/etc/puff.conf")
echo "auth required $MODULE dir=$WORK/etc state_dir=$WORK/state conf=$WORK/etc/puff.conf nodelay" > "$WORK/pam.d/puff-demo"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
login() {  # login PASSCODE: one pam_authenticate through libpam with the demo service
  "$HARNESS" --confdir "$WORK/pam.d" --service puff-demo --user "$USER_NAME" --reply "$1" || true
}

step "Enroll a 6-digit passcode for $USER_NAME (a weak one is refused first)"
echo 123456 | "$ENROLL" passcode --user "$USER_NAME" --type digits6 --stdin "${STORE[@]}" || true
echo 604917 | "$ENROLL" passcode --user "$USER_NAME" --type digits6 --stdin "${STORE[@]}"
ls -l "$WORK/etc" "$WORK/etc/users"

step "Right passcode through real libpam"
login 604917
step "Wrong passcode"
login 111111
step "Two more wrong passcodes: deny = 3 locks the account"
login 222222
login 333333
step "The right passcode while locked is refused too"
login 604917
step "puff-enroll status"
"$ENROLL" status "${STORE[@]}"
step "Admin reset, then the right passcode works again"
"$ENROLL" reset --user "$USER_NAME" "${STORE[@]}"
login 604917
"$ENROLL" status "${STORE[@]}"
