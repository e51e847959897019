#!/usr/bin/env bash
# make bench: figures, not tests. From one run, side by side:
#   1. what loading each PAM module costs its host: size (stripped), Swift runtime libraries,
#      exported symbols, dlopen(RTLD_NOW) time and the resident / private dirty / proportional
#      memory the load adds (build/puff-loadprobe, medians over LOADS fresh processes), for
#      pam_puff next to pam_unix, pam_faillock and pam_permit, and fleet mode's puff-ldap.so
#      (loaded only with backend = ldap, and only by the helper);
#   2. whole-process pamtester runs: pam_permit and pam_puff at argon2id's minimum cost in
#      pairs (one of each, alternating, RUNS pairs), then pam_puff at the default cost,
#      pam_unix with the system's yescrypt, and pam_faillock in front of pam_unix;
#   3. the setuid helper: size, runtime libraries, and the time of one `puff-check query`
#      as an ordinary enrolled user (a screen locker's call before its prompt), spawned the
#      way the module spawns it (build/puff-spawnprobe), next to /bin/true as the floor;
#   4. whether anything in the module or the helper can read the environment (getenv,
#      secure_getenv or environ imported; SWIFT_* variable names inside);
#   5. tpm mode against the file key: pamtester medians at argon2id's minimum cost with the
#      host key sealed in a software TPM (Debian's swtpm on 127.0.0.1, started here and
#      stopped on exit) next to the same store with the key in its file, and the TPM commands
#      one login sends (counted in swtpm's log);
#   6. the login keyring (keyring = yes) against keyring off: the release after a passcode
#      login and the capture after a password login, in pairs (scripts/bench-keyring.sh).
# BENCH_BASELINE_MODULE / BENCH_BASELINE_HELPER add rows for other builds (an older one).
#
# The benchmark writes /etc/pam.d/puff-bench-* services, gives the puff-bench account a
# system password for pam_unix and writes /etc/puff/puff.conf for the helper: `make bench` runs
# it through scripts/hermetic.sh, so all of them exist only in a private copy-on-write /etc
# that vanishes with the run. It refuses to run outside it. The stores are scratch directories.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${PUFF_HERMETIC:-}" = 1 ] || { echo "bench.sh: run it with make bench (it sets a system password only in a private /etc)" >&2; exit 64; }
RUNS=${RUNS:-100}
LOADS=${LOADS:-200}
MODULE=$PWD/build/pam_puff.so
HELPER=$PWD/build/puff-check
ENROLL=${BENCH_ENROLL:-$PWD/build/puff-enroll}
PROBE=$PWD/build/puff-loadprobe
SPAWN_PROBE=$PWD/build/puff-spawnprobe
SECURITY=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/security
USER_NAME=puff-bench
PASSCODE=604917

WORK=$(mktemp -d /tmp/puff-bench-XXXXXX)
chmod 755 "$WORK"
cleanup() {
  if [ -s "$WORK/swtpm/pid" ]; then kill "$(cat "$WORK/swtpm/pid")" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -m 700 "$WORK/min" "$WORK/default" "$WORK/state" "$WORK/faillock" "$WORK/store"
mkdir -m 755 "$WORK/bin" "$WORK/lib"

id "$USER_NAME" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER_NAME"
echo "$USER_NAME:$PASSCODE-unix" | chpasswd   # a yescrypt hash made by chpasswd, in the private /etc

median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) {print "-"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }
# The first and third quartiles ("q1-q3"), for the spread of the paired ratios on a busy machine.
quartiles() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) {print "-"; exit} printf "%.2f-%.2f", a[int((NR+3)/4)], a[int((3*NR+3)/4)]}'; }
now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }

