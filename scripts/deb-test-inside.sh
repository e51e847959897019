#!/bin/bash
# The body of `make deb-test`, run as root inside the throwaway overlay copy of / (see
# deb-test.sh): it may change anything here, and every change disappears with the copy.
set -euo pipefail
DEB=$1
LOCKER_DEB=$2
GREETER_DEB=$3
GREETD_DEB=$4
WAYLAND_PY=$5
TERM_PY="/usr/bin/python3 /tmp/deb-test-term.py"
PASSCODE=604917
PASSWORD='Sys-Pass-9071'
checks=0
ok() { checks=$((checks + 1)); echo "ok $checks: $*"; }
fail() { echo "FAIL: $*"; exit 1; }
failures() { puff-enroll status --json --user "$1" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["failures"])'; }

[ ! -e /opt/swift/usr/bin/swift ] && ! command -v swift >/dev/null || fail "the Swift toolchain is visible"
ok "no Swift toolchain (/opt/swift is empty, swift not on PATH)"

# This image keeps man pages out of dpkg installs (a Docker default); a real machine does not.
rm -f /etc/dpkg/dpkg.cfg.d/excludes
find /etc/pam.d /usr/share/pam-configs /var/lib/pam -type f -exec sha256sum {} + | sort > /tmp/pam-before

alternative_before=$(update-alternatives --query lightdm-greeter 2>/dev/null | sed -n 's/^Value: //p')
dpkg -i "$DEB" "$LOCKER_DEB" "$GREETER_DEB" > /tmp/dpkg-i.log 2>&1 || { cat /tmp/dpkg-i.log; fail "dpkg -i"; }
ok "dpkg -i $(basename "$DEB") $(basename "$LOCKER_DEB") $(basename "$GREETER_DEB")"
grep -q 'pam_puff.so nullok' /etc/pam.d/common-auth && fail "Puff is active before pam-auth-update --enable puff"
ok "installing does not enable Puff's prompt (profile puff is Default: no)"

for tool in /usr/sbin/puff-enroll /usr/sbin/puff-check /usr/bin/puff-pad; do
	version=$("$tool" --version) || fail "$tool --version"
	readelf -d "$tool" | grep -qE 'RUNPATH|RPATH' && fail "$tool has a RUNPATH"
	ldd "$tool" | grep -q 'not found' && fail "$tool: $(ldd "$tool" | grep 'not found')"
	ok "$tool --version: $version (no RUNPATH, every library found)"
done
# The screen locker, its own package: X11, XInput2, RandR and cairo come through its Depends
# (shlibs), and the PAM module's package does not need them.
dpkg-deb -f "$LOCKER_DEB" Depends | grep -q 'libcairo2' || fail "puff-lock does not depend on libcairo2"
dpkg-deb -f "$DEB" Depends | grep -qE 'libcairo|libx11' && fail "libpam-puff depends on X11 or cairo"
lock_version=$(/usr/bin/puff-lock --version) || fail "puff-lock --version"
# No library linked that nothing calls (cairo-xlib's pkg-config used to add libXext).
for tool in /usr/bin/puff-lock /usr/sbin/puff-greeter; do
	readelf -d "$tool" | grep -q 'NEEDED.*libXext' && fail "$tool links libXext, which it does not use"
done
/usr/bin/puff-lock --help > /tmp/puff-lock-help.txt 2>&1 || fail "puff-lock --help"
# (The help is wrapped to the terminal's width: the words may be split across lines.)
tr -s ' \n' '  ' < /tmp/puff-lock-help.txt | grep -q 'xss-lock -- puff-lock' || { cat /tmp/puff-lock-help.txt; fail "puff-lock --help does not say how to use it"; }
readelf -d /usr/bin/puff-lock | grep -qE 'RUNPATH|RPATH' && fail "puff-lock has a RUNPATH"
ldd /usr/bin/puff-lock | grep -q 'not found' && fail "puff-lock: $(ldd /usr/bin/puff-lock | grep 'not found')"
[ -f /etc/pam.d/puff-lock ] || fail "no /etc/pam.d/puff-lock"
ok "/usr/bin/puff-lock --version: $lock_version, --help; every library found; /etc/pam.d/puff-lock installed"
# The login screen, its own package: LightDM's greeter through Debian's alternative.
greeter_version=$(/usr/sbin/puff-greeter --version) || fail "puff-greeter --version"
readelf -d /usr/sbin/puff-greeter | grep -qE 'RUNPATH|RPATH' && fail "puff-greeter has a RUNPATH"
ldd /usr/sbin/puff-greeter | grep -q 'not found' && fail "puff-greeter: $(ldd /usr/sbin/puff-greeter | grep 'not found')"
dpkg-deb -f "$GREETER_DEB" Depends | grep -q 'liblightdm-gobject' || fail "puff-greeter does not depend on liblightdm-gobject"
grep -qx 'Exec=/usr/sbin/puff-greeter' /usr/share/xgreeters/puff-greeter.desktop || fail "the greeter's desktop entry does not run /usr/sbin/puff-greeter"
[ "$(update-alternatives --query lightdm-greeter | sed -n 's/^Value: //p')" = /usr/share/xgreeters/puff-greeter.desktop ] \
	|| { update-alternatives --display lightdm-greeter; fail "puff-greeter is not the lightdm-greeter alternative"; }
