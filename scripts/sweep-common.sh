# Shared by killsweep.sh and faults.sh (sourced, not run): a throwaway Puff store with one
# enrolled user, the operations that are interrupted, and the checks run after each one.
#
#   PUFF_MODULE  the module (default build/pam_puff.so)
#   PUFF_BIN     where puff-pam-harness and puff-enroll are (default: swift build --show-bin-path)
#   PUFF_SWEEP_TPM=1  tpm mode: the host key sealed in a software TPM (swtpm on 127.0.0.1,
#                started here, stopped on exit; `puff-enroll tpm enable` after the enrollments),
#                logins through the helper (PUFF_HELPER, default build/puff-check) that unseals
#                it with build/puff-tpm.so (PUFF_TPM_LIBRARY). After every run the TPM's sessions
#                are flushed, as the kernel's resource manager (/dev/tpmrm0) flushes those of a
#                process that dies (swtpm has none), and a clear host.key is a violation.

module=${PUFF_MODULE:-$PWD/build/pam_puff.so}
bin=${PUFF_BIN:-$(swift build --show-bin-path)}
enroll=$bin/puff-enroll
harness=$bin/puff-pam-harness
picture=$PWD/Tests/Fixtures/picture-400x300.png
user=puff-sweep-user

# The passcode and the gesture before and after a change, and a wrong passcode.
old_passcode=604917
new_passcode=123789
wrong_passcode=111333
old_gesture="puff-gesture:1:400x300:p 50,50 250,50;t 300,200;t 350,120"
new_gesture="puff-gesture:1:400x300:p 50,250 250,250;t 100,100;t 350,60"

created_user=0
if ! getent passwd "$user" >/dev/null; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
    created_user=1
fi
work=$(mktemp -d /tmp/puff-sweep-XXXXXX)
sweep_cleanup() {
    if [ -s "$work/swtpm/pid" ]; then kill "$(cat "$work/swtpm/pid")" 2>/dev/null || true; fi
    rm -rf "$work"
    if [ "$created_user" = 1 ]; then userdel "$user" 2>/dev/null || true; fi
}
trap sweep_cleanup EXIT
chmod 0755 "$work"
store=(--dir "$work/etc" --state-dir "$work/state" --conf "$work/etc/puff.conf")
record=$work/etc/users/$user
counter=$work/state/$user
stored_picture=$work/etc/pictures/$user

