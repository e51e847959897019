import PuffCore

/// A store of records and counters: the files under the store and state directories
/// (`FilesStore`) or the directory in fleet mode (`FleetStore`, PuffFleet). Each owns its
/// counter: the subject before the prompt, the attempt, the take-back, the enrollment writes,
/// status and reset all go through it, so no caller asks which store it is.
/// Used as a generic parameter: Embedded Swift has no existentials.
public protocol StoreBackend {
    var options: PuffOptions { get }
    var session: StoreSession { get }
    /// Discreet refusals: every refusal costs the same work (`AttemptEngine.evenRefusals`).
    var evenRefusals: Bool { get set }

    /// The subject of `userName` (raw, as the application gave it), `FilesStore.resolve`d.
    func subject(for userName: String) throws(StoreError) -> Subject
    /// The subject of an account already looked up.
    func subject(of account: Account) throws(StoreError) -> Subject
    /// One attempt; `counted` is the failure it counted, for the `authsucc` line.
    func attempt(_ secret: borrowing SecureBytes, for subject: Subject, asProofForChange: Bool,
                 counted: inout CountedFailure?) throws(StoreError) -> AttemptOutcome
    /// Undoes a counted failure after the password module accepted the same text; `false`
    /// when nothing was left to take back.
    func takeBack(_ failure: CountedFailure) throws(StoreError) -> Bool
    func storePasscode(_ passcode: borrowing SecureBytes, type: PasscodeType, for account: Account) throws(StoreError)
    func storeGesture(_ template: GestureTemplate, picture: [UInt8], for account: Account) throws(StoreError)
    /// The administrator's lock: the passcode is required until its next success.
    func requirePasscode(of name: UserName) throws(StoreError)
    /// `false` when nothing was enrolled.
    func removeEnrollment(of name: UserName) throws(StoreError) -> Bool
    /// The administrator's reset of the lockout; what was cleared, in words, or `nil` when the
    /// user has nothing to reset.
    func reset(of name: UserName) throws(StoreError) -> String?
    /// The record (if any) and the tally logins go by, for `puff-enroll status`.
    func status(of account: Account) throws(StoreError) -> StoreStatus
    /// The path of the key records are peppered and sealed with (the host key, or the fleet key).
    var recordKeyPath: String { get }
    /// Every user with a record, or `nil` when the store cannot list them (the directory).
    func enrolledNames() throws(StoreError) -> [UserName]?
    /// A proof that is not a Puff secret (the system password before a first enrollment), run
    /// as a counted attempt; a success takes back only its own attempt.
    func countedAttempt(for account: Account, _ check: () throws(StoreError) -> Bool) throws(StoreError) -> AttemptOutcome
    /// The system password, just proven, sealed to the passcode's key pair (`keyring = yes`).
    func captureKeyring(_ password: borrowing SecureBytes, for account: Account) throws(StoreError) -> KeyringCapture
    /// After `passcode` verified: the system password it opens, if a copy is kept.
    func releaseKeyring(_ passcode: borrowing SecureBytes, for account: Account) throws(StoreError) -> KeyringRelease
}

/// What `puff-enroll status` shows of one user.
public struct StoreStatus: Sendable {
    public var record: UserRecord?
    /// The counter logins go by (in fleet mode, the fleet's view of it).
    public var tally: Tally
    /// When the keyring's copy of the system password was captured, if one is kept.
    public var keyringSince: Int64?
    /// Fleet mode only.
    public var fleet: Fleet?

    /// What fleet mode adds.
    public struct Fleet: Sendable {
        /// The host that counted the latest failure.
        public var lastFailureHost: String?
        /// Why the directory is out of reach, when the status comes from this host's cached copy.
        public var unreachable: String?
        /// This host's cached copy for offline logins: its age, whether it is within
        /// `ldap_cache_ttl`, and the offline failures not yet pushed.
        public var cache: (age: Int64, fresh: Bool, offlineFailures: UInt32)?
        /// Whether `ldap_cache_ttl` is set.
        public var cacheEnabled: Bool

        public init(lastFailureHost: String?, unreachable: String?, cache: (age: Int64, fresh: Bool, offlineFailures: UInt32)?,
                    cacheEnabled: Bool) {
            (self.lastFailureHost, self.unreachable, self.cache, self.cacheEnabled) = (lastFailureHost, unreachable, cache, cacheEnabled)
        }
    }

    public init(record: UserRecord?, tally: Tally, keyringSince: Int64? = nil, fleet: Fleet? = nil) {
        (self.record, self.tally, self.keyringSince, self.fleet) = (record, tally, keyringSince, fleet)
    }
}

extension StoreBackend {
    /// A login's attempt (not a proof for a change).
    public func attempt(_ secret: borrowing SecureBytes, for subject: Subject,
                        counted: inout CountedFailure?) throws(StoreError) -> AttemptOutcome {
        try attempt(secret, for: subject, asProofForChange: false, counted: &counted)
    }

    /// `attempt(_:for:asProofForChange:counted:)` without the counted failure.
    public func attempt(_ secret: borrowing SecureBytes, for subject: Subject,
                        asProofForChange: Bool = false) throws(StoreError) -> AttemptOutcome {
        var counted: CountedFailure?
        return try attempt(secret, for: subject, asProofForChange: asProofForChange, counted: &counted)
    }
}