[ "$(readlink -f /usr/share/xgreeters/lightdm-greeter.desktop)" = /usr/share/xgreeters/puff-greeter.desktop ] \
	|| fail "/usr/share/xgreeters/lightdm-greeter.desktop does not lead to puff-greeter.desktop"
grep -q '^greeter-session=lightdm-greeter' /usr/share/lightdm/lightdm.conf.d/01_debian.conf || fail "Debian's LightDM does not use the alternative"
ok "/usr/sbin/puff-greeter --version: $greeter_version; selected: lightdm-greeter -> puff-greeter.desktop (was ${alternative_before:-none})"
# The Wayland parts: both programs are Wayland clients (libwayland-client, xkbcommon), and the
# greeter package carries greetd's example config and the script it runs.
for package in "$LOCKER_DEB" "$GREETER_DEB"; do
	for library in libwayland-client0 libxkbcommon0; do
		dpkg-deb -f "$package" Depends > /tmp/depends.txt
		grep -q "$library" /tmp/depends.txt || fail "$(basename "$package") does not depend on $library: $(cat /tmp/depends.txt)"
	done
done
# (grep -q would stop reading early and, under pipefail, fail ldd's side of the pipe.)
ldd /usr/sbin/puff-greeter > /tmp/greeter-ldd.txt
grep -q 'libwayland-client' /tmp/greeter-ldd.txt || { cat /tmp/greeter-ldd.txt; fail "puff-greeter does not link libwayland-client"; }
[ -x /usr/sbin/puff-greeter-cage ] || fail "no /usr/sbin/puff-greeter-cage"
grep -qx 'command = "/usr/sbin/puff-greeter-cage --fallback /bin/sh"' /usr/share/doc/puff-greeter/examples/greetd-config.toml \
	|| fail "the greetd example config does not run /usr/sbin/puff-greeter-cage"
ok "puff-lock and puff-greeter depend on libwayland-client0 and libxkbcommon0; greetd's example config runs /usr/sbin/puff-greeter-cage"
[ "$(stat -c '%a %U' /usr/sbin/puff-check)" = "4755 root" ] || fail "puff-check is not setuid root"
ok "puff-check is 4755 root"
module=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)/security/pam_puff.so
readelf -S "$module" | grep -q '\.symtab' && fail "the module is not stripped"
ok "module $module, $(stat -c %s "$module") bytes, stripped"
# Fleet mode's LDAP client: its own library, loaded only with backend = ldap.
ldap_library=$(dirname "$(dirname "$module")")/puff/puff-ldap.so
[ "$(stat -c '%a %U %F' "$ldap_library")" = "644 root regular file" ] || fail "$ldap_library is not a root 0644 file"
readelf -S "$ldap_library" | grep -q '\.symtab' && fail "$ldap_library is not stripped"
readelf -d "$ldap_library" | grep -q 'NEEDED.*libldap' || fail "$ldap_library does not link libldap"
ldd "$ldap_library" | grep -q 'not found' && fail "$ldap_library: $(ldd "$ldap_library" | grep 'not found')"
for binary in "$module" /usr/sbin/puff-check; do
	ldd "$binary" | grep -qE 'libldap|liblber|libsasl2|libgnutls' && fail "$binary loads the LDAP client: $(ldd "$binary")"
done
ok "$ldap_library (root 0644, stripped, every library found); module and puff-check load no LDAP client"