# Minimum argon2id cost for speed; a huge deny and no cap (max_failures=0) so no lock
# interferes, however many wrong attempts come in a row; nodelay.
mkdir -p -m 0700 "$work/etc" "$work/state"
mkdir -p -m 0755 "$work/pam.d"
printf 'kdf_ops = 1\nkdf_mem_kib = 8\n' >"$work/etc/puff.conf"
chmod 0600 "$work/etc/puff.conf"
tpm_mode=${PUFF_SWEEP_TPM:-0}
module_extra=""
if [ "$tpm_mode" = 1 ]; then
    mkdir -m 0700 "$work/swtpm"
    # A port P on 127.0.0.1 with P+1 free too (libtss2's swtpm TCTI: its control channel).
    tpm_port=$(python3 -c 'import socket
for _ in range(50):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    try:
        b = socket.socket(); b.bind(("127.0.0.1", p + 1)); b.close(); a.close(); print(p); break
    except OSError: a.close()')
    swtpm socket --tpm2 --tpmstate dir="$work/swtpm" --flags not-need-init,startup-clear \
        --server type=tcp,port="$tpm_port",bindaddr=127.0.0.1 --ctrl type=tcp,port=$((tpm_port + 1)),bindaddr=127.0.0.1 \
        --daemon --pid file="$work/swtpm/pid"
    tcti="swtpm:host=127.0.0.1,port=$tpm_port"
    tpm2_dictionarylockout -s -n 32 -t 600 -l 600 -T "$tcti" >/dev/null
    printf 'tpm_tcti = %s\ntpm_library = %s\n' "$tcti" "${PUFF_TPM_LIBRARY:-$PWD/build/puff-tpm.so}" >>"$work/etc/puff.conf"
    module_extra=" helper=${PUFF_HELPER:-$PWD/build/puff-check}"
fi
echo "auth required $module dir=$work/etc state_dir=$work/state conf=$work/etc/puff.conf nodelay deny=1000000 max_failures=0$module_extra" \
    >"$work/pam.d/puff-sweep"
printf '%s\n' "$old_passcode" | "$enroll" passcode --user "$user" --type digits6 --stdin "${store[@]}" >/dev/null
printf '%s\n%s\n' "$old_gesture" "$old_gesture" |
    "$enroll" gesture --user "$user" --picture "$picture" --stdin "${store[@]}" >/dev/null
if [ "$tpm_mode" = 1 ]; then
    "$enroll" tpm enable "${store[@]}" >/dev/null || { echo "tpm enable failed" >&2; exit 1; }
fi
cp "$record" "$work/record.old"
# The new gesture is enrolled on a different picture of the same size (bytes after the PNG
# end), so a record left old beside a picture already replaced shows.
new_picture=$work/picture-new.png
cp "$picture" "$new_picture"
printf 'puff sweep: the picture of the new gesture' >>"$new_picture"
printf '%s\n' "$new_passcode" >"$work/input.enroll-passcode"
printf '%s\n%s\n' "$new_gesture" "$new_gesture" >"$work/input.enroll-gesture"

# The command of each operation (a scenario), run with stdin from $work/input.<scenario>.
operation() {
    case $1 in
        auth-wrong)     echo "$harness --confdir $work/pam.d --service puff-sweep --user $user --reply $wrong_passcode" ;;
        auth-right)     echo "$harness --confdir $work/pam.d --service puff-sweep --user $user --reply $old_passcode" ;;
        auth-gesture)   echo "$harness --confdir $work/pam.d --service puff-sweep --user $user --reply" ;;
        enroll-passcode) echo "$enroll passcode --user $user --type digits6 --stdin ${store[*]}" ;;
        enroll-gesture) echo "$enroll gesture --user $user --picture $new_picture --stdin ${store[*]}" ;;
    esac
}
# Runs scenario $1 with the command prefix in the remaining arguments (strace ...), stdin
# from its input file; prints nothing, returns the exit status.
run_operation() {
    local scenario=$1
    shift
    local input=/dev/null
    [ -f "$work/input.$scenario" ] && input=$work/input.$scenario
    local -a command
    read -r -a command <<<"$(operation "$scenario")"
    if [ "$scenario" = auth-gesture ]; then command+=("$old_gesture"); fi
    # The subshell absorbs bash's "Killed" notice (the explicit exit stops bash from
    # exec'ing the command in place of the subshell).
    ("$@" "${command[@]}" <"$input" >/dev/null 2>&1; exit $?) 2>/dev/null
    local status=$?
    after_run
    return $status
}

# Tpm mode: the sessions a killed or failed unseal left open go (the kernel's resource manager
# would flush them), and the key never rests in the clear.
after_run() {
    [ "$tpm_mode" = 1 ] || return 0
    tpm2_flushcontext -l -T "$tcti" >/dev/null 2>&1 || true   # loaded sessions (a StartAuthSession's)
    tpm2_flushcontext -s -T "$tcti" >/dev/null 2>&1 || true   # saved sessions
    tpm2_flushcontext -t -T "$tcti" >/dev/null 2>&1 || true   # transient objects (tpm enable's)
    if [ -e "$work/etc/host.key" ]; then violation "tpm mode: a clear host.key appeared"; fi
}

# One login through libpam with reply $1; prints the PAM code.
login_code() {
    "$harness" --confdir "$work/pam.d" --service puff-sweep --user "$user" --reply "$1" >/dev/null 2>&1
    echo $?
}

# The failure count as `puff-enroll status --json` decodes it; "ERR" when it cannot.
failures() {
    local json
    json=$("$enroll" status --json --user "$user" "${store[@]}" 2>/dev/null) || { echo ERR; return; }
    case $json in
        *'"passcode": "digits6"'*'"gesture": {"picture_width": 400, "picture_height": 300}'*) ;;
        *) echo ERR; return ;;
    esac
    local n=${json#*\"failures\": }
    n=${n%%,*}
    case $n in '' | *[!0-9]*) echo ERR ;; *) echo "$n" ;; esac
}

