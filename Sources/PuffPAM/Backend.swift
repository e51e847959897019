import Glibc
import PuffCore
import PuffPlatform

/// Where the store work happens: in this process when the module runs as root, otherwise in
/// the setuid helper, which only ever checks the account of its caller's real uid.
enum Backend {
    case direct(Authenticator, Authenticator.Subject)
    case helper(HelperClient)

    /// What is known before the prompt.
    struct Preflight {
        /// Why the user counts as not enrolled, or `nil` when enrolled.
        var notEnrolledReason: String?
        /// The lock state.
        var lock: LockStatus
        /// What the prompt offers.
        var acceptance: Acceptance
        /// The counter file does not parse (it reads as locked until reset).
        var counterDamaged = false
    }

    /// The backend for `userName` and what it knows before the prompt.
    static func prepare(_ options: PuffOptions, userName: String, unprivileged: Bool) throws(StoreError)
        -> (Backend, Preflight) {
        guard unprivileged else {
            let authenticator = Authenticator(options: options)
            let subject = try authenticator.subject(for: userName)
            switch subject {
            case .notEnrolled(let reason):
                return (.direct(authenticator, subject), Preflight(notEnrolledReason: reason, lock: .open,
                                                                   acceptance: subject.acceptance))
            case .enrolled(let enrolled):
                return (.direct(authenticator, subject),
                        Preflight(notEnrolledReason: nil, lock: enrolled.lock, acceptance: enrolled.acceptance,
                                  counterDamaged: enrolled.tally.isDamaged))
            }
        }
        let client = HelperClient(path: options.helperPath)
        let report = try client.query()
        switch report.outcome {
        case .notEnrolled:
            return (.helper(client), Preflight(notEnrolledReason: "no Puff record", lock: .open, acceptance: .unenrolled))
        case .state:
            return (.helper(client), Preflight(notEnrolledReason: nil, lock: report.lock, acceptance: report.acceptance))
        case .success, .failure, .locked, .passcodeRequired:
            throw .unsafe(path: options.helperPath, reason: "the helper answered a query with an attempt's outcome")
        }
    }

    /// The uid the attempts are for, for audit records: the enrolled account's, or the
    /// caller's own when the helper serves it; `nil` when not enrolled.
    var auditUID: UInt32? {
        switch self {
        case .direct(_, .enrolled(let enrolled)): enrolled.account.uid
        case .direct(_, .notEnrolled): nil
        case .helper: getuid()
        }
    }

    /// The work of a wrong passcode's verification, for an attempt refused unread whose
    /// time must not tell (a discreet service); errors change nothing.
    func runDummyVerification(_ secret: borrowing SecureBytes) {
        switch self {
        case .direct(let authenticator, _): try? authenticator.runDummyVerification(secret)
        case .helper: break
        }
    }

    /// One attempt.
    /// `counted` is set when this process counted a failure it could take back (root only:
    /// the helper keeps its counting to itself).
    func attempt(_ secret: borrowing SecureBytes,
                 counted: inout Authenticator.CountedFailure?) throws(StoreError) -> Authenticator.Outcome {
        counted = nil
        switch self {
        case .direct(let authenticator, let subject):
            return try authenticator.attempt(secret, for: subject, counted: &counted)
        case .helper(let client):
            let report = try client.verify(secret)
            switch report.outcome {
            case .success: return .success(rehashed: false)
            case .failure: return .failure(failures: report.failures, lock: report.lock, detail: "see puff-check's log")
            case .locked: return .locked(report.lock)
            case .notEnrolled: return .notEnrolled
            case .passcodeRequired:
                guard case .passcodeOnly(_, let reason?) = report.acceptance else {
                    throw .unsafe(path: client.path, reason: "the helper gave no reason for requiring the passcode")
                }
                return .passcodeRequired(reason)
            case .state:
                throw .unsafe(path: client.path, reason: "the helper answered an attempt with a query's state")
            }
        }
    }
}
