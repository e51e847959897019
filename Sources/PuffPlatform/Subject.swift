import PuffCore

/// Who is asking, as far as a store can tell before any secret is read.
public enum Subject: Sendable {
    /// No usable account or no record: the attempt runs against a dummy hash and fails.
    case notEnrolled(reason: String)
    /// An enrolled user and what the store says before the prompt.
    case enrolled(Enrolled)

    /// An enrolled user as read before the prompt (the attempt reads record and counter again
    /// under the lock).
    public struct Enrolled: Sendable {
        public var account: Account
        public var record: UserRecord
        /// The counter as read (in fleet mode, the fleet's view of it).
        public var tally: Tally
        public var lock: LockStatus
        public var acceptance: Acceptance

        package init(account: Account, record: UserRecord, tally: Tally, options: PuffOptions, bootID: String?, now: Int64) {
            (self.account, self.record, self.tally) = (account, record, tally)
            lock = options.lockout.status(of: tally, now: now, isRoot: account.uid == 0)
            acceptance = options.quickFactor.acceptance(of: record, tally, bootID: bootID, now: now)
        }
    }

    /// Which factor the prompt offers (users without a record see the common prompt).
    public var acceptance: Acceptance {
        switch self {
        case .notEnrolled: .unenrolled
        case .enrolled(let enrolled): enrolled.acceptance
        }
    }

    /// What the store says before the prompt, as the helper reports it.
    public var state: CredentialState {
        switch self {
        case .notEnrolled(let reason):
            .notEnrolled(reason)
        case .enrolled(let enrolled):
            CredentialState(notEnrolledReason: nil, lock: enrolled.lock, acceptance: enrolled.acceptance,
                            failures: enrolled.tally.failures, counterDamaged: enrolled.tally.isDamaged)
        }
    }

    /// The enrolled account, for audit records.
    public var account: Account? {
        guard case .enrolled(let enrolled) = self else { return nil }
        return enrolled.account
    }
}