pam-auth-update --enable puff
grep -E 'pam_puff|pam_unix' /etc/pam.d/common-auth
first=$(grep -nE '^auth.*pam_puff.so nullok' /etc/pam.d/common-auth | cut -d: -f1)
unix=$(grep -nE '^auth.*pam_unix.so' /etc/pam.d/common-auth | cut -d: -f1)
succ=$(grep -nE '^auth.*pam_puff.so authsucc' /etc/pam.d/common-auth | cut -d: -f1)
[ -n "$first" ] && [ -n "$unix" ] && [ -n "$succ" ] && [ "$first" -lt "$unix" ] && [ "$unix" -lt "$succ" ] \
	|| fail "common-auth does not have Puff, pam_unix, then authsucc"
ok "pam-auth-update --enable puff: Puff before pam_unix, authsucc after"

useradd --no-create-home --home-dir / --shell /bin/sh puff-deb-alice
useradd --no-create-home --home-dir / --shell /bin/sh puff-deb-bob
echo "puff-deb-alice:$PASSWORD" | chpasswd
echo "$PASSCODE" | puff-enroll passcode --user puff-deb-alice --type digits6 --stdin
[ "$(failures puff-deb-alice)" = 0 ] || fail "fresh enrollment has failures"
ok "puff-enroll passcode --user puff-deb-alice"

su_as_bob() {  # su_as_bob PROMPT ANSWER [PROMPT ANSWER...]
	$TERM_PY "$@" -- setpriv --reuid=puff-deb-bob --regid=puff-deb-bob --init-groups -- \
		su puff-deb-alice -c 'echo puff-su-ok $(id -un)'
}
out=$(su_as_bob asscode "$PASSCODE") || true
echo "$out" | grep -q 'puff-su-ok puff-deb-alice' || { echo "$out"; fail "su with the passcode"; }
ok "su with the Puff passcode"
for i in 1 2 3 4 5 6; do
	out=$(su_as_bob asscode "$PASSWORD") || true
	echo "$out" | grep -q 'puff-su-ok puff-deb-alice' || { echo "$out"; fail "su $i with the system password at Puff's prompt"; }
done
[ "$(failures puff-deb-alice)" = 0 ] || fail "six system-password logins left $(failures puff-deb-alice) Puff failures"
ok "six su logins with the system password typed at Puff's prompt: Puff failures 0"
out=$(su_as_bob asscode 'not-the-password') || true
echo "$out" | grep -q 'puff-su-ok' && fail "a wrong password logged in"
[ "$(failures puff-deb-alice)" = 1 ] || fail "a wrong password counted $(failures puff-deb-alice) times"
ok "a wrong password is refused and counts once"
out=$(su_as_bob asscode '' password "$PASSWORD") || true
echo "$out" | grep -q 'puff-su-ok puff-deb-alice' || { echo "$out"; fail "Enter at Puff's prompt, then the password"; }
[ "$(failures puff-deb-alice)" = 1 ] || fail "an empty reply was counted"
ok "Enter at Puff's prompt goes to the password prompt, uncounted"

# The system's own sshd service (@include common-auth), on 127.0.0.1 of this network namespace.
mkdir -p /run/sshd
ssh-keygen -q -t ed25519 -N '' -f /tmp/ssh_host_key
cat > /tmp/sshd_config <<CONF
Port 2222
ListenAddress 127.0.0.1
HostKey /tmp/ssh_host_key
PidFile /tmp/sshd.pid
UsePAM yes
KbdInteractiveAuthentication yes
PasswordAuthentication no
PubkeyAuthentication no
AuthenticationMethods keyboard-interactive
PrintMotd no
CONF
/usr/sbin/sshd -f /tmp/sshd_config -E /tmp/sshd.log
for _ in $(seq 50); do [ -s /tmp/sshd.pid ] && break; sleep 0.1; done
ssh_login() {
	timeout 60 sshpass -P asscode -p "$1" ssh -F /dev/null -o PreferredAuthentications=keyboard-interactive \
		-o NumberOfPasswordPrompts=1 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o LogLevel=ERROR -p 2222 puff-deb-alice@127.0.0.1 'echo puff-ssh-ok $(id -un)'
}
ssh_login "$PASSCODE" | grep -q 'puff-ssh-ok puff-deb-alice' || { cat /tmp/sshd.log; fail "ssh with the passcode"; }
[ "$(failures puff-deb-alice)" = 0 ] || fail "the passcode did not clear the count"
ok "sshd (service sshd, common-auth) with the Puff passcode"
for i in 1 2 3 4 5 6; do
	ssh_login "$PASSWORD" | grep -q 'puff-ssh-ok puff-deb-alice' || { cat /tmp/sshd.log; fail "ssh $i with the system password"; }
