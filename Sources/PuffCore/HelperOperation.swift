/// What a caller asks `puff-check` to do (its one argument), shared by the helper and its
/// one client (PuffPlatform's `HelperClient`). Each one's messages are in
/// PuffPlatform/HelperProtocol.swift.
public enum HelperOperation: String, CaseIterable, Equatable, Sendable {
    /// The state of the caller's own account, for a tool (`puff-enroll status`); nothing on
    /// standard input.
    case query
    /// One login of the caller's own account in one helper run: the state as one frame, then
    /// the secret (one attempt) or the end of input (no attempt, nothing counted).
    case login
    /// A new passcode after a proof; framed request.
    case enrollPasscode = "enroll-passcode"
    /// A new gesture and its picture after a proof; framed request.
    case enrollGesture = "enroll-gesture"
    /// The caller's own enrollment removed after a proof; framed request.
    case remove
    /// What a change would check, before the rest of it is asked for: the passcode type
    /// against the policy, then (`prove`) the proof, counted as a change's is. Nothing is
    /// changed. Framed request: `check` or `prove`; the passcode type, or `-`; with `prove`
    /// the proof.
    case precheck
    /// For a caller whose real uid is root only (the module in fleet mode, tpm mode, and su or
    /// sudo run by a user): `login` for a named user under the module's arguments, with the
    /// transaction's origin; the answer to the attempt also carries the failure it counted.
    case serviceLogin = "service-login"
    /// Root only: a failure `serviceLogin` counted taken back (the module's `authsucc` line).
    case serviceTakeBack = "service-take-back"

    /// Matched by bytes (ByteText.swift), not by Unicode canonical equivalence.
    public init?(rawValue: String) { self.init(bytesOf: rawValue) }

    /// Whether the operation serves a root caller for a named user.
    public var isService: Bool {
        switch self {
        case .serviceLogin, .serviceTakeBack: true
        case .query, .login, .enrollPasscode, .enrollGesture, .remove, .precheck: false
        }
    }

    /// Whether the request is framed and changes the store (an enrollment or a removal).
    public var isChange: Bool {
        switch self {
        case .query, .login, .serviceLogin, .serviceTakeBack, .precheck: false
        case .enrollPasscode, .enrollGesture, .remove: true
        }
    }
}

/// The helper's exit statuses. 0 and 1 come with an answer on standard output.
public enum HelperExit {
    /// Verified, stored, or (query) the state reported.
    public static let success: Int32 = 0
    /// Refused: a wrong or unverified secret, locked, passcode required, not enrolled.
    public static let refused: Int32 = 1
    /// Unknown operation or malformed input (a login without an attempt too); nothing counted.
    public static let usage: Int32 = 2
    /// Failed closed (store, configuration, setup); no report.
    public static let failure: Int32 = 3
    /// A change refused before any proof was checked: the new credential breaks the rules, or
    /// (remove) nothing is enrolled.
    public static let rules: Int32 = 4
}
