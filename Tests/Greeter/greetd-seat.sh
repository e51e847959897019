#!/bin/bash
# Runs Debian 12's real greetd 0.9 (unpacked from its package into build/greetd by `make
# greetd-test-env`, never installed) as root for GreetdGreeterTests, in the private mount
# namespace the test starts it in:
#
#   unshare --mount --propagation private greetd-seat.sh GREETD WORK
#
# WORK holds what the test wrote: config.toml (vt = "current", switch = false: no VT is
# taken or switched; stdin is /dev/null) and pam.d/ with the services greetd opens (greetd
# for the user, greetd-greeter for the greeter's own session), bound over /etc/pam.d only
# inside the namespace. The test accounts (puff-it-*) get their homes under a /home of this
# namespace only (greetd's session changes to it). Stopped with SIGTERM.
set -euo pipefail
greetd=$1
work=$2
mount --bind "$work/pam.d" /etc/pam.d
mount -t tmpfs -o mode=0755 puff-greetd-home /home
while IFS=: read -r name _ uid gid _ home _; do
    case "$name:$home" in
        puff-it-*:/home/*) mkdir -p "$home" && chown "$uid:$gid" "$home" ;;
    esac
done < /etc/passwd
exec "$greetd" --config "$work/config.toml" < /dev/null
