#!/bin/bash
# Runs Debian's real LightDM daemon as root for GreeterTests, in the private mount namespace
# the test starts it in (unshare --mount), on the X server named by $DISPLAY (Xvfb), where it
# nests its seat's X server (Xephyr):
#
#   unshare --mount --propagation private lightdm-seat.sh WORK
#
# WORK holds what the test wrote: lightdm.conf, users.conf, the PAM services pam-lightdm and
# pam-lightdm-greeter, bus.conf, the greeter and session .desktop files. They are bound over
# the machine's files only inside the namespace. LightDM's logs, run and cache directories are
# under WORK (lightdm.conf says so). Stopped with SIGTERM: LightDM stops its X server, greeter
# and sessions, then the private system bus goes.
set -euo pipefail
work=$1

# As root LightDM takes a VT (vt7) for its X server; /dev/tty0 is /dev/null here, so no
# console of the machine is switched, and the Xephyr wrapper in WORK/bin drops the vtN
# argument Xephyr does not know.
mount --bind /dev/null /dev/tty0
mount --bind "$work/pam-lightdm" /etc/pam.d/lightdm
mount --bind "$work/pam-lightdm-greeter" /etc/pam.d/lightdm-greeter
mount --bind "$work/lightdm.conf" /etc/lightdm/lightdm.conf
mount --bind "$work/users.conf" /etc/lightdm/users.conf

# LightDM's session child changes to the user's home and ends the session when it cannot:
# the test accounts (puff-it-*) get theirs under a /home of this namespace only.
mount -t tmpfs -o mode=0755 puff-seat-home /home
while IFS=: read -r name _ uid gid _ home _; do
    case "$name:$home" in
        puff-it-*:/home/*) mkdir -p "$home" && chown "$uid:$gid" "$home" ;;
    esac
done < /etc/passwd

# LightDM's session child needs a system bus ("Unable to contact system bus" otherwise): a
# private one, reached through DBUS_SYSTEM_BUS_ADDRESS, which the daemon's children inherit.
dbus-daemon --config-file="$work/bus.conf" --nofork --nopidfile &
bus=$!
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$work/system_bus_socket"
for _ in $(seq 100); do [ -S "$work/system_bus_socket" ] && break; sleep 0.05; done

lightdm=
stop() {
    trap - TERM INT EXIT
    if [ -n "$lightdm" ]; then
        kill -TERM "$lightdm" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$lightdm" 2>/dev/null || break; sleep 0.05; done
        kill -KILL "$lightdm" 2>/dev/null || true
    fi
    kill -TERM "$bus" 2>/dev/null || true
    wait 2>/dev/null || true
    exit 0
}
trap stop TERM INT EXIT
PATH="$work/bin:$PATH" lightdm -d > "$work/lightdm.out" 2>&1 &
lightdm=$!
wait "$lightdm" || true
stop
