import Glibc
import PuffCore

extension AttemptOutcome {
    /// The log line of this outcome for `user` (already escaped) after a reply of `kind`
    /// ("passcode" or "gesture"): the one wording the module and the helper write. `nil` for the
    /// outcomes each writer words with its own context (locked, not enrolled).
    public func logLine(user: String, kind: String) -> (priority: Int32, text: String)? {
        switch self {
        case .success(let rehashed):
            (LOG_INFO, "user \(user): \(kind) accepted"
                + (rehashed ? (kind == "gesture" ? "; template learned from it" : "; hash upgraded to the current cost") : ""))
        case .failure(let failures, _, let detail):
            (LOG_NOTICE, "user \(user): authentication failure (\(failures) in a row)" + (detail.isEmpty ? "" : "; " + detail))
        case .passcodeRequired(let reason):
            (LOG_NOTICE, "user \(user): gesture refused unread, passcode required: \(reason.text)")
        case .locked, .notEnrolled:
            nil
        }
    }
}

extension CountedFailure {
    /// The log line of a failure taken back because the system password was typed at Puff's
    /// prompt, for `user` (already escaped): the module's `authsucc` line and the helper's.
    public static func takenBackLine(user: String) -> String {
        "user \(user): the system password was typed at Puff's prompt; Puff's failure taken back"
    }
}
