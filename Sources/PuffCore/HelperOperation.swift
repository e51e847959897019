/// What a caller asks `puff-check` to do (its one argument), shared by the helper and its
/// one client (PuffPlatform's `HelperClient`).
public enum HelperOperation: String, Equatable, Sendable {
    /// The state before the prompt; nothing on standard input.
    case query
    /// One attempt; the secret is standard input.
    case verify
    /// A new passcode after a proof; framed request.
    case enrollPasscode = "enroll-passcode"
    /// A new gesture and its picture after a proof; framed request.
    case enrollGesture = "enroll-gesture"
    /// The caller's own enrollment removed after a proof; framed request.
    case remove

    /// Whether the request is framed and changes the store (an enrollment or a removal).
    public var isChange: Bool {
        switch self {
        case .query, .verify: false
        case .enrollPasscode, .enrollGesture, .remove: true
        }
    }
}

/// The helper's exit statuses. 0 and 1 come with a `HelperReport` on standard output.
public enum HelperExit {
    /// Verified, stored, or (query) the state reported.
    public static let success: Int32 = 0
    /// Refused: a wrong or unverified secret, locked, passcode required, not enrolled.
    public static let refused: Int32 = 1
    /// Unknown operation or malformed input; nothing counted.
    public static let usage: Int32 = 2
    /// Failed closed (store, configuration, setup); no report.
    public static let failure: Int32 = 3
    /// A change refused before any proof was checked: the new credential breaks the rules, or
    /// (remove) nothing is enrolled.
    public static let rules: Int32 = 4
}
