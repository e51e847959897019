import CPAM
import Glibc
import PuffCore
import PuffPlatform

/// The helper's exit statuses.
enum HelperExit {
    static let success: Int32 = 0
    static let refused: Int32 = 1
    static let usage: Int32 = 2
    static let failure: Int32 = 3
    /// An enrollment whose new credential breaks the rules (the CLI checks them first).
    static let rules: Int32 = 4
}

/// What the caller asks for (`argv[1]`).
enum HelperOperation: String {
    case query
    case verify
    case enrollPasscode = "enroll-passcode"
    case enrollGesture = "enroll-gesture"
    case remove
}

/// syslog under the helper's own name.
enum HelperLog {
    static func write(_ priority: Int32, _ message: String) {
        message.withCString { text in puff_syslog_text(priority, text) }
    }
}

/// One run of the helper for the caller's real uid.
enum Helper {
    /// Longest secret read from standard input (the module's reply limit).
    static let maximumSecretLength = 64 * 1024

    static func run(_ operation: HelperOperation) -> Int32 {
        let uid = getuid()
        do {
            try Sodium.initialize()
            // Only the file and the defaults: an argument could lower the lockout.
            let options = try Configuration.load(arguments: []).options
            guard let account = try Account.lookup(uid: uid) else {
                HelperLog.write(LOG_NOTICE, "uid \(uid) has no account")
                return HelperExit.failure
            }
            let authenticator = Authenticator(options: options)
            let subject = try authenticator.subject(for: account.name.value)
            switch operation {
            case .query:
                return write(state(of: subject)) ? HelperExit.success : HelperExit.failure
            case .verify:
                return try verify(authenticator, subject, account)
            case .enrollPasscode, .enrollGesture:
                return try Enrollment.run(operation, authenticator, subject, account)
            case .remove:
                return try Enrollment.remove(authenticator, subject, account)
            }
        } catch {
            HelperLog.write(LOG_ERR, "uid \(uid): \(error); failing closed")
            return HelperExit.failure
        }
    }

    /// The state before the prompt.
    static func state(of subject: Authenticator.Subject) -> HelperReport {
        switch subject {
        case .notEnrolled:
            HelperReport(outcome: .notEnrolled, lock: .open, acceptance: subject.acceptance, failures: 0)
        case .enrolled(let enrolled):
            HelperReport(outcome: .state, lock: enrolled.lock, acceptance: enrolled.acceptance,
                         failures: enrolled.tally.failures)
        }
    }

    private static func verify(_ authenticator: Authenticator, _ subject: Authenticator.Subject,
                               _ account: Account) throws(StoreError) -> Int32 {
        guard let secret = try readSecret() else {
            HelperLog.write(LOG_NOTICE, "user \(account.name): empty or oversized input; not counted")
            return HelperExit.usage
        }
        let kind = secret.hasPrefix(GestureWire.prefix) ? "gesture" : "passcode"
        let before = state(of: subject)
        var counted: Authenticator.CountedFailure?
        let outcome = try authenticator.attempt(secret, for: subject, counted: &counted)
        // The system password typed at Puff's prompt (a screen locker whose stack falls back
        // to the password) is no Puff failure: the helper checks it itself, once for this
        // counted attempt, and takes the attempt back (as the module's `authsucc` line does
        // as root). Every other wrong answer stays counted, so this is no extra guess.
        if case .failure = outcome, let counted, kind == "passcode",
           SystemPassword.verify(user: account.name.value, proof: secret), try authenticator.takeBack(counted) {
            HelperLog.write(LOG_INFO, "user \(account.name): the system password was typed at Puff's prompt; "
                            + "Puff's failure taken back")
            var result = state(of: try authenticator.subject(for: account.name.value))
            result.outcome = .failure
            return write(result) ? HelperExit.refused : HelperExit.failure
        }
        var result = before
        switch outcome {
        case .success:
            HelperLog.write(LOG_INFO, "user \(account.name): \(kind) accepted")
            result.outcome = .success
            result.lock = .open
            result.failures = 0
        case .failure(let failures, let lock, let detail):
            HelperLog.write(LOG_NOTICE, "user \(account.name): authentication failure (\(failures) in a row)"
                            + (detail.isEmpty ? "" : "; " + detail))
            result.outcome = .failure
            result.failures = failures
            result.lock = lock
        case .locked(let lock):
            result.outcome = .locked
            result.lock = lock
        case .passcodeRequired:
            HelperLog.write(LOG_NOTICE, "user \(account.name): gesture refused unread, passcode required")
            result.outcome = .passcodeRequired
        case .notEnrolled:
            result.outcome = .notEnrolled
        }
        guard write(result) else { return HelperExit.failure }
        return result.outcome == .success ? HelperExit.success : HelperExit.refused
    }

    /// Writes the report to standard output.
    static func write(_ report: HelperReport) -> Bool {
        report.encoded().withUnsafeBytes { buffer -> Bool in
            var done = 0
            while done < buffer.count, let base = buffer.baseAddress {
                let wrote = Glibc.write(1, base + done, buffer.count - done)
                if wrote < 0 && errno == EINTR { continue }
                guard wrote > 0 else { return false }
                done += wrote
            }
            return true
        }
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
