import CHelperStart
import CPAM
import Glibc
import PuffCore
import PuffPlatform
import PuffTPM

/// The whole run: hardening before anything is read, then one operation for the real uid.
/// `operation` is `argv[1]` when there is exactly one argument.
func helperMain(operation: String?) -> Never {
    // The environment is already gone (CHelperStart ran before anything else); without that
    // start-up code, refuse to run.
    guard puff_helper_dropped_environment() >= 0, Hardening.apply() else { _exit(HelperExit.failure) }
    StoreKey.opener = TPMUnsealer()
    // `--version` and `--help` read nothing and need no privilege.
    if operation == "--version" {
        print("puff-check \(BuildInfo.version)")
        exit(HelperExit.success)
    }
    if operation == "--help" || operation == "-h" {
        print(usage)
        exit(HelperExit.success)
    }
    openlog("puff-check", LOG_PID, LOG_AUTHPRIV)
    guard geteuid() == 0 else {
        HelperLog.write(LOG_ERR, "not running as root (the helper must be installed setuid root)")
        exit(HelperExit.failure)
    }
    // Nor the caller's scheduling (CHelperStart/scheduling.c, run before anything else): a
    // helper left at SCHED_IDLE on one busy CPU held a victim's counter lock past lock_wait.
    guard puff_helper_scheduling_was_reset() != 0 else {
        let step = puff_helper_scheduling_failure().flatMap { String(validatingCString: $0) } ?? "unknown"
        HelperLog.write(LOG_ERR, "uid \(getuid()): cannot reset the scheduling its caller gave it (\(step)); failing closed")
        exit(HelperExit.failure)
    }
    guard let operation = operation.flatMap(HelperOperation.init(rawValue:)) else {
        HelperLog.write(LOG_NOTICE, "usage error by uid \(getuid())")
        // Said once on standard error (the callers that run the helper never reach this).
        _ = "puff-check: no such operation; it is Puff's helper, not meant to be run by hand (puff-check --help)\n"
            .withCString { write(2, $0, strlen($0)) }
        exit(HelperExit.usage)
    }
    exit(Helper.run(operation))
}

/// What `--help` prints.
var usage: String { """
    puff-check: Puff's setuid helper. pam_puff.so (in screen lockers and other programs run
    without root) and puff-enroll (run by an ordinary user) start it; it is not meant to be run
    by hand. It serves the calling user's own account only, reads its request from standard
    input and answers with an exit status and a report (puff-check(8)).

    Usage: puff-check OPERATION    (query, login, enroll-passcode, enroll-gesture, remove,
                                    precheck; service-* for root callers only)
           puff-check --version | --help
    """ }

#if $Embedded
// `make helper` builds the helper in Embedded Swift, which has no `CommandLine`, from every
// file but main.swift; this C entry point hands over argv instead.
@_cdecl("main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    // The kernel gives argc entries before argv's NULL; a name that is not UTF-8 is no operation.
    helperMain(operation: argc == 2 ? argv?[1].flatMap { String(validatingCString: $0) } : nil)
}
#endif