# 1. Loading. Stripped copies, flushed to disk: a page of a file still dirty in the page
# cache would count as private dirty in the host.
strip_copy() {  # strip_copy FILE NAME: a stripped copy in $WORK/lib
  strip --strip-all -o "$WORK/lib/$2" "$1"
  sync "$WORK/lib/$2"
  echo "$WORK/lib/$2"
}
load_row() {  # load_row LABEL FILE
  local file=$2 samples
  samples=$(for _ in $(seq "$LOADS"); do "$PROBE" "$file" || exit 1; done)
  local size runtime exported ms rss dirty pss
  size=$(( $(stat -c %s "$file") / 1024 ))
  runtime=$(readelf -d "$file" | grep -c 'NEEDED.*libswift' || true)
  exported=$(nm -D --defined-only --extern-only "$file" | awk '{print $NF}' | grep -vc '^pam_sm_' || true)
  ms=$(awk '{print $1 / 1e6}' <<<"$samples" | median)
  rss=$(awk '{print $2}' <<<"$samples" | median)
  dirty=$(awk '{print $3}' <<<"$samples" | median)
  pss=$(awk '{print $4}' <<<"$samples" | median)
  printf '  %-26s %9s %8s %9s %10.3f %8s %8s %8s\n' "$1" "$size" "$runtime" "$exported" "$ms" "$rss" "$dirty" "$pss"
  echo "$ms" > "$WORK/dlopen-$1"
}
echo "Loading one module into a PAM host (medians over $LOADS processes, $(nproc) cores):"
printf '  %-26s %9s %8s %9s %10s %8s %8s %8s\n' "module" "size KB" "libswift" "non-pam_sm" "dlopen ms" "Rss KB" "PrivDirty" "Pss KB"
load_row pam_puff "$(strip_copy "$MODULE" pam_puff.so)"
if [ -n "${BENCH_BASELINE_MODULE:-}" ]; then
  load_row pam_puff-baseline "$(strip_copy "$BENCH_BASELINE_MODULE" pam_puff-baseline.so)"
fi
# Fleet mode's LDAP client (with libldap, SASL, GnuTLS...), which only the helper loads, with
# backend = ldap: what each of its fleet runs pays on top. The module hands fleet mode to the
# helper, so no PAM host maps it.
load_row "puff-ldap (helper, fleet)" "$(strip_copy "$PWD/build/puff-ldap.so" puff-ldap.so)"
# Tpm mode's TPM client (libtss2's ESAPI, TCTI loader...), which only the helper loads, when
# the store's key is sealed in the TPM; the module has no TPM code at all.
load_row "puff-tpm (helper, tpm mode)" "$(strip_copy "$PWD/build/puff-tpm.so" puff-tpm.so)"
load_row pam_unix "$SECURITY/pam_unix.so"
load_row pam_faillock "$SECURITY/pam_faillock.so"
load_row pam_permit "$SECURITY/pam_permit.so"
awk -v puff="$(cat "$WORK/dlopen-pam_puff")" -v unix="$(cat "$WORK/dlopen-pam_unix")" \
  'BEGIN {printf "  dlopen pam_puff / pam_unix: %.2fx (goal <= 1)\n", puff / unix}'

# 2. Whole-process pamtester.
printf 'kdf_ops = 1\nkdf_mem_kib = 8\n' > "$WORK/min/puff.conf"; chmod 600 "$WORK/min/puff.conf"
: > "$WORK/default/puff.conf"; chmod 600 "$WORK/default/puff.conf"
echo "$PASSCODE" | "$ENROLL" passcode --user "$USER_NAME" --stdin --dir "$WORK/min" --state-dir "$WORK/state" --conf "$WORK/min/puff.conf" >/dev/null
echo "$PASSCODE" | "$ENROLL" passcode --user "$USER_NAME" --stdin --dir "$WORK/default" --state-dir "$WORK/state" --conf "$WORK/default/puff.conf" >/dev/null

echo "auth required pam_permit.so" > /etc/pam.d/puff-bench-permit
echo "auth required $MODULE dir=$WORK/min state_dir=$WORK/state conf=$WORK/min/puff.conf nodelay" > /etc/pam.d/puff-bench-min
echo "auth required $MODULE dir=$WORK/default state_dir=$WORK/state conf=$WORK/default/puff.conf nodelay" > /etc/pam.d/puff-bench-default
echo "auth required pam_unix.so nodelay" > /etc/pam.d/puff-bench-unix
printf 'auth requisite pam_faillock.so preauth dir=%s\nauth required pam_unix.so nodelay\n' "$WORK/faillock" > /etc/pam.d/puff-bench-faillock

