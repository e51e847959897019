/// What `puff-check`, the setuid helper, tells its caller: never a secret or a template, only
/// the state the module needs to prompt and to report. Text in the store's `key value` shape.
/// It is the encoding of a store's state and outcome; the mapping both ways, and
/// every other message of the helper, are in PuffPlatform's HelperProtocol.swift.
public struct HelperReport: Equatable, Sendable {
    /// What the helper did.
    public enum Outcome: String, CaseIterable, Equatable, Sendable {
        /// `query`: the state before the prompt.
        case state
        /// `verify`: the attempt verified.
        case success
        /// `verify`: wrong secret, counted.
        case failure
        /// `verify`: refused unread because the user is locked.
        case locked
        /// `verify`: a gesture refused unread because only the passcode is accepted now.
        case passcodeRequired = "passcode-required"
        /// The caller has no Puff record (the dummy verification ran for `verify`).
        case notEnrolled = "not-enrolled"

        /// Matched by bytes (ByteText.swift), not by Unicode canonical equivalence.
        public init?(rawValue: String) { self.init(bytesOf: rawValue) }
    }

    /// What happened.
    public var outcome: Outcome
    /// The lock state after the operation.
    public var lock: LockStatus
    /// What the next (or this) attempt accepts.
    public var acceptance: Acceptance
    /// Failures in a row after the operation.
    public var failures: UInt32

    /// Creates a report.
    public init(outcome: Outcome, lock: LockStatus, acceptance: Acceptance, failures: UInt32) {
        self.outcome = outcome
        self.lock = lock
        self.acceptance = acceptance
        self.failures = failures
    }

    /// Largest report accepted when reading.
    public static let maximumSize = 512

    /// The text sent on the helper's standard output.
    public func encoded() -> [UInt8] {
        let lockText: String
        switch lock {
        case .open: lockText = "open"
        case .locked(let seconds): lockText = "seconds \(seconds)"
        case .lockedUntilReset: lockText = "reset"
        }
        return Array("""
        puff-check 1
        outcome \(outcome.rawValue)
        lock \(lockText)
        accepts \(Self.encode(acceptance))
        failures \(failures)

        """.utf8)
    }

    /// Parses `encoded()` output strictly; anything else is a helper failure (fail closed).
    public static func decode(_ bytes: some Collection<UInt8>) throws(RecordFormatError) -> HelperReport {
        let fields = try KeyValueText.parse(bytes, header: "puff-check 1", maximumSize: maximumSize,
                                            keys: ["outcome", "lock", "accepts", "failures"], optional: [])
        guard let outcomeText = fields["outcome"], let outcome = Outcome(rawValue: outcomeText),
              let lockText = fields["lock"], let lock = decodeLock(lockText),
              let acceptsText = fields["accepts"], let acceptance = decodeAcceptance(acceptsText),
              let failuresText = fields["failures"], let failures = UInt32(canonicalDecimal: failuresText) else {
            throw .badValue
        }
        return HelperReport(outcome: outcome, lock: lock, acceptance: acceptance, failures: failures)
    }

    private static func decodeLock(_ text: String) -> LockStatus? {
        if text.sameBytes(as: "open") { return .open }
        if text.sameBytes(as: "reset") { return .lockedUntilReset }
        let words = text.splitBytes(at: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard words.count == 2, words[0].sameBytes(as: "seconds"), let seconds = Int64(canonicalDecimal: words[1]), seconds > 0 else { return nil }
        return .locked(secondsLeft: seconds)
    }

    private static func encode(_ reason: PasscodeReason?) -> String {
        switch reason {
        case .none: "-"
        case .administrator: "administrator"
        case .gestureFailures(let count): "gesture-failures:\(count)"
        case .restarted: "restarted"
        case .unused(let interval): "unused:\(interval)"
        }
    }

    private static func decodeReason(_ text: Substring) -> PasscodeReason?? {
        if text.sameBytes(as: "-") { return .some(nil) }
        if text.sameBytes(as: "administrator") { return .administrator }
        if text.sameBytes(as: "restarted") { return .restarted }
        let pieces = text.splitBytes(at: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        guard pieces.count == 2 else { return nil }
        if pieces[0].sameBytes(as: "gesture-failures"), let count = UInt32(canonicalDecimal: pieces[1]) {
            return .gestureFailures(count)
        }
        if pieces[0].sameBytes(as: "unused"), let interval = Int64(canonicalDecimal: pieces[1]), interval > 0 {
            return .unused(interval: interval)
        }
        return nil
    }

    private static func encode(_ acceptance: Acceptance) -> String {
        switch acceptance {
        case .passcodeOrGesture(let type): "both \(type.rawValue) -"
        case .passcodeOnly(let type, let reason): "passcode \(type.rawValue) \(encode(reason))"
        case .gestureOnly: "gesture - -"
        case .refused(let reason): "refused - \(encode(reason))"
        }
    }

    private static func decodeAcceptance(_ text: String) -> Acceptance? {
        let words = text.splitBytes(at: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard words.count == 3, let reason = decodeReason(words[2]) else { return nil }
        let kind = words[0], noType = words[1].sameBytes(as: "-")
        let type = PasscodeType(rawValue: String(words[1]))
        if kind.sameBytes(as: "both"), let type, reason == nil { return .passcodeOrGesture(type) }
        if kind.sameBytes(as: "passcode"), let type { return .passcodeOnly(type, because: reason) }
        if kind.sameBytes(as: "gesture"), noType, reason == nil { return .gestureOnly }
        if kind.sameBytes(as: "refused"), noType { return .refused(reason) }
        return nil
    }
}
