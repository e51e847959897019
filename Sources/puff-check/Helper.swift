import CHelperStart
import CPAM
import Glibc
import PuffCore
import PuffFleet
import PuffPlatform

/// syslog under the helper's own name.
enum HelperLog {
    static func write(_ priority: Int32, _ message: String) {
        message.withCString { text in puff_syslog_text(priority, text) }
    }
}

/// One run of the helper for the caller's real uid.
enum Helper {
    /// Longest secret read from standard input (the module's reply limit).
    static let maximumSecretLength = ModuleLimits.replyLength

    static func run(_ operation: HelperOperation) -> Int32 {
        if operation.isService { return Service.run(operation) }
        let uid = getuid()
        guard becomeRootThroughAndThrough(operation, caller: uid) else { return HelperExit.failure }
        do {
            try Sodium.initialize()
            // Only the file and the defaults: an argument could lower the lockout. The
            // configuration's directory (the store's) is walked once for the whole run.
            let session = StoreSession()
            let options = try Configuration.load(arguments: [], session: session).options
            guard let account = try Account.lookup(uid: uid) else {
                HelperLog.write(LOG_NOTICE, "uid \(uid) has no account")
                return HelperExit.failure
            }
            // The store is chosen once, here; everything below is the same for both.
            let files = FilesStore(options: options, session: session)
            switch StoreRoute.choose(options, for: .helper) {
            case .directory: return try serve(operation, FleetStore(files), account)
            case .files, .ownHelper, .rootService: return try serve(operation, files, account)
            }
        } catch {
            HelperLog.write(LOG_ERR, "uid \(uid): \(error); failing closed")
            return HelperExit.failure
        }
    }

    /// `operation` for the caller's own `account`, in `store`.
    private static func serve<S: StoreBackend>(_ operation: HelperOperation, _ store: S, _ account: Account) throws(StoreError) -> Int32 {
            let subject = try store.subject(of: account)
            switch operation {
            case .query:
                return write(HelperReport(subject.state)) ? HelperExit.success : HelperExit.failure
            case .verify:
                return try verify(store, subject, account)
            case .enrollPasscode, .enrollGesture:
                return try Enrollment.run(operation, store, subject, account)
            case .precheck:
                return try Enrollment.precheck(store, subject, account)
            case .remove:
                return try Enrollment.remove(store, subject, account)
            case .serviceQuery, .serviceVerify, .serviceLogin, .serviceTakeBack:
                return HelperExit.usage  // Service.run, above
            }
    }

    /// The caller's real uid is read (it names the only account served); from then on the
    /// helper is root through and through, before it touches the store, a lock or the TPM
    /// (issue 36): real and saved uid root, so no signal of the caller's (SIGSTOP, SIGKILL)
    /// reaches it and it cannot change its scheduling again; out of any cgroup the caller may
    /// freeze or throttle (as the service calls); the scheduling reset again, in case the
    /// caller changed it between the exec and now. A user who single-stepped their own helper
    /// could hold the shared decoy locks with it, or a TPM session between StartAuthSession and
    /// Unseal, which swtpm has three of for everyone. `false`, logged: nothing was read.
    private static func becomeRootThroughAndThrough(_ operation: HelperOperation, caller uid: uid_t) -> Bool {
        guard uid != 0 else { return true }
        guard puff_helper_become_root() == 0 else {
            HelperLog.write(LOG_ERR, "uid \(uid): cannot set its real and saved uid to root; failing closed")
            return false
        }
        guard Service.leaveUserCgroups(operation), puff_helper_reset_scheduling() == 0 else {
            HelperLog.write(LOG_ERR, "uid \(uid): \(operation.rawValue): cannot leave its caller's cgroups or scheduling; failing closed")
            return false
        }
        return true
    }

    private static func verify<S: StoreBackend>(_ store: S, _ subject: Subject,
                               _ account: Account) throws(StoreError) -> Int32 {
        guard let secret = try readSecret() else {
            HelperLog.write(LOG_NOTICE, "user \(account.name): empty or oversized input; not counted")
            return HelperExit.usage
        }
        let kind = secret.hasPrefix(GestureWire.prefix) ? "gesture" : "passcode"
        let before = subject.state
        var counted: CountedFailure?
        let outcome = try store.attempt(secret, for: subject, counted: &counted)
        // The system password typed at Puff's prompt (a screen locker whose stack falls back
        // to the password) is no Puff failure: the helper checks it itself, once for this
        // counted attempt, and takes the attempt back (as the module's `authsucc` line does
        // as root). Every other wrong answer stays counted, so this is no extra guess.
        if case .failure = outcome, let counted, kind == "passcode",
           SystemPassword.verify(user: account.name.value, proof: secret), try store.takeBack(counted) {
            HelperLog.write(LOG_INFO, CountedFailure.takenBackLine(user: account.name.value))
            // Still a refusal, with the counter as the take-back left it.
            let after = try store.subject(of: account).state
            let report = HelperReport(.failure(failures: after.failures, lock: after.lock), before: after)
            return write(report) ? HelperExit.refused : HelperExit.failure
        }
        if let line = outcome.logLine(user: account.name.value, kind: kind) { HelperLog.write(line.priority, line.text) }
        let report = HelperReport(outcome, before: before)
        guard write(report) else { return HelperExit.failure }
        return report.exitStatus
    }

    /// Writes the report to standard output.
    static func write(_ report: HelperReport) -> Bool {
        write(report.encoded())
    }

    /// Writes `bytes` to standard output.
    static func write(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in (try? FileDescriptor.writeAll(1, buffer)) != nil }
    }

    /// Standard input into wiped memory: non-empty and at most `maximumSecretLength` bytes.
    private static func readSecret() throws(StoreError) -> SecureBytes? {
        var buffer = try SecureBytes(count: maximumSecretLength + 1)
        let length: Int
        do {
            length = try buffer.withMutableBytes { bytes throws(Errno) -> Int in try FileDescriptor.read(0, into: bytes) }
        } catch {
            throw .system("read", path: "standard input", error)
        }
        guard length > 0, length <= maximumSecretLength else { return nil }
        return try buffer.prefix(length)
    }
}