done
[ "$(failures puff-deb-alice)" = 0 ] || fail "six ssh logins with the system password left $(failures puff-deb-alice) Puff failures"
ok "six sshd logins with the system password at Puff's prompt: Puff failures 0"
kill "$(cat /tmp/sshd.pid)"

# The control: without the take-back line the same login counts (the zeros above are its doing).
pam-auth-update --disable puff-authsucc
grep -q 'pam_puff.so authsucc' /etc/pam.d/common-auth && fail "pam-auth-update --disable puff-authsucc left the line"
out=$(su_as_bob asscode "$PASSWORD") || true
echo "$out" | grep -q 'puff-su-ok puff-deb-alice' || { echo "$out"; fail "su with the system password, no authsucc"; }
[ "$(failures puff-deb-alice)" = 1 ] || fail "without authsucc a system-password login left $(failures puff-deb-alice) failures, not 1"
ok "control: with puff-authsucc disabled, the same su login counts one Puff failure"
pam-auth-update --enable puff-authsucc

# A screen locker's view: PAM as the user, the module through the installed setuid helper.
out=$($TERM_PY asscode "$PASSCODE" -- setpriv --reuid=puff-deb-alice --regid=puff-deb-alice --init-groups -- \
	pamtester puff-pad puff-deb-alice authenticate) || true
echo "$out" | grep -q 'successfully authenticated' || { echo "$out"; fail "unprivileged login through /usr/sbin/puff-check"; }
ok "unprivileged login (service puff-pad) through /usr/sbin/puff-check"

# The login screen: Debian's LightDM as installed (greeter-session=lightdm-greeter, the
# alternative, the lightdm PAM service with common-auth), as root, on an Xvfb of this network
# namespace; its X server is Xephyr (LightDM nests one when $DISPLAY is set) without the VT
# argument, and /dev/tty0 is /dev/null so no console is switched. A private system bus.
mount --bind /dev/null /dev/tty0
mkdir -p /tmp/lightdm-bin /tmp/markers /run/dbus
chmod 1777 /tmp/markers
printf '#!/bin/sh\nfor a; do shift; case "$a" in vt[0-9]*) ;; *) set -- "$@" "$a" ;; esac; done\nexec /usr/bin/Xephyr -screen 1024x768 "$@"\n' > /tmp/lightdm-bin/Xephyr
printf '#!/bin/sh\nexec /bin/sh -c "$1"\n' > /tmp/lightdm-bin/session-wrapper
chmod 755 /tmp/lightdm-bin/Xephyr /tmp/lightdm-bin/session-wrapper
mkdir -p /usr/share/xsessions /etc/lightdm/lightdm.conf.d
printf '[Desktop Entry]\nName=deb-test\nExec=/bin/sh -c "id -un > /tmp/markers/session-$(id -un)"\nType=Application\n' \
	> /usr/share/xsessions/puff-deb-test.desktop
printf '[LightDM]\ndbus-service=false\nuser-authority-in-system-dir=true\n[Seat:*]\nuser-session=puff-deb-test\nsession-wrapper=/tmp/lightdm-bin/session-wrapper\n' \
	> /etc/lightdm/lightdm.conf.d/50-deb-test.conf