# Decodes the counter file by hand. Version 4 (README, "Lockout"): 1024 bytes, two 512-byte
# slots, each the text "puff-tally 4", the fields, "generation N", "check <BLAKE2b-128 of the
# text before it>" (b2sum -l 128), NUL padding. A slot that a kill or a fault cut short fails
# its check and is allowed (the other slot is the counter); there must be a whole one, and the
# whole slots must have the format. Older versions: at most 512 bytes of text, zero padding.
slot_state() {  # slot_state INDEX: "whole", "torn" or "BAD <why>" for slot INDEX of the counter
    local slot=$work/slot.$1
    dd if="$counter" bs=512 skip="$1" count=1 status=none | tr -d '\0' >"$slot"
    local lines
    lines=$(wc -l <"$slot")
    [ "$lines" -ge 2 ] && [ "$(tail -c 1 "$slot" | od -An -c | tr -d ' ')" = '\n' ] || { echo torn; return; }
    head -n -1 "$slot" >"$slot.body"
    [ "$(tail -n 1 "$slot")" = "check $(b2sum -l 128 "$slot.body" | cut -d' ' -f1)" ] || { echo torn; return; }
    local text
    text=$(cat "$slot.body")
    if [[ $text =~ ^puff-tally\ 4$'\n'failures\ [0-9]+$'\n'last-failure\ [0-9]+$'\n'locked-until\ [0-9]+($'\n'[a-z-]+\ [0-9a-f-]+)*$'\n'generation\ [0-9]+$ ]]; then
        echo whole
    else
        echo "BAD whole slot $1 of another format"
    fi
}
counter_file_ok() {
    [ -f "$counter" ] || return 0
    local size
    size=$(stat -c %s "$counter")
    if [ "$size" = 1024 ]; then
        local first second
        first=$(slot_state 0) second=$(slot_state 1)
        [ "${first%% *}" != BAD ] && [ "${second%% *}" != BAD ] || return 1
        [ "$first" = whole ] || [ "$second" = whole ]
        return
    fi
    [ "$size" -le 512 ] || return 1
    local text
    text=$(tr -d '\0' <"$counter")
    [[ $text =~ ^puff-tally\ [123]$'\n'failures\ [0-9]+$'\n'last-failure\ [0-9]+$'\n'locked-until\ [0-9]+($'\n'[a-z-]+\ [0-9a-f-]+)*$ ]]
}

# Which record is stored: "old" (byte for byte, with the old picture), "new" (the change
# took: the new secret works and the replaced one does not, the other factor still works,
# the picture is the new one), "learned" (a gesture login re-sealed the template it learned
# from: both factors still work), "mixed-picture" (the old record beside the new picture), or
# "BAD <why>". Record and picture are put back afterwards, so every run starts the same.
record_state() {
    local scenario=$1
    if cmp -s "$record" "$work/record.old"; then
        if cmp -s "$stored_picture" "$picture"; then
            echo old
        elif [ "$scenario" = enroll-gesture ] && cmp -s "$stored_picture" "$new_picture"; then
            echo mixed-picture
            cp "$picture" "$stored_picture"
        else
            echo "BAD picture is neither the old nor the new one"
        fi
        return
    fi
    local new_code old_code other_code
    case $scenario in
        enroll-passcode)
            new_code=$(login_code "$new_passcode") old_code=$(login_code "$old_passcode") other_code=$(login_code "$old_gesture") ;;
        enroll-gesture)
            new_code=$(login_code "$new_gesture") old_code=$(login_code "$old_gesture") other_code=$(login_code "$old_passcode") ;;
        auth-gesture)
            # A gesture success re-seals the template it learned from: the record may be the
            # old one or that one, whole (the same passcode, the same gesture still accepted).
            local gesture_code passcode_code
            gesture_code=$(login_code "$old_gesture") passcode_code=$(login_code "$old_passcode")
            if ! cmp -s "$stored_picture" "$picture"; then
                echo "BAD learned record beside the wrong picture"
            elif [ "$gesture_code" = 0 ] && [ "$passcode_code" = 0 ]; then
                echo learned
            else
                echo "BAD neither old nor learned (gesture $gesture_code, passcode $passcode_code)"
            fi
            cp "$work/record.old" "$record"
            chmod 0600 "$record"
            return ;;
        *)
            echo "BAD record changed by a login"
            cp "$work/record.old" "$record"
            chmod 0600 "$record"
            return ;;
    esac
    local expected_picture=$picture
    [ "$scenario" = enroll-gesture ] && expected_picture=$new_picture
    if ! cmp -s "$stored_picture" "$expected_picture"; then
        echo "BAD new record beside the wrong picture"
    elif [ "$new_code" = 0 ] && [ "$old_code" = 7 ] && [ "$other_code" = 0 ]; then
        echo new
    else
        echo "BAD neither old nor new (new secret $new_code, old secret $old_code, other factor $other_code)"
    fi
    cp "$work/record.old" "$record"
    chmod 0600 "$record"
    cp "$picture" "$stored_picture"
}

# Stale temp files left by an interrupted replace (never read as records; counted).
stale_temps() {
    find "$work/etc/users" "$work/etc/pictures" -name '.*.tmp-*' 2>/dev/null | wc -l
}