run_ms() {  # run_ms SERVICE SECRET: wall time of one pamtester process, in microseconds
  local start end
  start=$(now_us)
  LD_PRELOAD=${PRELOAD:-} pamtester "$1" "$USER_NAME" authenticate <<<"$2" >"$WORK/pamtester.out" 2>&1 \
    || { echo "pamtester $1 failed:" >&2; cat "$WORK/pamtester.out" >&2; exit 1; }
  end=$(now_us)
  echo $(( end - start ))
}
median_ms() {  # median_ms SERVICE SECRET: median of RUNS pamtester processes, in ms
  for _ in $(seq "$RUNS"); do run_ms "$1" "$2"; done | median | awk '{printf "%.2f", $1 / 1000}'
}
paired_baseline=""
if [ -n "${BENCH_BASELINE_MODULE:-}" ]; then
  # Its own counters: the two builds need not share a counter format.
  mkdir -m 700 "$WORK/state-baseline"
  echo "$PASSCODE" | "$ENROLL" passcode --user "$USER_NAME" --stdin --dir "$WORK/min" --state-dir "$WORK/state-baseline" \
    --conf "$WORK/min/puff.conf" >/dev/null
  echo "auth required $BENCH_BASELINE_MODULE dir=$WORK/min state_dir=$WORK/state-baseline conf=$WORK/min/puff.conf nodelay" \
    > /etc/pam.d/puff-bench-baseline
  # An older module may not read the store this build's puff-enroll wrote.
  if pamtester puff-bench-baseline "$USER_NAME" authenticate <<<"$PASSCODE" >/dev/null 2>&1; then
    paired_baseline=1
  else
    echo "  (the baseline module cannot authenticate against this build's store: not paired)"
  fi
fi
permit=() puff=() ratios=() baseline=() baseline_ratios=()
for _ in $(seq "$RUNS"); do
  p=$(run_ms puff-bench-permit x)
  q=$(run_ms puff-bench-min "$PASSCODE")
  permit+=("$p") puff+=("$q") ratios+=("$(awk -v q="$q" -v p="$p" 'BEGIN {print q / p}')")
  if [ -n "$paired_baseline" ]; then
    b=$(run_ms puff-bench-baseline "$PASSCODE")
    baseline+=("$b") baseline_ratios+=("$(awk -v b="$b" -v p="$p" 'BEGIN {print b / p}')")
  fi
done
ms_median() { printf '%s\n' "$@" | median | awk '{printf "%.2f", $1 / 1000}'; }
echo "pamtester whole-process medians ($RUNS runs each):"
printf '  %-52s %8s ms\n' "pam_permit (paired)" "$(ms_median "${permit[@]}")"
printf '  %-52s %8s ms\n' "pam_puff, argon2id at minimum cost (t=1, 8 KiB) (paired)" "$(ms_median "${puff[@]}")"
printf '  %-52s %8sx (goal <= 1.3; quartiles %s)\n' "  pam_puff / pam_permit, median of the pairs" \
  "$(printf '%s\n' "${ratios[@]}" | median | awk '{printf "%.2f", $1}')" "$(printf '%s\n' "${ratios[@]}" | quartiles)"
# For reference only: the same pairs with fsync and fdatasync made no-ops (LD_PRELOAD of
# build/puff-nosync.so into both), which shows how much of the ratio is the counter's durable
# writes (a failure is on disk before the secret is checked: README, "Lockout").
if [ -e "$PWD/build/puff-nosync.so" ]; then
  nosync_ratios=()
  for _ in $(seq "$RUNS"); do
    p=$(PRELOAD=$PWD/build/puff-nosync.so run_ms puff-bench-permit x)
    q=$(PRELOAD=$PWD/build/puff-nosync.so run_ms puff-bench-min "$PASSCODE")
    nosync_ratios+=("$(awk -v q="$q" -v p="$p" 'BEGIN {print q / p}')")
  done
  printf '  %-52s %8sx (quartiles %s; reference only, not a configuration)\n' "  the same pairs with fsync as a no-op" \
    "$(printf '%s\n' "${nosync_ratios[@]}" | median | awk '{printf "%.2f", $1}')" "$(printf '%s\n' "${nosync_ratios[@]}" | quartiles)"
fi
if [ -n "$paired_baseline" ]; then
  printf '  %-52s %8s ms\n' "pam_puff-baseline, same store and cost (paired)" "$(ms_median "${baseline[@]}")"
  printf '  %-52s %8sx (quartiles %s)\n' "  pam_puff-baseline / pam_permit, median of the pairs" \
    "$(printf '%s\n' "${baseline_ratios[@]}" | median | awk '{printf "%.2f", $1}')" "$(printf '%s\n' "${baseline_ratios[@]}" | quartiles)"
fi
printf '  %-52s %8s ms\n' "pam_puff, default cost (t=1, 64 MiB)" "$(median_ms puff-bench-default $PASSCODE)"
printf '  %-52s %8s ms\n' "pam_unix, system yescrypt ($(getent shadow $USER_NAME | cut -d'$' -f2,3 | tr -d '\n'))" \
  "$(median_ms puff-bench-unix $PASSCODE-unix)"