dbus-daemon --system --fork --print-pid > /tmp/dbus.pid
Xvfb :93 -screen 0 1024x768x24 -nolisten tcp > /tmp/xvfb.log 2>&1 &
xvfb=$!
for _ in $(seq 50); do DISPLAY=:93 xdpyinfo > /dev/null 2>&1 && break; sleep 0.1; done
DISPLAY=:93 PATH=/tmp/lightdm-bin:$PATH lightdm > /tmp/lightdm.out 2>&1 &
lightdm=$!
stop_lightdm() {
	kill "$lightdm" 2>/dev/null || true
	for _ in $(seq 100); do kill -0 "$lightdm" 2>/dev/null || break; sleep 0.1; done
	kill "$xvfb" "$(cat /tmp/dbus.pid)" 2>/dev/null || true
	umount /dev/tty0 || true
}
greeter_log=/var/log/lightdm/seat0-greeter.log
for _ in $(seq 150); do pgrep -u lightdm -x puff-greeter > /dev/null && [ -s /var/run/lightdm/root/:0 ] && break; sleep 0.1; done
pgrep -u lightdm -x puff-greeter > /dev/null || { cat /tmp/lightdm.out /var/log/lightdm/lightdm.log; stop_lightdm; fail "LightDM did not start puff-greeter"; }
grep -q 'Running command /usr/sbin/puff-greeter' /var/log/lightdm/lightdm.log || { stop_lightdm; fail "LightDM ran another greeter"; }
seat_x() { DISPLAY=:0 XAUTHORITY=/var/run/lightdm/root/:0 "$@"; }
sleep 2
seat_x import -window root /tmp/greeter-deb-users.png
seat_x xdotool type --delay 40 puff-deb-alice
seat_x xdotool key Return
sleep 2
seat_x xdotool type --delay 40 "$PASSCODE"
seat_x import -window root /tmp/greeter-deb-passcode.png
seat_x xdotool key Return
for _ in $(seq 150); do [ -s /tmp/markers/session-puff-deb-alice ] && break; sleep 0.1; done
[ "$(cat /tmp/markers/session-puff-deb-alice 2>/dev/null)" = puff-deb-alice ] \
	|| { cat "$greeter_log"; grep -iE 'fail|unable|error|exited' /var/log/lightdm/lightdm.log; grep -v DEBUG /tmp/lightdm.out | tail -20; stop_lightdm; fail "no session after the passcode at the login screen"; }
stop_lightdm
ok "LightDM started the installed puff-greeter (the alternative); the Puff passcode typed there started puff-deb-alice's session"

# The login screen on Wayland: Debian 12's greetd package, with the example config as shipped
# (puff-greeter-cage: puff-greeter a Wayland window under cage) except for the terminal (no VT
# is taken: vt = "current", switch = false) and cage's environment: its x11 backend draws into
# an Xvfb window, through which xdotool types. PAM: Debian's greetd service (login, common-auth
# with Puff enabled above).
dpkg -i "$GREETD_DEB" > /tmp/dpkg-greetd.log 2>&1 || { cat /tmp/dpkg-greetd.log; fail "dpkg -i greetd"; }
mkdir -p /usr/share/wayland-sessions /tmp/greetd-runtime
chown _greetd /tmp/greetd-runtime
chmod 0700 /tmp/greetd-runtime
printf '#!/bin/sh\nid -un > /tmp/markers/greetd-session-$(id -un)\n' > /tmp/greetd-session
chmod 755 /tmp/greetd-session
printf '[Desktop Entry]\nName=deb-test\nExec=/tmp/greetd-session\nType=Application\n' > /usr/share/wayland-sessions/puff-deb-test.desktop
sed -e 's|^vt = 7$|vt = "current"\nswitch = false|' \
	-e 's|^command = "|command = "env DISPLAY=:94 WLR_BACKENDS=x11 WLR_RENDERER=pixman XDG_RUNTIME_DIR=/tmp/greetd-runtime |' \
	/usr/share/doc/puff-greeter/examples/greetd-config.toml > /etc/greetd/config.toml
grep -q 'puff-greeter-cage --fallback /bin/sh"$' /etc/greetd/config.toml || { cat /etc/greetd/config.toml; fail "the example config changed shape"; }
Xvfb :94 -screen 0 1024x768x24 -nolisten tcp > /tmp/xvfb-greetd.log 2>&1 &
xvfb=$!
for _ in $(seq 50); do DISPLAY=:94 xdpyinfo > /dev/null 2>&1 && break; sleep 0.1; done
greetd < /dev/null > /tmp/greetd.log 2>&1 &
greetd=$!
stop_greetd() {
	kill "$greetd" 2>/dev/null || true
	for _ in $(seq 100); do kill -0 "$greetd" 2>/dev/null || break; sleep 0.1; done
	kill "$xvfb" 2>/dev/null || true
}
for _ in $(seq 200); do pgrep -u _greetd -x puff-greeter > /dev/null && [ -S /tmp/greetd-runtime/wayland-0 ] && break; sleep 0.1; done
pgrep -u _greetd -x cage > /dev/null || { cat /tmp/greetd.log; stop_greetd; fail "greetd did not start cage"; }
pgrep -u _greetd -x puff-greeter > /dev/null || { cat /tmp/greetd.log; stop_greetd; fail "greetd did not start puff-greeter under cage"; }
tr '\0' ' ' < "/proc/$(pgrep -u _greetd -x puff-greeter | head -1)/environ" | grep -q 'WAYLAND_DISPLAY=' \
	|| { stop_greetd; fail "puff-greeter under cage has no WAYLAND_DISPLAY"; }
