#!/usr/bin/env bash
# Installs the Debian packages named as arguments that are missing, and leaves every service
# they ship stopped and disabled.
#
#   [APT_OPTIONS=--no-install-recommends] scripts/install-packages.sh PACKAGE...
#
# A temporary policy-rc.d stops the installation from starting anything now; it does not stop
# Debian from enabling a service for the next boot (openssh-server, slapd, lightdm, fail2ban
# and their dependencies would all start at the next boot). So the enablement links under
# /etc/systemd/system and /etc/rc?.d are listed before and after, and every link the
# installation added is taken back: `systemctl disable` for systemd units (deb-systemd-helper
# then keeps them disabled on upgrades), `update-rc.d NAME disable` for init scripts, and any
# link still left (an alias a maintainer script made itself, such as display-manager.service)
# is removed. The tests start their own daemons on 127.0.0.1 and never need them enabled.
set -euo pipefail

missing=()
for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
[ ${#missing[@]} -gt 0 ] || exit 0
[ "$(id -u)" = 0 ] || { echo "$0: missing Debian packages (${missing[*]}); run as root to install them" >&2; exit 77; }
echo "Installing: ${missing[*]}"

enablement_links() {
    find /etc/systemd/system /etc/rc0.d /etc/rc1.d /etc/rc2.d /etc/rc3.d /etc/rc4.d /etc/rc5.d /etc/rc6.d /etc/rcS.d \
        -type l 2>/dev/null | sort
}
work=$(mktemp -d)
guard=
cleanup() {
    [ -z "$guard" ] || rm -f /usr/sbin/policy-rc.d
    rm -rf "$work"
}
trap cleanup EXIT
enablement_links > "$work/before"
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    guard=1
fi
status=0
{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${APT_OPTIONS:-} "${missing[@]}"; } || status=$?

enablement_links > "$work/after"
comm -13 "$work/before" "$work/after" > "$work/added"
disabled=()
while read -r link; do
    [ -L "$link" ] || continue
    name=${link##*/}
    case "$link" in
        /etc/rc?.d/S*)
            script=${name#S[0-9][0-9]}
            update-rc.d "$script" disable >/dev/null 2>&1 || true
            disabled+=("$script (init script)")
            ;;
        /etc/systemd/system/*)
            # A link in a .wants/.requires directory is named after its unit; an alias
            # (sshd.service, display-manager.service) points at the unit it names.
            case "${link%/*}" in
                *.wants|*.requires) unit=$name ;;
                *) unit=$(basename "$(readlink "$link")") ;;
            esac
            systemctl disable --no-reload "$unit" >/dev/null 2>&1 || true
            disabled+=("$unit")
            ;;
    esac
    # Whatever no tool took back.
    if [ -L "$link" ]; then rm -f "$link"; fi
done < "$work/added"
if [ ${#disabled[@]} -gt 0 ]; then
    echo "Left disabled (not started at boot): $(printf '%s\n' "${disabled[@]}" | sort -u | tr '\n' ' ')"
fi
exit "$status"
