/// Why only the passcode is accepted although a gesture is enrolled.
public enum PasscodeReason: Equatable, Sendable {
    /// An administrator ran `puff-enroll lock`.
    case administrator
    /// The gesture failed this many times in a row.
    case gestureFailures(UInt32)
    /// The kernel's boot id differs from the one at the latest passcode success.
    case restarted
    /// The passcode was last used longer ago than the interval (in seconds).
    case unused(interval: Int64)

    /// The reason in words, for the user and the log (the contract's
    /// `Puff: passcode required: <this>.`).
    public var text: String {
        switch self {
        case .administrator: "an administrator asked for the passcode"
        case .gestureFailures(let count): "the gesture failed \(count) time\(count == 1 ? "" : "s") in a row"
        case .restarted: "the computer restarted since the passcode was last used"
        case .unused(let interval): "the passcode was last used more than \(DurationText.words(interval)) ago"
        }
    }
}

/// When the gesture (the quick factor) is trusted, after Apple's Touch ID rules: the passcode
/// is required after a restart, after a time without it, after repeated gesture failures, and
/// when an administrator asks. A passcode success clears all four.
public struct QuickFactorPolicy: Equatable, Sendable {
    /// Gesture failures in a row after which the passcode is required; 0 turns the rule off.
    public var gestureTries: UInt32 = 5
    /// Seconds after the latest passcode success after which the passcode is required;
    /// 0 turns the rule off.
    public var passcodeInterval: Int64 = 48 * 3600
    /// Require the passcode once after every restart.
    public var passcodeAfterReboot = true

    /// The default policy.
    public init() {}

    /// Why the passcode is required now, or `nil` when the gesture is trusted. `bootID` is the
    /// current boot id, `nil` when it cannot be read (then a restart is assumed).
    public func passcodeReason(_ tally: Tally, bootID: String?, now: Int64) -> PasscodeReason? {
        if tally.adminLock { return .administrator }
        if gestureTries > 0, tally.gestureFailures >= gestureTries { return .gestureFailures(tally.gestureFailures) }
        if passcodeAfterReboot, bootID == nil || !bootID.sameBytes(as: tally.passcodeBoot) { return .restarted }
        if passcodeInterval > 0 {
            // A clock set back before the last success counts as "too long ago" as well.
            if tally.passcodeAt == 0 || now < tally.passcodeAt || now - tally.passcodeAt > passcodeInterval {
                return .unused(interval: passcodeInterval)
            }
        }
        return nil
    }

    /// What a user with `record` may answer with now.
    public func acceptance(of record: UserRecord, _ tally: Tally, bootID: String?, now: Int64) -> Acceptance {
        switch (record.passcode, record.gesture) {
        case (.some(let passcode), .some):
            if let reason = passcodeReason(tally, bootID: bootID, now: now) {
                return .passcodeOnly(passcode.type, because: reason)
            }
            return .passcodeOrGesture(passcode.type)
        case (.some(let passcode), .none):
            return .passcodeOnly(passcode.type, because: nil)
        case (.none, .some):
            // Nothing to fall back to: the gesture stays usable under the ordinary lockout,
            // except after an administrator's lock, which only `puff-enroll reset` lifts.
            return tally.adminLock ? .refused(.administrator) : .gestureOnly
        case (.none, .none):
            return .refused(nil)
        }
    }
}

/// Which factor the module accepts in one authentication; it decides the prompt (the
/// contract in docs/dev/prompt-contract.md).
public enum Acceptance: Equatable, Sendable {
    /// Either factor.
    case passcodeOrGesture(PasscodeType)
    /// Only the passcode; `because` is `nil` when no gesture is enrolled.
    case passcodeOnly(PasscodeType, because: PasscodeReason?)
    /// Only the gesture (no passcode enrolled).
    case gestureOnly
    /// Nothing can be accepted (a gesture-only user under an administrator's lock, or an
    /// empty record).
    case refused(PasscodeReason?)

    /// What a user without a record sees: the prompt of a user with a default (6-digit)
    /// passcode and no gesture, so the prompt does not tell who is enrolled.
    public static let unenrolled = Acceptance.passcodeOnly(.digits6, because: nil)

    /// Whether a serialized gesture may be verified now.
    public var acceptsGesture: Bool {
        switch self {
        case .passcodeOrGesture, .gestureOnly: true
        case .passcodeOnly, .refused: false
        }
    }
}

/// Human wording of durations.
public enum DurationText {
    /// `90` → "90 seconds", `172800` → "48 hours", `604800` → "7 days".
    public static func words(_ seconds: Int64) -> String {
        func unit(_ count: Int64, _ name: String) -> String { "\(count) \(name)\(count == 1 ? "" : "s")" }
        if seconds < 120 { return unit(seconds, "second") }
        if seconds < 2 * 3600 { return unit(seconds / 60, "minute") }
        if seconds <= 72 * 3600 { return unit(seconds / 3600, "hour") }
        return unit(seconds / 86400, "day")
    }
}
