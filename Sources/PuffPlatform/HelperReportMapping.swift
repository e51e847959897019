import PuffCore

/// `HelperReport` as the encoding of `FilesStore`'s own state and outcome, both ways, in
/// this one place: `puff-check` encodes, `HelperClient` decodes. The wire text is
/// `HelperReport.encoded()`; what it does not carry (a not-enrolled reason, a damaged counter,
/// a rehash, a failure's detail) stays in the helper's log.
extension HelperReport {
    /// The reason a helper's `not-enrolled` report reads back as.
    public static let notEnrolledReason = "no Puff record"
    /// The detail a helper's `failure` reads back as (the helper logged the real one).
    public static let failureDetail = "see puff-check's log"

    /// The report of a query: the state before the prompt.
    public init(_ state: CredentialState) {
        self.init(outcome: state.isEnrolled ? .state : .notEnrolled, lock: state.lock, acceptance: state.acceptance,
                  failures: state.failures)
    }

    /// The report of an attempt that came to `outcome`, for a user whose state before it was
    /// `state`. `clearsFailures` is `false` for a success that takes back only its own attempt
    /// (the system password proving a change): the failures before it stand.
    public init(_ outcome: AttemptOutcome, before state: CredentialState, clearsFailures: Bool = true) {
        self.init(state)
        switch outcome {
        case .success:
            self.outcome = .success
            lock = .open
            if clearsFailures { failures = 0 }
        case .failure(let failures, let lock, _):
            self.outcome = .failure
            self.failures = failures
            self.lock = lock
        case .locked(let lock):
            self.outcome = .locked
            self.lock = lock
        case .passcodeRequired(let reason):
            // The reason travels in `accepts`; the type is the enrolled one as read before
            // the attempt (nothing reads it after an attempt).
            self.outcome = .passcodeRequired
            acceptance = .passcodeOnly(Self.passcodeType(of: state.acceptance), because: reason)
        case .notEnrolled:
            self.outcome = .notEnrolled
        }
    }

    /// A gesture sent as the proof for a change: only the passcode (`type`) proves who may
    /// change a credential. Not an attempt: nothing was counted.
    public static func passcodeRequiredForChange(_ state: CredentialState, type: PasscodeType) -> HelperReport {
        var report = HelperReport(state)
        report.outcome = .passcodeRequired
        report.acceptance = .passcodeOnly(type, because: nil)
        return report
    }

    /// The exit status that goes with the report of an attempt or a change.
    public var exitStatus: Int32 { outcome == .success ? HelperExit.success : HelperExit.refused }

    /// The state in the output of `puff-check query` that exited with `status`; a failed
    /// helper, a malformed report, or one that answers with an attempt's outcome throws.
    public static func state(status: Int32, output: [UInt8]?, helper path: String) throws(StoreError) -> CredentialState {
        guard status == HelperExit.success else { throw failed(status, path) }
        let report = try decode(output, helper: path)
        switch report.outcome {
        case .state:
            return CredentialState(notEnrolledReason: nil, lock: report.lock, acceptance: report.acceptance,
                                   failures: report.failures)
        case .notEnrolled:
            return .notEnrolled(notEnrolledReason)
        case .success, .failure, .locked, .passcodeRequired:
            throw .unsafe(path: path, reason: "the helper answered a query with an attempt's outcome")
        }
    }

    /// The outcome in the output of `puff-check verify` that exited with `status`: a failed
    /// helper, a malformed report, a query's state, or a status that disagrees with the report
    /// (a success report with a refusal status, or the reverse) throws.
    public static func outcome(status: Int32, output: [UInt8]?, helper path: String) throws(StoreError) -> AttemptOutcome {
        let report = try attemptReport(status: status, output: output, helper: path)
        switch report.outcome {
        case .success: return .success(rehashed: false)
        case .failure: return .failure(failures: report.failures, lock: report.lock, detail: failureDetail)
        case .locked: return .locked(report.lock)
        case .notEnrolled: return .notEnrolled
        case .passcodeRequired:
            guard case .passcodeOnly(_, let reason?) = report.acceptance else {
                throw .unsafe(path: path, reason: "the helper gave no reason for requiring the passcode")
            }
            return .passcodeRequired(reason)
        case .state:
            throw .unsafe(path: path, reason: "the helper answered an attempt with a query's state")
        }
    }

    /// The report of an attempt or a change (exit 0 or 1) after the same checks as
    /// `outcome(status:output:helper:)`, but a `passcode-required` needs no reason (a gesture
    /// sent as the proof for a change).
    public static func attemptReport(status: Int32, output: [UInt8]?, helper path: String) throws(StoreError) -> HelperReport {
        guard status == HelperExit.success || status == HelperExit.refused else { throw failed(status, path) }
        let report = try decode(output, helper: path)
        guard report.outcome != .state else {
            throw .unsafe(path: path, reason: "the helper answered an attempt with a query's state")
        }
        guard report.exitStatus == status else {
            throw .unsafe(path: path, reason: "the helper's status and report disagree")
        }
        return report
    }

    private static func decode(_ output: [UInt8]?, helper path: String) throws(StoreError) -> HelperReport {
        guard let output, let report = try? decode(output) else {
            throw .unsafe(path: path, reason: "the helper's report is malformed")
        }
        return report
    }

    /// A helper that exited with `status` (not 0 or 1): it failed closed and logged why.
    static func failed(_ status: Int32, _ path: String) -> StoreError {
        .unsafe(path: path, reason: "the helper failed (status \(status)); see its log")
    }

    private static func passcodeType(of acceptance: Acceptance) -> PasscodeType {
        switch acceptance {
        case .passcodeOrGesture(let type), .passcodeOnly(let type, _): type
        // A passcode enrolled between the state and the attempt: the common prompt's type.
        case .gestureOnly, .refused: PasscodeType.digits6
        }
    }
}

extension CountedFailure {
    /// The fields of a failure as `puff-check service-verify` sends it back and
    /// `service-take-back` receives it: the account's own name (which the counters are filed
    /// under, whatever spelling the application gave), the counter before and after, and where
    /// it was counted.
    public var serviceFields: [[UInt8]] {
        [Array(user.value.utf8), before.encoded(), after.encoded(), Array((countedInDirectory ? "directory" : "local").utf8)]
    }

    /// The failure in `fields` (`serviceFields`); `nil` when they do not parse.
    public init?(serviceFields fields: some Collection<[UInt8]>) {
        guard fields.count == 4 else { return nil }
        let values = Array(fields)
        guard let name = String(validating: values[0], as: UTF8.self).flatMap(UserName.init),
              let before = try? Tally.decode(values[1]), let after = try? Tally.decode(values[2]) else { return nil }
        let place = String(decoding: values[3], as: UTF8.self)
        guard place.sameBytes(as: "directory") || place.sameBytes(as: "local") else { return nil }
        self.init(user: name, before: before, after: after, countedInDirectory: place.sameBytes(as: "directory"))
    }
}
