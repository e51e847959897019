#!/bin/bash
# make deb-test: installs build/libpam-puff_*.deb, build/puff-lock_*.deb and build/puff-greeter_*.deb in a throwaway overlayfs copy of / (a private
# mount, PID and network namespace; the Swift toolchain hidden), enables the pam-auth-update
# profile, enrolls, logs in through su and sshd with the shipped stack, at LightDM's login screen
# with the installed greeter and through Debian's greetd (GREETD.deb, installed only in the copy)
# with the shipped example config (puff-greeter under cage), then removes and
# purges the package. Nothing is installed on this machine: afterwards the script checks that
# every path the package holds, the PAM configuration and pam-auth-update's state are as before.
set -euo pipefail
usage="usage: deb-test.sh LIBPAM-PUFF.deb PUFF-LOCK.deb PUFF-GREETER.deb GREETD.deb"
DEB=$(realpath "${1:?$usage}")
LOCKER_DEB=$(realpath "${2:?$usage}")
GREETER_DEB=$(realpath "${3:?$usage}")
GREETD_DEB=$(realpath "${4:?$usage}")
HERE=$(cd "$(dirname "$0")" && pwd)
# The test compositor for puff-lock on Wayland (`make wayland-test-env`), run from its path:
# the copy of / below holds it.
WAYLAND_PY=$HERE/../build/wayland-venv/bin/python
[ -x "$WAYLAND_PY" ] || { echo "deb-test: no $WAYLAND_PY: run make wayland-test-env"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "deb-test: needs root (namespaces, overlayfs, chroot)"; exit 77; }

# What the test could conceivably change on the host, listed with checksums.
host_state() {
	dpkg-query -W -f='${Package} ${Status}\n' libpam-puff puff-lock puff-greeter greetd 2>&1 || true
	update-alternatives --query lightdm-greeter 2>&1 || true
	{ dpkg-deb -c "$DEB"; dpkg-deb -c "$LOCKER_DEB"; dpkg-deb -c "$GREETER_DEB"; dpkg-deb -c "$GREETD_DEB"; } | awk '{print $6}' | sed 's|^\./|/|' | while read -r path; do
		[ "$path" = / ] && continue
		if [ -L "$path" ] || [ -f "$path" ]; then sha256sum "$path"; elif [ -d "$path" ]; then echo "dir $path"; else echo "absent $path"; fi
	done
	find /etc/pam.d /usr/share/pam-configs /var/lib/pam -type f -exec sha256sum {} + | sort
	ls -la --time-style=+ /etc/puff /var/lib/puff 2>&1 || true
	grep -c '^puff-deb-\|^_greetd:' /etc/passwd || true
}
before=$(host_state)

work=$(mktemp -d /tmp/puff-debtest-XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$HERE/deb-test-inside.sh" "$HERE/deb-test-term.py" "$HERE/../Tests/Wayland/lock-compositor.py" "$work/"
set +e
unshare --mount --pid --fork --net --propagation private -- /bin/bash -euo pipefail -c '
	work=$1; deb=$2; locker_deb=$3; greeter_deb=$4; greetd_deb=$5; wayland_py=$6
	layer=$(mktemp -d "$work/layer-XXXXXX")  # under $work: removed with it on exit
	mount -t tmpfs -o mode=0755 tmpfs "$layer"
	mkdir "$layer/upper" "$layer/work" "$layer/root"
	root=$layer/root
	mount -t overlay overlay -o "lowerdir=/,upperdir=$layer/upper,workdir=$layer/work" "$root"
	mount -t proc proc "$root/proc"
	mount --rbind /dev "$root/dev"
	mount --rbind /sys "$root/sys"
	mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
	mount -t tmpfs -o mode=0755 tmpfs "$root/run"
	# The machine without a Swift toolchain.
	mount -t tmpfs -o mode=0755 tmpfs "$root/opt/swift"
	ip link set lo up
	cp "$deb" "$locker_deb" "$greeter_deb" "$greetd_deb" "$work/deb-test-inside.sh" "$work/deb-test-term.py" \
		"$work/lock-compositor.py" "$root/tmp/"
	status=0
	chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive /bin/bash /tmp/deb-test-inside.sh "/tmp/$(basename "$deb")" \
		"/tmp/$(basename "$locker_deb")" "/tmp/$(basename "$greeter_deb")" "/tmp/$(basename "$greetd_deb")" "$wayland_py" || status=$?
	# The login screen as the installed greeter drew it (deb-test-inside.sh).
	for shot in "$root"/tmp/greeter-deb-*.png; do [ -e "$shot" ] || continue; cp "$shot" "$work/"; done
	exit $status
' deb-test "$work" "$DEB" "$LOCKER_DEB" "$GREETER_DEB" "$GREETD_DEB" "$WAYLAND_PY"
status=$?
set -e
mkdir -p "$HERE/../build/screenshots"
for shot in "$work"/greeter-deb-*.png; do [ -e "$shot" ] || continue; cp "$shot" "$HERE/../build/screenshots/"; done

after=$(host_state)
if [ "$before" != "$after" ]; then
	echo "FAIL: the machine changed:"
	diff <(echo "$before") <(echo "$after") || true
	exit 1
fi
echo "ok: the machine is unchanged (package paths, /etc/pam.d, /usr/share/pam-configs, /var/lib/pam, /etc/puff, /var/lib/puff, accounts)"
[ "$status" = 0 ] || { echo "deb-test: FAILED (status $status)"; exit 1; }
echo "deb-test: passed"
