import CHelperStart
import Glibc
import PuffCore
import PuffPlatform

// puff-check: the setuid-root helper that lets Puff run in processes without root
// (screen lockers, `puff-enroll` run by an ordinary user). In the spirit of pam_unix's
// unix_chkpwd it checks only the account of its real uid, reads the secret from standard
// input, applies the same lockout as the module, and answers with an exit status and a
// `HelperReport` that holds no secret. Every path, every policy value and the store come
// from /etc/puff/puff.conf and the defaults; nothing comes from the caller but the secret.
//
//   puff-check query     the state before the prompt: lock, accepted factors, keypad
//   puff-check verify    one attempt; the secret is standard input (at most 64 KiB)
//
// Exit: 0 verified (verify) or state reported (query); 1 refused, with a report;
// 2 usage; 3 failed closed (store, configuration, setup), no report.

// The environment is already gone (CHelperStart ran before the Swift runtime); without that
// start-up code the runtime would have read SWIFT_* variables of the caller: refuse to run.
guard puff_helper_dropped_environment() >= 0, Hardening.apply() else { _exit(HelperExit.failure) }
// `--version` reads nothing and needs no privilege.
if CommandLine.arguments.count == 2, CommandLine.arguments[1] == "--version" {
    print("puff-check \(BuildInfo.version)")
    exit(HelperExit.success)
}
openlog("puff-check", LOG_PID, LOG_AUTHPRIV)
guard geteuid() == 0 else {
    HelperLog.write(LOG_ERR, "not running as root (the helper must be installed setuid root)")
    exit(HelperExit.failure)
}
let arguments = CommandLine.arguments
guard arguments.count == 2, let operation = HelperOperation(rawValue: arguments[1]) else {
    HelperLog.write(LOG_NOTICE, "usage error by uid \(getuid())")
    exit(HelperExit.usage)
}
exit(Helper.run(operation))
