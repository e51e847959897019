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
            var request = HelperFrameReader(HelperDescriptorSource(0))
            switch operation {
            case .query:
                return write(HelperReport(subject.state).encoded()) ? HelperExit.success : HelperExit.failure
            case .login:
                return try login(store, subject, account, &request)
            case .enrollPasscode, .enrollGesture:
                return try Enrollment.run(operation, store, subject, account, &request)
            case .precheck:
                return try Enrollment.precheck(store, subject, account, &request)
            case .remove:
                return try Enrollment.remove(store, subject, account, &request)
            case .serviceLogin, .serviceTakeBack:
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

    /// `login`: the state now, then the caller's one attempt (a screen locker's unlock), with
    /// the configuration and the subject this run already read.
    private static func login<S: StoreBackend>(_ store: S, _ subject: Subject, _ account: Account,
                              _ request: inout HelperFrameReader<HelperDescriptorSource>) throws(StoreError) -> Int32 {
        guard write(HelperLoginAnswer.stateFrame(subject.state)) else { return HelperExit.failure }
        // The module's prompt runs now. No secret (the input ends: not enrolled, locked, an
        // empty reply): nothing is counted.
        let secret: SecureBytes
        do throws(HelperProtocolError) {
            guard let read = try HelperLoginSecret.read(from: &request) else { return HelperExit.usage }
            secret = read
        } catch {
            HelperLog.write(LOG_NOTICE, "user \(account.name): login: malformed request (\(error)); nothing counted")
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
            return writeAnswer(report, counted: nil, released: nil) ? HelperExit.refused : HelperExit.failure
        }
        // The attempt's one log line: the module writes none for it (PuffPAM's `conclude`).
        if let line = outcome.logLine(user: account.name.value, kind: kind) { HelperLog.write(line.priority, line.text) }
        let report = HelperReport(outcome, before: before)
        var released: SecureBytes?
        if case .success = outcome { released = releasedPassword(secret, store, account, user: account.name.value) }
        guard writeAnswer(report, counted: nil, released: released) else { return HelperExit.failure }
        return report.exitStatus
    }

    /// After a passcode success with `keyring = yes`: the keyring's copy of the system password
    /// opened with the passcode, for the caller to hand on as PAM_AUTHTOK. Never for a gesture.
    /// `nil` when nothing is kept, or on an error (logged: the login stands, nothing released).
    static func releasedPassword<S: StoreBackend>(_ passcode: borrowing SecureBytes, _ store: S, _ account: Account,
                                 user: String) -> SecureBytes? {
        let options = store.options
        guard options.keyring, !passcode.hasPrefix(GestureWire.prefix) else { return nil }
        if let refusal = options.keyringRefusal {
            HelperLog.write(LOG_WARNING, refusal)
            return nil
        }
        do {
            switch try store.releaseKeyring(passcode, for: account) {
            case .password(let password):
                // An empty one is no frame (and no password pam_unix accepts).
                guard password.count > 0 else { return nil }
                HelperLog.write(LOG_INFO, "user \(user): keyring: the system password is released to the caller")
                return password
            case .noCopy:
                HelperLog.write(LOG_INFO, "user \(user): keyring: no copy of the system password is kept yet; the next password login keeps one")
            case .stale:
                HelperLog.write(LOG_INFO, "user \(user): keyring: the copy was sealed to an earlier passcode; dropped")
            case .keyPairAdded:
                HelperLog.write(LOG_INFO, "user \(user): keyring: key pair made for this passcode; the next password login keeps a copy")
            case .changed:
                HelperLog.write(LOG_NOTICE, "user \(user): keyring: the passcode changed meanwhile; nothing released")
            }
        } catch {
            HelperLog.write(LOG_ERR, "user \(user): keyring: \(error); nothing released")
        }
        return nil
    }

    /// Writes an attempt's answer: the report, then the counted failure or the released
    /// password, whose bytes go out straight from wiped memory.
    static func writeAnswer(_ report: HelperReport, counted: CountedFailure?, released: consuming SecureBytes?) -> Bool {
        guard let password = released else { return write(HelperLoginAnswer.attemptAnswer(report, counted: counted)) }
        guard write(HelperLoginAnswer.attemptAnswer(report, counted: nil, releasedCount: password.count)) else { return false }
        return password.withBytes { buffer in (try? FileDescriptor.writeAll(1, buffer)) != nil }
    }

    /// Writes the report to standard output.
    static func write(_ report: HelperReport) -> Bool {
        write(report.encoded())
    }

    /// Writes `bytes` to standard output.
    static func write(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in (try? FileDescriptor.writeAll(1, buffer)) != nil }
    }
}