sleep 2
greetd_shot() { setpriv --reuid=_greetd --regid="$(id -g _greetd)" --clear-groups env XDG_RUNTIME_DIR=/tmp/greetd-runtime WAYLAND_DISPLAY=wayland-0 grim - > "/tmp/greeter-deb-greetd-$1.png"; }
greetd_shot users || { stop_greetd; fail "grim could not take cage's screen"; }
DISPLAY=:94 xdotool type --delay 40 puff-deb-alice
DISPLAY=:94 xdotool key Return
sleep 2
DISPLAY=:94 xdotool type --delay 40 "$PASSCODE"
greetd_shot passcode || true
DISPLAY=:94 xdotool key Return
for _ in $(seq 200); do [ -s /tmp/markers/greetd-session-puff-deb-alice ] && break; sleep 0.1; done
[ "$(cat /tmp/markers/greetd-session-puff-deb-alice 2>/dev/null)" = puff-deb-alice ] \
	|| { cat /tmp/greetd.log; stop_greetd; fail "no session after the passcode at greetd's login screen"; }
stop_greetd
grep -q 'agreety' /tmp/greetd.log && fail "the greeter fell back to agreety: $(cat /tmp/greetd.log)"
# greetd's own PAM services go with it, so the end state is compared with the start.
dpkg --purge greetd > /tmp/dpkg-greetd.log 2>&1 || { cat /tmp/dpkg-greetd.log; fail "dpkg --purge greetd"; }
ok "greetd with the shipped example config ran the installed puff-greeter as a Wayland client under cage; the Puff passcode typed there started puff-deb-alice's session"

# The installed puff-lock on Wayland: the test compositor (Tests/Wayland/lock-compositor.py, on
# pywlroots, with ext-session-lock-v1) headless; puff-lock as puff-deb-alice locks it through the
# package's /etc/pam.d/puff-lock and the setuid helper, and the passcode typed unlocks.
mkdir -p /tmp/wl-runtime
chmod 755 /tmp/wl-runtime
"$WAYLAND_PY" /tmp/lock-compositor.py /tmp/wl-runtime 1024x768 > /tmp/wl-compositor.log 2>&1 &
compositor=$!
wl_command() {
	/usr/bin/python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1]); s.sendall((sys.argv[2] + "\n").encode())
print(s.recv(4096).decode().strip())' /tmp/wl-runtime/control "$1" 2>/dev/null || echo "(no answer)"
}
for _ in $(seq 300); do [ "$(wl_command state)" = unlocked ] && break; sleep 0.1; done
[ "$(wl_command state)" = unlocked ] || { cat /tmp/wl-compositor.log; kill "$compositor"; fail "the test compositor did not start"; }
setpriv --reuid=puff-deb-alice --regid=puff-deb-alice --init-groups env WAYLAND_DISPLAY=/tmp/wl-runtime/wayland-puff \
	/usr/bin/puff-lock > /tmp/wl-lock.log 2>&1 &
locker=$!
for _ in $(seq 300); do [ "$(wl_command state)" = locked ] && break; sleep 0.1; done
[ "$(wl_command state)" = locked ] || { cat /tmp/wl-lock.log; kill "$locker" "$compositor"; fail "the installed puff-lock did not lock the Wayland session"; }
sleep 2
wl_command "type $PASSCODE" > /dev/null
lock_status=
for _ in $(seq 200); do kill -0 "$locker" 2>/dev/null || { wait "$locker" && lock_status=0 || lock_status=$?; break; }; sleep 0.1; done
[ "$lock_status" = 0 ] && [ "$(wl_command state)" = unlocked ] \
	|| { cat /tmp/wl-lock.log; kill "$locker" 2>/dev/null; kill "$compositor"; fail "the passcode did not unlock the Wayland session (puff-lock status ${lock_status:-running})"; }
