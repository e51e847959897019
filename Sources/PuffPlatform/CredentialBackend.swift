import Glibc
import PuffCore

/// Where a login's store work runs: `LocalBackend` in this process, as root, or
/// `HelperBackend` through the setuid helper `puff-check` for a caller without root. Used
/// through generic parameters or concrete types, never `any` (Embedded Swift has no
/// existentials); the module holds either backend in one enum that conforms by forwarding
/// (PuffPAM/Backend.swift), so its `authenticate` is compiled once.
public protocol CredentialBackend {
    /// What the store says before the prompt, read when the backend was made.
    var state: CredentialState { get }
    /// The uid the attempts are for, for audit records; `nil` when no enrolled account was
    /// resolved.
    var auditUID: UInt32? { get }
    /// One attempt with `secret`. `counted` is set when a failure was counted that the module's
    /// `authsucc` line can take back (`Authenticator.takeBack(_:)` in this process, or
    /// `HelperClient.takeBack(_:)` for a service call); a caller's own helper keeps it.
    func attempt(_ secret: borrowing SecureBytes,
                 counted: inout Authenticator.CountedFailure?) throws(StoreError) -> Authenticator.Outcome
}

/// The state before the prompt: whether the user is enrolled, the lock, what the prompt
/// offers. `Authenticator.Subject.state` makes it; `HelperReport` carries it.
public struct CredentialState: Equatable, Sendable {
    /// Why the user counts as not enrolled, or `nil` when enrolled.
    public var notEnrolledReason: String?
    /// The lock state.
    public var lock: LockStatus
    /// What the prompt offers.
    public var acceptance: Acceptance
    /// Failures in a row.
    public var failures: UInt32
    /// The counter file does not parse (it reads as locked until reset). Not in a helper's
    /// report: the helper logs it itself.
    public var counterDamaged: Bool

    /// Creates a state.
    public init(notEnrolledReason: String?, lock: LockStatus, acceptance: Acceptance, failures: UInt32,
                counterDamaged: Bool = false) {
        self.notEnrolledReason = notEnrolledReason
        self.lock = lock
        self.acceptance = acceptance
        self.failures = failures
        self.counterDamaged = counterDamaged
    }

    /// A user without a record (or account): open, the common prompt, no failures.
    public static func notEnrolled(_ reason: String) -> CredentialState {
        CredentialState(notEnrolledReason: reason, lock: .open, acceptance: .unenrolled, failures: 0)
    }

    /// Whether the user has a Puff record.
    public var isEnrolled: Bool { notEnrolledReason == nil }

    /// Whether a Puff passcode is enrolled (then it is the proof for a change).
    public var hasPasscode: Bool {
        guard isEnrolled else { return false }
        switch acceptance {
        case .passcodeOrGesture, .passcodeOnly: return true
        case .gestureOnly, .refused: return false
        }
    }
}

extension Authenticator.Subject {
    /// What the store says before the prompt.
    public var state: CredentialState {
        switch self {
        case .notEnrolled(let reason):
            .notEnrolled(reason)
        case .enrolled(let enrolled):
            CredentialState(notEnrolledReason: nil, lock: enrolled.lock, acceptance: enrolled.acceptance,
                            failures: enrolled.tally.failures, counterDamaged: enrolled.tally.isDamaged)
        }
    }
}

/// The files store's work in this process (root): an `Authenticator` and the subject it
/// resolved. Files only (`Authenticator.filesSubject`, `filesAttempt`): the module hands fleet
/// mode to the helper, so this backend never reaches the directory client.
/// A class: the two are large, and a reference is what a backend passes around.
public final class LocalBackend: CredentialBackend {
    /// The authenticator, on this login's `StoreSession`.
    public let authenticator: Authenticator
    /// The user as read before the prompt.
    public let subject: Authenticator.Subject

    /// Resolves `userName` (raw, as the application gave it) in the files store.
    public init(_ authenticator: Authenticator, userName: String) throws(StoreError) {
        self.authenticator = authenticator
        self.subject = try authenticator.subject(for: userName)
    }

    public var state: CredentialState { subject.state }

    public var auditUID: UInt32? {
        guard case .enrolled(let enrolled) = subject else { return nil }
        return enrolled.account.uid
    }

    public func attempt(_ secret: borrowing SecureBytes,
                        counted: inout Authenticator.CountedFailure?) throws(StoreError) -> Authenticator.Outcome {
        try authenticator.attempt(secret, for: subject, counted: &counted)
    }
}

/// The store work in the setuid helper: for the caller's own account (its real uid), or, for
/// a root caller in fleet mode, the client's `service` user.
public final class HelperBackend: CredentialBackend {
    /// The client of `puff-check`.
    public let client: HelperClient
    public let state: CredentialState
    /// The login's one helper run, kept for the attempt.
    private let login: HelperClient.Login
    /// The system password the helper released after a passcode success (`keyring = yes`).
    private var released: SecureBytes?

    /// Starts the login's one helper run: the state before the prompt now, the helper kept
    /// running for the attempt.
    public init(_ client: HelperClient) throws(StoreError) {
        self.client = client
        login = try client.login()
        state = login.state
    }

    /// The caller's own uid (the helper serves no other account, and may find it enrolled by
    /// the time of the attempt); for a service call, the enrolled user's, looked up only when
    /// an audit record is written.
    public var auditUID: UInt32? {
        guard let service = client.service else { return getuid() }
        return state.isEnrolled ? ((try? Account.lookup(service.user)) ?? nil)?.uid : nil
    }

    /// One attempt; `counted` is set for a service caller only (the helper's own caller has
    /// no `authsucc` line to take a failure back).
    public func attempt(_ secret: borrowing SecureBytes,
                        counted: inout Authenticator.CountedFailure?) throws(StoreError) -> Authenticator.Outcome {
        try login.verify(secret, counted: &counted, released: &released)
    }

    /// The system password the helper released, taken (wiped when the caller drops it).
    public func takeReleasedPassword() -> SecureBytes? { released.take() }
}