printf '  %-52s %8s ms\n' "pam_faillock preauth, then pam_unix" "$(median_ms puff-bench-faillock $PASSCODE-unix)"

# One login's file opens (strace): everything opened after libpam loads the module, except
# shared libraries and libpam's own reads (/etc/pam.d, /proc/filesystems), how many of those
# start a walk from "/", and the fsyncs. (`make login-syscalls` lists them for a right
# passcode, a right gesture and a wrong passcode.)
opens_row() {  # opens_row LABEL SERVICE MODULE
  local trace=$WORK/login.trace calls opens
  strace -f -qq -e trace=openat,open,fsync,fdatasync -o "$trace" pamtester "$2" "$USER_NAME" authenticate <<<"$PASSCODE" >/dev/null 2>&1
  calls=$(awk -v module="\"$3\"" 'index($0, module) {seen = 1; next}
    seen && !/\.so(\.[0-9]+)*"|ld\.so\.cache|"\/etc\/pam\.d\/|"\/proc\/filesystems"/' "$trace")
  opens=$(grep -E ' (openat|open)\(' <<<"$calls" || true)
  printf '  %-52s %8s (%s of "/"; %s fsync)\n' "$1" "$(grep -c . <<<"$opens" || true)" "$(grep -c '"/",' <<<"$opens" || true)" \
    "$(grep -cE ' (fsync|fdatasync)\(' <<<"$calls" || true)"
}
opens_row "openat of one login through pam_puff (minimum cost)" puff-bench-min "$MODULE"
if [ -n "$paired_baseline" ]; then
  opens_row "openat of one login through pam_puff-baseline" puff-bench-baseline "$BENCH_BASELINE_MODULE"
fi

# 3. The helper, installed setuid root in the scratch directory, reading the private
# /etc/puff/puff.conf that points it at a scratch store where the account is enrolled.
mkdir -p -m 755 /etc/puff
printf 'dir = %s\nstate_dir = %s\nkdf_ops = 1\nkdf_mem_kib = 8\n' "$WORK/store" "$WORK/state" > /etc/puff/puff.conf
chmod 644 /etc/puff/puff.conf
echo "$PASSCODE" | "$ENROLL" passcode --user "$USER_NAME" --stdin --dir "$WORK/store" --state-dir "$WORK/state" \
  --conf /etc/puff/puff.conf >/dev/null
helper_row() {  # helper_row LABEL FILE
  local installed=$WORK/bin/$1 size runtime query
  strip --strip-all -o "$installed" "$2"
  chown root:root "$installed"; chmod 4755 "$installed"; sync "$installed"
  size=$(( $(stat -c %s "$installed") / 1024 ))
  runtime=$(readelf -d "$installed" | grep -c 'NEEDED.*libswift' || true)
  "$installed" query </dev/null >/dev/null 2>&1 || true
  # An older helper may not read the store this build's puff-enroll wrote.
  query=$(spawn_ms "$installed" query 2>/dev/null) || query="(cannot read this store)"
  printf '  %-26s %9s %8s %12s\n' "$1" "$size" "$runtime" "$query"
}
spawn_ms() {  # spawn_ms PROGRAM ARGUMENT: median of RUNS posix_spawn+waitpid by the enrolled user, in ms
  setpriv --reuid="$USER_NAME" --regid="$USER_NAME" --init-groups "$SPAWN_PROBE" "$RUNS" "$@" \
    | median | awk '{printf "%.2f", $1 / 1000}'
}
echo "The setuid helper (query: median of $RUNS runs, posix_spawn as the module does, by the enrolled user):"
printf '  %-26s %9s %8s %12s\n' "helper" "size KB" "libswift" "query ms"
helper_row puff-check "$HELPER"
if [ -n "${BENCH_BASELINE_HELPER:-}" ]; then helper_row puff-check-baseline "$BENCH_BASELINE_HELPER"; fi
printf '  %-26s %9s %8s %12s\n' "/bin/true (spawn floor)" "" "" "$(spawn_ms /bin/true)"
"$ENROLL" remove --user "$USER_NAME" --dir "$WORK/store" --state-dir "$WORK/state" --conf /etc/puff/puff.conf >/dev/null

# 4. Environment reads compiled in: imports of getenv/secure_getenv/environ, and the names of
# the SWIFT_* variables the full runtime consults.
echo "Environment reads compiled in (imported getenv/secure_getenv/environ; SWIFT_* names):"
env_row() {  # env_row LABEL FILE
  local imports names
  imports=$(nm -D --undefined-only "$2" | grep -cE ' (secure_getenv|getenv|__environ|environ)(@|$)' || true)
  names=$(strings "$2" | grep -c '^SWIFT_' || true)
  printf '  %-26s %8s imports %5s names\n' "$1" "$imports" "$names"
}
env_row pam_puff "$MODULE"
env_row puff-check "$HELPER"
if [ -n "${BENCH_BASELINE_MODULE:-}" ]; then env_row pam_puff-baseline "$BENCH_BASELINE_MODULE"; fi
if [ -n "${BENCH_BASELINE_HELPER:-}" ]; then env_row puff-check-baseline "$BENCH_BASELINE_HELPER"; fi

# 5. Tpm mode against the file key, at argon2id's minimum cost: a copy of the minimum-cost store
# whose host key `puff-enroll tpm enable` sealed in swtpm. A login in tpm mode goes through the
# root-started helper (the module never loads libtss2), which unseals the key: two TPM commands.
free_port() {  # a port P on 127.0.0.1 with P+1 also free (libtss2's swtpm TCTI: control at P+1)
  python3 -c 'import socket
for _ in range(50):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    try:
        b = socket.socket(); b.bind(("127.0.0.1", p + 1)); b.close(); a.close(); print(p); break
    except OSError: a.close()'
}
mkdir -m 700 "$WORK/swtpm" "$WORK/tpm" "$WORK/state-tpm"
port=$(free_port)
swtpm socket --tpm2 --tpmstate dir="$WORK/swtpm" --flags not-need-init,startup-clear \
  --server type=tcp,port="$port",bindaddr=127.0.0.1 --ctrl type=tcp,port=$((port + 1)),bindaddr=127.0.0.1 \
  --log file="$WORK/swtpm.log",level=20 --daemon --pid file="$WORK/swtpm/pid"
tcti="swtpm:host=127.0.0.1,port=$port"
tpm2_dictionarylockout -s -n 32 -t 600 -l 600 -T "$tcti" >/dev/null
printf 'kdf_ops = 1\nkdf_mem_kib = 8\ntpm_tcti = %s\ntpm_library = %s\n' "$tcti" "$PWD/build/puff-tpm.so" > "$WORK/tpm/puff.conf"
chmod 600 "$WORK/tpm/puff.conf"
echo "$PASSCODE" | "$ENROLL" passcode --user "$USER_NAME" --stdin --dir "$WORK/tpm" --state-dir "$WORK/state-tpm" --conf "$WORK/tpm/puff.conf" >/dev/null
"$ENROLL" tpm enable --dir "$WORK/tpm" --state-dir "$WORK/state-tpm" --conf "$WORK/tpm/puff.conf" >/dev/null
echo "auth required $MODULE dir=$WORK/tpm state_dir=$WORK/state-tpm conf=$WORK/tpm/puff.conf nodelay helper=$HELPER" \
  > /etc/pam.d/puff-bench-tpm
run_ms puff-bench-tpm "$PASSCODE" >/dev/null
: > "$WORK/swtpm.log"
run_ms puff-bench-tpm "$PASSCODE" >/dev/null
commands=$(grep -c 'SWTPM_IO_Read: length' "$WORK/swtpm.log" || true)
file=() tpm=()
for _ in $(seq "$RUNS"); do
  file+=("$(run_ms puff-bench-min "$PASSCODE")")
  tpm+=("$(run_ms puff-bench-tpm "$PASSCODE")")
done
echo "Tpm mode against the file key (pamtester, minimum argon2id cost, $RUNS alternating runs each; swtpm on 127.0.0.1):"
printf '  %-52s %8s ms\n' "file key (host.key, in the module's process)" "$(ms_median "${file[@]}")"
printf '  %-52s %8s ms\n' "tpm mode (sealed key, unsealed by the helper)" "$(ms_median "${tpm[@]}")"
printf '  %-52s %8s\n' "TPM commands in one tpm-mode login" "$commands"
echo "  (a real chip adds its own time per unseal: about 0.2-0.4 s for a firmware TPM, 2.7 s for a slow discrete one)"
"$ENROLL" remove --user "$USER_NAME" --dir "$WORK/min" --state-dir "$WORK/state" --conf "$WORK/min/puff.conf" >/dev/null

# 6. The login keyring (scripts/bench-keyring.sh, also runnable alone).
RUNS=$RUNS bash scripts/bench-keyring.sh