kill "$compositor"
wait "$compositor" 2>/dev/null || true
ok "the installed puff-lock locked a Wayland session (ext-session-lock-v1) and the Puff passcode unlocked it: $(grep -o 'locked puff-deb-alice (Wayland[^)]*)' /tmp/wl-lock.log)"

MANPAGER=cat MANWIDTH=80 man pam_puff > /tmp/man.txt 2>&1 || { cat /tmp/man.txt; fail "man pam_puff"; }
grep -q 'authsucc' /tmp/man.txt || fail "man pam_puff shows no authsucc"
for page in 5:puff.conf 8:puff-enroll 8:puff-check 1:puff-pad 1:puff-lock 8:puff-greeter; do
	MANPAGER=cat man "${page%%:*}" "${page#*:}" > /dev/null 2>&1 || fail "man ${page#*:}"
done
ok "man pam_puff, puff.conf(5), puff-enroll(8), puff-check(8), puff-pad(1), puff-lock(1), puff-greeter(8) open"
# The documents the tools' --help and the man pages point to are in the package.
for doc in README.Debian prompt-contract.md gesture-format.md fleet.md protection-at-rest.md; do
	[ -s "/usr/share/doc/libpam-puff/$doc" ] || [ -s "/usr/share/doc/libpam-puff/$doc.gz" ] || fail "no /usr/share/doc/libpam-puff/$doc"
done
for help in "puff-pad login --help" "puff-enroll gesture --help"; do
	for path in $($help 2>&1 | tr -s ' \n' '\n\n' | grep -o '/usr/share/doc/[^ )]*' | sed 's/[.,;]$//'); do
		[ -e "$path" ] || fail "$help names $path, which is not installed"
	done
done
ok "/usr/share/doc/libpam-puff holds the quick start and the documents --help names"

dpkg -L libpam-puff puff-lock puff-greeter | sort > /tmp/package-files
dpkg --remove puff-greeter > /tmp/dpkg-r.log 2>&1 || { cat /tmp/dpkg-r.log; fail "dpkg --remove puff-greeter"; }
[ "$(update-alternatives --query lightdm-greeter 2>/dev/null | sed -n 's/^Value: //p')" = "$alternative_before" ] \
	|| { update-alternatives --display lightdm-greeter; fail "removing puff-greeter did not give the alternative back"; }
ok "dpkg --remove puff-greeter gives lightdm-greeter back (${alternative_before:-none})"
dpkg --remove puff-lock libpam-puff > /tmp/dpkg-r.log 2>&1 || { cat /tmp/dpkg-r.log; fail "dpkg --remove"; }
[ -d /etc/puff ] && [ -d /var/lib/puff ] && [ -e /etc/puff/users/puff-deb-alice ] || fail "dpkg --remove lost the enrollments"
grep -q pam_puff /etc/pam.d/common-auth && fail "common-auth still names pam_puff after dpkg --remove"
ok "dpkg --remove keeps /etc/puff and /var/lib/puff and takes Puff out of common-auth"
dpkg --purge puff-greeter puff-lock libpam-puff > /tmp/dpkg-p.log 2>&1 || { cat /tmp/dpkg-p.log; fail "dpkg --purge"; }
[ ! -e /etc/puff ] && [ ! -e /var/lib/puff ] || fail "dpkg --purge left /etc/puff or /var/lib/puff"
left=""
while read -r path; do
	[ -d "$path" ] && continue   # shared directories (/usr/share/man/man8 ...) stay
	[ -e "$path" ] || [ -L "$path" ] && left="$left $path"
done < /tmp/package-files
[ -z "$left" ] || fail "dpkg --purge left:$left"
dpkg-query -W libpam-puff > /dev/null 2>&1 && fail "dpkg still knows libpam-puff"
dpkg-query -W puff-lock > /dev/null 2>&1 && fail "dpkg still knows puff-lock"
dpkg-query -W puff-greeter > /dev/null 2>&1 && fail "dpkg still knows puff-greeter"
find /etc/pam.d /usr/share/pam-configs /var/lib/pam -type f -exec sha256sum {} + | sort > /tmp/pam-after
diff /tmp/pam-before /tmp/pam-after || fail "the PAM configuration differs from before the installation"
ok "dpkg --purge leaves nothing: no package file, no /etc/puff, /var/lib/puff, PAM files as before"
echo "deb-test (inside): $checks checks passed"
